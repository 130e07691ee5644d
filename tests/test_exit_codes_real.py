"""The exit code on real runs (fixtures/real-extra 361-374, complete-run excerpts whose crashes used to exit 0): a
crash gates at error whatever its wording (vLLM V0/V1 engine and worker deaths, method wrappers, tracebacks the log
cuts off), a healthy run or one its operator stopped does not."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from triage.analyze import Settings, analyze

EXTRA = FIXTURES / "real-extra"
GATES = {  # case number -> whether the run must gate (exit 1 with --fail-on error)
    "361": True, "362": True, "363": True, "364": True, "365": False, "366": True, "367": True, "368": True,
    "369": True, "370": True, "371": False, "372": True, "373": True, "374": True,
}


@pytest.mark.parametrize("number", sorted(GATES))
def test_a_crash_gates_and_a_healthy_or_stopped_run_does_not(number: str) -> None:
    [case] = sorted(EXTRA.glob(f"{number}-*"))
    report = analyze(Settings(paths=[str(case / "input")]))
    assert (report.worst() == "error") is GATES[number], [(f.rule, f.severity) for f in report.findings]
