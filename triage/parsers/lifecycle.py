"""Trainer lifecycle lines: MILES/slime timers and weight publication to the rollout engines.

- `Timer {name} start` / `Timer {name} end (elapsed: {s:.1f}s)` (MILES/slime `timer` utility, trainer rank 0;
  slime since 2025-10-30). Timer names are stage names: `train`, `log_probs`, `update_weights`, ...
- `ft cls=MegatronTrainRayActor fn=update_weights phase=end ok=true elapsed_s=12.3` (MILES `@with_logs`,
  2026-07-10 ->), `ok=false` on failure.
- SGLang engine side: `Update weights end.` after an online weight update.
See ../shared/reference/log-formats.md §B.k.
"""

from __future__ import annotations

import re
from sys import intern

from ..model import Event, Line

TIMER = re.compile(r"\bTimer (?P<name>\w+) (?P<phase>start|end)(?: \(elapsed: (?P<seconds>[\d.]+)s\))?")
FT = re.compile(r"\bft cls=(?P<cls>\w+) fn=(?P<fn>\w+) phase=end ok=(?P<ok>true|false)(?: elapsed_s=(?P<seconds>[\d.]+))?")
ENGINE_UPDATE = re.compile(r"\bUpdate weights end\.")

ANCHORS = ("Timer ", "phase=end ok=", "Update weights end")


def parse(line: Line) -> Event | None:
    msg = line.msg
    at = msg.find("Timer ")
    m = TIMER.search(msg, at) if at >= 0 else None  # no match starts before the literal
    if m:
        fields: dict[str, object] = {"name": intern(m["name"]), "phase": intern(m["phase"])}  # one copy of each name
        if m["seconds"]:
            fields["seconds"] = float(m["seconds"])
        return Event("timer", line, fields)
    m = FT.search(msg) if "phase=end ok=" in msg else None
    if m:
        fields = {"name": m["fn"], "phase": "end", "ok": m["ok"] == "true", "actor": m["cls"]}
        if m["seconds"]:
            fields["seconds"] = float(m["seconds"])
        return Event("timer", line, fields)
    if "Update weights end" in msg and ENGINE_UPDATE.search(msg):
        return Event("timer", line, {"name": "update_weights", "phase": "end", "ok": True, "actor": "engine"})
    return None
