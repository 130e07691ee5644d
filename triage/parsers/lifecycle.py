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
from types import MappingProxyType

from triage.model import Event, Line

TIMER = re.compile(r"\bTimer (?P<name>\w+) (?P<phase>start|end)(?: \(elapsed: (?P<seconds>[\d.]+)s\))?")
FT = re.compile(r"\bft cls=(?P<cls>\w+) fn=(?P<fn>\w+) phase=end ok=(?P<ok>true|false)(?: elapsed_s=(?P<seconds>[\d.]+))?")
ENGINE_UPDATE = re.compile(r"\bUpdate weights end\.")

ANCHORS = ("Timer ", "phase=end ok=", "Update weights end")


# Timer lines repeat (`Timer train_wait start` once a step, the same elapsed times again and again): events of
# the same timer text share one read-only fields mapping instead of a dict each.
_TIMER_FIELDS: dict[str, MappingProxyType[str, object]] = {}
TIMER_FIELDS_KEPT = 4096


def _timer_fields(m: re.Match[str]) -> MappingProxyType[str, object]:
    text = m.group(0)
    found = _TIMER_FIELDS.get(text)
    if found is None:
        fields: dict[str, object] = {"name": m["name"], "phase": m["phase"]}
        if m["seconds"]:
            fields["seconds"] = float(m["seconds"])
        if len(_TIMER_FIELDS) >= TIMER_FIELDS_KEPT:
            _TIMER_FIELDS.clear()
        found = _TIMER_FIELDS[text] = MappingProxyType(fields)
    return found


def parse(line: Line) -> Event | None:
    msg = line.msg
    at = msg.find("Timer ")
    m = TIMER.search(msg, at) if at >= 0 else None  # no match starts before the literal
    if m:
        return Event("timer", line, _timer_fields(m))  # type: ignore[arg-type]
    m = FT.search(msg) if "phase=end ok=" in msg else None
    if m:
        fields = {"name": m["fn"], "phase": "end", "ok": m["ok"] == "true", "actor": m["cls"]}
        if m["seconds"]:
            fields["seconds"] = float(m["seconds"])
        return Event("timer", line, fields)
    if "Update weights end" in msg and ENGINE_UPDATE.search(msg):
        return Event("timer", line, {"name": "update_weights", "phase": "end", "ok": True, "actor": "engine"})
    return None
