"""Step and metric lines of RL frameworks, as one shape: {framework, tag, step, values}.

- slime/MILES: `step 12: {'train/loss': ...}`, `rollout 3: {...}`, `perf 3: {...}`, `eval 3: {...}`
  (dict reprs, `log_utils.py`/`metrics.py`; MILES since 2026-01-12 prints each train step twice).
- verl: `step:5 - key:value - key:value ...` (`verl/utils/tracking.py` console logger), often one very
  long line that copy-paste or excerpting splits; a fragment without `step:` continues the previous one.
- TRL/transformers Trainer: `{'loss': 0.0, 'grad_norm': ..., 'reward': ..., 'epoch': 0.1}`.
- JSON lines (`{"reward": ...}`) from metrics or verifier files.
"""

from __future__ import annotations

import json
import re
from sys import intern
from typing import Any

from ..model import Event, Line

SLIME = re.compile(r"\b(?P<tag>(?:critic-)?step|rollout|perf|eval|multi_turn) (?P<step>\d+): \{")
DICT_PAIR = re.compile(r"'(?P<k>[^']+)':\s*(?:np\.float\d*\()?(?P<v>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf)|True|False)")
LOOSE_PAIR = re.compile(r"'([^']+)':\s*([^,}]+)")
SLIME_REACH = 40  # characters a SLIME match spans before its ": {" (tag, space, step number)
VERL_STEP = re.compile(r"\bstep:(?P<step>\d+) - ")
VERL_PAIR = re.compile(r"(?:^| - )(?P<k>[A-Za-z_][\w/@.\-]*):(?P<v>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))(?= - |$|\s)")
TRL = re.compile(r"\{'(?:loss|train_loss|reward|eval_loss)'")

# The dict anchors name the key families slime/MILES log (train/, rollout/, perf/, eval/, ...), not a bare
# ": {'", which would also pick up every per-rank `Memory-Usage ...: {'gpu': ...}` line of a trainer log.
DICT_ANCHORS = tuple(f": {{'{family}" for family in ("train/", "rollout/", "perf/", "eval/", "multi_turn/", "critic",
                                                      "passrate/", "timing/", "reward", "loss"))
ANCHORS = DICT_ANCHORS + ("step:", " - timing_s/", " - actor/", " - critic/", " - response_length/", "{'loss'", '"reward"', '"score"')


def _float(v: str) -> float:
    if v == "True":
        return 1.0
    if v == "False":
        return 0.0
    return float(v)


def _values(pairs: list[tuple[str, str]]) -> dict[str, float]:
    try:
        return {intern(k): float(v) for k, v in pairs}
    except ValueError:  # a True/False among them
        return {intern(k): _float(v) for k, v in pairs}


def _dict_values(msg: str, at: int) -> dict[str, float]:
    """The numeric values of a dict repr from `at`. Most dicts hold plain numbers only: a loose split into
    `'key': value` pairs, each value read by float(), is the common case; any value float() refuses (a string,
    a list, np.float64(...), True) sends the whole dict through the exact DICT_PAIR reading."""
    try:
        return {intern(k): float(v) for k, v in LOOSE_PAIR.findall(msg, at)}
    except ValueError:
        return _values(DICT_PAIR.findall(msg, at))


def parse(line: Line) -> Event | None:
    msg = line.msg
    at = msg.find(": {")
    m = SLIME.search(msg, max(0, at - SLIME_REACH)) if at >= 0 else None
    if m:
        values = _dict_values(msg, m.end())
        if values:
            return Event("metrics", line, {"framework": "slime", "tag": intern(m["tag"]), "step": int(m["step"]), "values": values})
    m = VERL_STEP.search(msg) if "step:" in msg else None
    if m:
        values = {intern(p["k"]): float(p["v"]) for p in VERL_PAIR.finditer(msg, m.end() - 3)}
        return Event("metrics", line, {"framework": "verl", "tag": "step", "step": int(m["step"]), "values": values})
    if " - " in msg and ":" in msg and "/" in msg:
        values = {intern(p["k"]): float(p["v"]) for p in VERL_PAIR.finditer(msg)}
        if len(values) >= 3:  # a fragment of a split verl step line
            return Event("metrics", line, {"framework": "verl", "tag": "continued", "step": None, "values": values})
    if "{'" in msg and TRL.search(msg):
        values = _dict_values(msg, 0)
        if values:
            return Event("metrics", line, {"framework": "trl", "tag": "log", "step": None, "values": values})
    s = msg.strip()
    if s.startswith("{") and s.endswith("}") and '"' in s:
        try:
            obj = json.loads(s)
        except ValueError:
            return None
        if isinstance(obj, dict):
            values = {intern(k): float(v) for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if values:
                return Event("metrics", line, {"framework": "jsonl", "tag": "record", "step": obj.get("step"), "values": values})
    return None


def _joined(kept: Event, ev: Event) -> None:
    """Add the values of `ev` that `kept` lacks; fields["lines"] names the line of each value that is not on
    kept's own line (a record's values are on its line unless they were joined from another)."""
    values = kept.fields["values"]
    new = {k: v for k, v in ev.fields["values"].items() if k not in values}
    if new:
        values.update(new)
        kept.fields.setdefault("lines", {}).update(dict.fromkeys(new, ev.line))


def merge_records(events: list[Event]) -> list[Event]:
    """One record per (framework, tag, step): join verl fragments, drop MILES's duplicate prints."""
    out: list[Event] = []
    seen: dict[tuple[Any, ...], Event] = {}
    for ev in events:
        f = ev.fields
        if f["tag"] == "continued":
            if out and out[-1].line.file == ev.line.file and out[-1].fields["framework"] == "verl":
                _joined(out[-1], ev)
            continue
        key = (ev.line.file, f["framework"], f["tag"], f["step"]) if f["step"] is not None else None
        if key is not None and key in seen:
            _joined(seen[key], ev)
            continue
        if key is not None:
            seen[key] = ev
        out.append(ev)
    return out

