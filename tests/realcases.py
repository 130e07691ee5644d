"""Shared test helpers (imported, not a conftest, so other suites can keep theirs): real corpus cases from fixtures/real, a combined multi-failure run, the CLI in-process."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.model import Report

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"


def case(name: str) -> Path:
    """The input/ directory of a real corpus case, by its number prefix ("004") or full name."""
    hits = sorted(REAL.glob(f"{name}*/input"))
    assert hits, f"no fixture case {name}"
    return hits[0]


def report_of(name: str, **kw: object) -> Report:
    return analyze(Settings(paths=[str(case(name))], **kw))  # type: ignore[arg-type]


def copy_case(name: str, dest: Path) -> Path:
    shutil.copytree(case(name), dest)
    for p in dest.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    dest.chmod(0o755)
    return dest


@pytest.fixture(scope="session")
def combined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every real case as one run directory (one subdirectory per case): 19 findings, 12 of them errors."""
    root = tmp_path_factory.mktemp("combined") / "run"
    root.mkdir()
    for d in sorted(REAL.iterdir()):
        copy_case(d.name, root / d.name)
    return root


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Run `triage ARGS...` in-process through the real entry point; returns exit code and output."""
    from triage.cli import main

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        for k in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
            monkeypatch.delenv(k, raising=False)
        for k, v in (env or {}).items():
            monkeypatch.setenv(k, v)
        monkeypatch.setattr(sys, "argv", ["triage", *map(str, args)])
        capsys.readouterr()
        try:
            main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return run
