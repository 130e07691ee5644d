"""The exit code, decided here and nowhere else.

0: no live finding at or above the gate severity (`--fail-on error|warning|never`);
1: at least one (a baselined finding never counts);
2: an error the user must act on (a TriageError: bad input, an invalid library, an output that cannot be written);
3: nothing at the gate, but the verdict is incomplete: a file meant to be read was read only in part (cut or
   truncated while reading, a damaged stream, a reader that died) or not at all (unreadable). Files skipped on
   purpose (binaries, links out of the run directory) do not count. `--fail-on never` never fails;
130: interrupted (Ctrl-C).
Writing a baseline accepts today's findings, so that run exits 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from triage.model import SEVERITY_RANK, Finding

OK, FINDINGS, ERROR, INCOMPLETE, INTERRUPTED = 0, 1, 2, 3, 130
GATE_RANK = {"error": 0, "warning": 1, "never": -1}


def at_gate(severity: str, fail_on: str) -> bool:
    """Does a finding of this severity fail a gate of `--fail-on fail_on`?"""
    return SEVERITY_RANK.get(severity, 9) <= GATE_RANK.get(fail_on, -1)


def exit_code(worst: str | None, fail_on: str) -> int:
    """From the worst live severity (None: no live finding)."""
    return FINDINGS if worst is not None and at_gate(worst, fail_on) else OK


def scan_exit(findings: Iterable[Finding], fail_on: str, wrote_baseline: bool = False, complete: bool = True) -> int:
    if wrote_baseline:
        return OK
    if any(not f.known and at_gate(f.severity, fail_on) for f in findings):
        return FINDINGS
    return INCOMPLETE if not complete and fail_on != "never" else OK


def diff_exit(new_findings: Iterable[dict[str, Any]], fail_on: str) -> int:
    """`triage diff`: a NEW live finding at or above the gate (one both runs have never fails the comparison)."""
    return FINDINGS if any(not f.get("known") and at_gate(str(f.get("severity")), fail_on)
                           for f in new_findings) else OK


def budget_exit(findings: Iterable[Finding]) -> int:
    """`triage budget`: a planned run that cannot work (an error) fails."""
    return scan_exit(findings, "error")
