"""Run figures and timelines: the numbers a nightly comparison tracks and the series the HTML page draws.

Figures (None when the logs do not show them): retractions, peak token usage, peak queue, first-step time
(only when the logs start at step 0 or 1), warm step time (median of the steps after the first), truncation ratio (the worst step). The metric keys
for step times and truncation come from the rules that judge them (`cold.first-step-slow`,
`gen.cap-hit-rate`), so a key added there is tracked here too.

Timelines keep at most MAX_POINTS points per source: each bucket of rows keeps its peak token usage,
running and queued requests (a saturation spike must survive downsampling) and its mean decode throughput.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from triage.checks.base import Run
from triage.checks.serving import retracted
from triage.library.rules import Library
from triage.model import Event, Hit, Timeline
from triage.parsers.engine_stats import EngineStats

MAX_POINTS = 2000
MAX_MARKS = 200
STEP_RULE = "cold.first-step-slow"
TRUNCATION_RULE = "gen.cap-hit-rate"
# `triage diff` compares these; higher is worse for each.
FIGURES = ("retractions", "peak_token_usage", "peak_queue", "first_step_time", "step_time", "truncation_ratio")


def _keys(lib: Library, rule_id: str) -> list[str]:
    rule = lib.rule(rule_id)
    return [str(k) for k in (rule.params.get("keys") or [])] if rule is not None else []


def _values(run: Run, key: str) -> list[tuple[Event, float]]:
    return [(ev, v) for ev, v in run.series(key) if math.isfinite(v)]


def step_series(lib: Library, run: Run) -> tuple[str, list[tuple[Event, float]]]:
    """The first step-time key the run's metric records carry, and its values in log order."""
    for key in _keys(lib, STEP_RULE):
        series = _values(run, key)
        if series:
            return key, series
    return "", []


def _retracted(h: Hit) -> int:
    v = h.numbers.get("retracted")
    return int(v) * h.line.repeat if isinstance(v, (int, float)) else 0


def _retractions(run: Run, retracting: list[Hit]) -> int | None:
    """Requests retracted (SGLang) or preempted (vLLM): the engines' own retraction and preemption lines, and the
    preemptions vLLM V1 counts in its stats rows; the rules' numbers when no parser event holds them."""
    events = [e for e in run.events if e.kind == "retraction"]
    counted = sum(retracted(e) for e in events)
    counted += sum(es.preempted for es in run.engines.values())
    if not events and retracting:
        counted += sum(_retracted(h) for h in retracting)
    if counted or events or retracting:
        return counted
    return 0 if run.engines else None


def figures(lib: Library, run: Run, hits: list[Hit]) -> dict[str, Any]:
    engines = run.engines
    retracting = [h for h in hits if "retracted" in h.numbers]
    usage = [u for e in engines.values() if (u := e.peak_usage()) is not None and u >= 0]
    queue = [q for e in engines.values() if (q := e.peak_queue()) is not None]
    _, steps = step_series(lib, run)
    trunc = [v for key in _keys(lib, TRUNCATION_RULE) for _, v in _values(run, key)]
    return {
        "retractions": _retractions(run, retracting),
        "peak_token_usage": round(max(usage), 4) if usage else None,
        "peak_queue": max(queue) if queue else None,
        "first_step_time": steps[0][1] if steps and (steps[0][0].fields.get("step") or 0) <= 1 else None,
        "step_time": round(median(v for _, v in steps[1:]), 3) if len(steps) > 1 else None,
        "truncation_ratio": max(trunc) if trunc else None,
    }


def _size(n: int) -> int:
    """Rows per point, so that a timeline of n rows has at most MAX_POINTS points."""
    return max(1, math.ceil(n / MAX_POINTS))


def _peaks(values: Any, size: int) -> list[float | None]:
    """Each bucket's highest value (negative = not printed), or None."""
    if size == 1:  # one row a point (a sampled timeline)
        return [round(v, 4) if v >= 0 else None for v in values]
    out: list[float | None] = []
    for i in range(0, len(values), size):
        peak = max(values[i:i + size])  # a printed value is the peak whenever the bucket has one
        out.append(round(peak, 4) if peak >= 0 else None)
    return out


def _means(values: Any, keep: Any, size: int) -> list[float | None]:
    """Each bucket's mean over the rows `keep` marks (negative = not printed), or None."""
    if size == 1:
        return [round(v, 2) if k and v >= 0 else None for v, k in zip(values, keep)]
    out: list[float | None] = []
    for i in range(0, len(values), size):
        vals = [v for v, k in zip(values[i:i + size], keep[i:i + size]) if k and v >= 0]
        out.append(round(sum(vals) / len(vals), 2) if vals else None)
    return out


def engine_timeline(stats: EngineStats, hits: list[Hit]) -> Timeline:
    file = stats.first_line.file if stats.first_line else stats.origin
    pid = stats.origin.partition(" pid=")[2]
    size = _size(len(stats))
    series: dict[str, list[float | None]] = {
        "token usage": _peaks(stats.usage, size),
        "running requests": _peaks(stats.running, size),
        "queued requests": _peaks(stats.queue, size),
        "gen throughput (token/s)": _means(stats.throughput, stats.decode, size),
    }
    marks = [{"line": h.line.lineno, "label": f"retracted {h.numbers['retracted']}"} for h in hits
             if "retracted" in h.numbers and h.line.file == file and (not pid or h.line.pid == pid)]
    return Timeline(source=stats.origin, file=file, kind="engine", x=list(stats.lineno[::size]),
                    series={k: v for k, v in series.items() if any(x is not None for x in v)},
                    marks=marks[:MAX_MARKS], rows=len(stats))


def trainer_timelines(lib: Library, run: Run) -> list[Timeline]:
    key, steps = step_series(lib, run)
    by_file: dict[str, list[tuple[Event, float]]] = {}
    for ev, v in steps:
        by_file.setdefault(ev.line.file, []).append((ev, v))
    out = []
    for file, rows in by_file.items():
        size = _size(len(rows))
        starts = range(0, len(rows), size)
        out.append(Timeline(source=file, file=file, kind="trainer", x=[rows[i][0].line.lineno for i in starts],
                            series={f"{key} (s)": [round(max(v for _, v in rows[i:i + size]), 3) for i in starts]},
                            rows=len(rows)))
    return out


def timelines(lib: Library, run: Run, hits: list[Hit]) -> list[Timeline]:
    out = [engine_timeline(s, hits) for _, s in sorted(run.engines.items()) if len(s)]
    return out + trainer_timelines(lib, run)
