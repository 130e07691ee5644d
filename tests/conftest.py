"""Shared helpers: the built-in library, and running triage on a directory or on inline log text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.analyze import Settings, analyze
from triage.library.rules import Library, load_library
from triage.model import SEVERITY_RANK, Finding, Report

pytest_plugins = ["realcases"]  # the `combined` and `cli` fixtures

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
REAL = FIXTURES / "real"
REPO = ROOT


@pytest.fixture(scope="session", autouse=True)
def library_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The library's YAML cache (triage/library_cache.py) in a folder of the test session, never the user's."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("TRIAGE_NO_CACHE", raising=False)
    yield
    mp.undo()


@pytest.fixture(scope="session")
def lib() -> Library:
    return load_library()


def extra_case(prefix: str) -> Path:
    """The one real-extra case whose directory name starts with `prefix` (e.g. "990-"); a bare number ("204") names
    the case of that number, not every case whose number starts with it (2040-)."""
    if prefix.isdigit():
        prefix += "-"
    (d,) = [p for p in (FIXTURES / "real-extra").iterdir() if p.name.startswith(prefix)]
    return d


def extra_input(prefix: str) -> Path:
    """The input directory of the real-extra case whose name starts with `prefix`."""
    return extra_case(prefix) / "input"


def warnings_or_worse(report: Report) -> list[str]:
    """The rules of a report's findings of severity warning or error, in report order."""
    return [f.rule for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]


def triage_dir(path: Path | str, **kw: object) -> Report:
    return analyze(Settings(paths=[str(path)], **kw))  # type: ignore[arg-type]


def triage_files(tmp_path: Path, files: dict[str, str], **kw: object) -> Report:
    """Write {name: text} under tmp_path/run and triage that directory."""
    run = tmp_path / "run"
    for name, text in files.items():
        p = run / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return triage_dir(run, **kw)


def top(report: Report):
    assert report.findings, "expected at least one finding"
    return report.findings[0]


def nested(settings: dict[str, Any]) -> dict[str, Any]:
    """{'inference.max_context_length': 1} -> {'inference': {'max_context_length': 1}}."""
    out: dict[str, Any] = {}
    for dotted, value in settings.items():
        node = out
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def write_run(root: Path, settings: dict[str, Any] | None, layout: str = "nested",
              logs: dict[str, str] | None = None, config_name: str = "run.yaml") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if settings is not None:
        data = nested(settings) if layout == "nested" else dict(settings)
        (root / config_name).write_text(yaml.safe_dump(data, sort_keys=False))
    for name, text in (logs or {}).items():
        (root / name).write_text(text)
    return root


def run(path: Path, lib=None, config: Path | None = None) -> Report:
    return analyze(Settings(paths=[str(path)], config=config), lib)


def by_rule(report: Report) -> dict[str, Finding]:
    return {f.rule: f for f in report.findings}


def knob_names(f: Finding) -> list[str]:
    return [k.name for k in f.knobs]


# A user rule library file: one valid rule (tests of loading, validation and lazy compiling edit it).
USER_RULE = """rules:
  - id: user.my-rule
    category: other
    severity: error
    title: My failure
    anchor: ["MyFailure"]
    match: 'MyFailure: (?P<code>\\d+)'
    knobs: []
    explain: Something specific broke.
    examples:
      match: ["MyFailure: 3"]
"""
