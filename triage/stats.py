"""Per-engine timelines of SGLang batch stats, kept as compact arrays (not one object per line).

One EngineStats per engine origin (file, Ray pid). Rows come from `Decode batch`/`Prefill batch`
lines; checks read the arrays (pool saturation, queue growth) and reports draw them as timelines.

The arrays hold every row of a small log. Of a large one (see fastscan.py) they hold every row whose
pool usage is 0.9 or more, plus an evenly spaced sample of the others (about 1000 per file), so
memory stays flat whatever the log's size; `total` counts every row seen, stored or not.
"""

from __future__ import annotations

from array import array
from typing import Any

from .model import Event, Line


def engine_key(file: str, pid: str, text: str) -> str:
    """One timeline per engine: the file, the Ray actor pid, and the DP group (each DP-attention group logs its
    own stats from its attention-TP rank 0, `[time DP3 TP3]`). The DP tag is read as _linescan.c reads it
    when it counts rows per origin: ` DP<digits>` inside the leading bracket."""
    key = file + (f" pid={pid}" if pid else "")
    if text.startswith("["):
        close = text.find("]")
        at = text.find(" DP", 0, close)
        if at >= 0 and text[at + 3:at + 4].isdigit():
            end = at + 4
            while end < close and text[end] != " ":
                end += 1
            return f"{key} {text[at + 1:end]}"
    return key


def engine(res: Any, key: str) -> EngineStats:
    """The timeline `key` of a file's result, made on first use."""
    es = res.engines.get(key)
    if es is None:
        es = res.engines[key] = EngineStats(key)
    return es


KEEP_PRESSURE_LINES = 20  # evidence lines kept of rows with a full pool and a waiting queue


class EngineStats:
    def __init__(self, origin: str):
        self.origin = origin
        self.lineno = array("l")
        self.decode = array("b")  # 1 decode, 0 prefill
        self.usage = array("f")
        self.running = array("f")
        self.queue = array("f")
        self.throughput = array("f")  # gen (decode) or input (prefill) tokens/s
        self.mamba_usage = array("f")
        # rows with usage >= 0.9 and a waiting queue, for evidence: (line, usage, queue); first few and the last
        self.pressure: list[tuple[Line, float, float]] = []
        self.last_pressure: tuple[Line, float, float] | None = None
        self.first_line: Line | None = None
        self.total = 0  # rows seen, including those not kept in the arrays

    def skip(self, rows: int) -> None:
        """Rows seen but not stored (below the pressure threshold, not sampled)."""
        self.total += rows

    def add(self, ev: Event) -> None:
        f: dict[str, Any] = ev.fields
        usage = float(f.get("usage", -1.0))
        queue = float(f.get("#queue-req", 0))
        self.total += 1
        self.lineno.append(ev.line.lineno)
        self.decode.append(1 if f["phase"] == "decode" else 0)
        self.usage.append(usage)
        self.running.append(float(f.get("#running-req", 0)))
        self.queue.append(queue)
        self.throughput.append(float(f.get("gen throughput (token/s)", f.get("input throughput (token/s)", -1.0))))
        self.mamba_usage.append(float(f.get("mamba usage", -1.0)))
        if self.first_line is None:
            self.first_line = ev.line
        if usage >= 0.9 and queue > 0:
            row = (ev.line, usage, queue)
            if len(self.pressure) < KEEP_PRESSURE_LINES:
                self.pressure.append(row)
            self.last_pressure = row

    def __len__(self) -> int:
        return len(self.lineno)
