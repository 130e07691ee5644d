"""Test helpers for the output formats: real corpus cases from fixtures/real, a combined multi-failure run, the
CLI in-process. Paths come from conftest."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REAL, ROOT  # noqa: F401 - ROOT is re-exported for the format tests

from triage.analyze import Settings, analyze
from triage.model import Report


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
    """Every real case as one run directory (one subdirectory per case): 20 findings, 12 of them errors."""
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


DECODE = ("[2026-05-24 03:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {run}, #token: {tok}, token usage: {usage:.2f}, "
          "cuda graph: True, gen throughput (token/s): {tput:.2f}, #queue-req: {queue}")
RETRACT = "[2026-05-24 03:{m:02d}:{s:02d} TP0] KV cache pool is full. Retract requests. #retracted_reqs: {n}, #new_token_ratio: 0.2100 -> 0.4433"
PERF = ("(RolloutManager pid=4100) [2026-05-24 04:{m:02d}:00] rollout.py:1193 - perf {step}: "
        "{{'perf/step_time': {t}, 'rollout/truncated_ratio': {trunc}}}")


def long_run(dest: Path, rows: int = 6000, retract_every: int = 1500, first_step: float = 600.0) -> Path:
    """A run dir in real line formats (the 2026 SGLang decode line of case 036/074, the retraction line of
    the serving rules, slime's perf dict): `rows` decode rows whose token usage climbs to 1.00 with a queue,
    a retraction every `retract_every` rows, and 8 trainer steps (a cold first step, then ~100 s)."""
    dest.mkdir(parents=True)
    lines = []
    for i in range(rows):
        m, s = divmod(i // 10, 60)
        usage = min(1.0, i / (rows * 0.6))
        queue = 0 if usage < 0.95 else 3 + i % 7
        lines.append(DECODE.format(m=m % 60, s=s, run=32 + i % 5, tok=int(usage * 40000), usage=usage,
                                   tput=1600 - 900 * usage, queue=queue))
        if retract_every and i % retract_every == retract_every - 1:
            lines.append(RETRACT.format(m=m % 60, s=s, n=3))
    (dest / "sglang-engine-0.log").write_text("\n".join(lines) + "\n")
    perf = [PERF.format(m=k, step=k, t=first_step if k == 0 else 100.0 + k, trunc=0.02 * k) for k in range(8)]
    (dest / "rollout.log").write_text("\n".join(perf) + "\n")
    return dest
