"""How processes ended (signals.judge, per file): an exception no rule explains that ended a process, and an
orderly shutdown. The first gates at error severity whatever its wording; the second never gates."""

from __future__ import annotations

from typing import Any

from triage.checks.base import CheckResult, Run
from triage.parsers import signals
from triage.parsers.signals import describe_frames


def fatal_exit(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """One result per process-ending exception that no rule claimed (a claimed one is its rule's finding)."""
    out = []
    for ev in run.events:
        if ev.kind != "fatal" or ev.fields.get("rule"):
            continue
        f = ev.fields
        evidence = [ev.line]
        first = f.get("first")
        # the chain's head leads when it is the traceback's header; a paste that starts inside the traceback has a
        # frame line there, which says less than the exception line (real-extra 1288)
        if first is not None and first is not ev.line and signals.TRACEBACK in first.msg[:80]:
            evidence.insert(0, first)
        where = describe_frames(f.get("frames") or [])
        name, message = f.get("exception", ""), f.get("message", "")[:160]
        out.append(CheckResult(evidence=evidence, count=1, numbers={
            "exception": name, "message": message, "what": f"{name}: {message}" if message else name,
            "frames": where, "file": ev.line.file}))
    return out


def orderly_shutdown(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The shutdown markers of the run, with how many teardown lines each left out of the findings."""
    found = [ev for ev in run.events if ev.kind == "shutdown"]
    if not found:
        return []
    return [CheckResult(evidence=[ev.line], count=1,
                        numbers={"signal": ev.fields.get("signal", ""), "quiet": ev.fields.get("quiet", 0)})
            for ev in found]
