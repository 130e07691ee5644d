"""Checks over per-step metric records (slime/MILES dicts, verl step lines, TRL dicts, JSON lines)."""

from __future__ import annotations

import math
from typing import Any

from triage.checks.base import CheckResult, Run
from triage.model import Event, Line
from triage.parsers.series_store import TOP


def _line(ev: Event, key: str) -> Line:
    lines: dict[str, Line] = ev.fields.get("lines") or {}
    return lines.get(key, ev.line)


def _series(records: list[Event], key: str) -> list[tuple[Event, float]]:
    return [(ev, ev.fields["values"][key]) for ev in records if key in ev.fields["values"]]


def over_threshold(params: dict[str, Any], run: Run) -> tuple[str, list[tuple[Event, float]], int] | None:
    """(key, viewed records where it is at least `min`, how many such records the run holds) for the first of
    `keys` that shows the problem."""
    low = float(params.get("min", 0.0))
    keys = list(params.get("keys") or [])
    if params.get("series"):  # a canonical series (parsers/vocabulary.py): every alias this run holds
        keys += [k for k in run.aliases(str(params["series"])) if k not in keys]
    for key in keys:
        series = run.series(key)
        over = [(ev, v) for ev, v in series if math.isfinite(v) and v >= low]
        if over:
            s = run.summary(key)
            # all of them are in view when fewer than TOP values of the series reach the threshold
            if s is None or len(s.top) < TOP or s.top[0][0] < low:
                return key, over, len(over)
            return key, over, run.scaled([ev for ev, _ in over], [ev for ev, _ in series], s.n)
    return None


def threshold_result(params: dict[str, Any], key: str, over: list[tuple[Event, float]], count: int) -> CheckResult:
    """`count`: records over the threshold in the whole run (`over` are those in view: series_store keeps the
    highest values of every series, so the worst record and, unless more than TOP are over, all are in it)."""
    worst_ev, worst = max(over, key=lambda ev_v: ev_v[1])
    first_ev, last_ev = over[0][0], over[-1][0]
    evidence = [_line(ev, key) for i, ev in enumerate((worst_ev, first_ev, last_ev))
                if ev not in (worst_ev, first_ev, last_ev)[:i]]
    return CheckResult(evidence=evidence, count=count,
                       numbers={"metric": key, "max": worst, "threshold": float(params.get("min", 0.0)),
                                "steps_over": count})


def metric_threshold(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Records where one of `keys` is at least `min` (e.g. a truncation ratio); one finding, first key wins."""
    found = over_threshold(params, run)
    return [threshold_result(params, *found)] if found else []


def generation_tail(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """verl agent loop: the slowest sample generated the longest response and took far longer than the mean."""
    min_ratio = float(params.get("min_ratio", 1.8))
    min_share = float(params.get("min_gen_share", 0.3))
    # A run whose steps report their clip ratio and put on average under `min_clip_ratio` of the responses at the
    # cap: the slowest sample is the ordinary tail of each batch, not a rollout held up by capped generations (verl
    # OPD console logs at 0.1-1% clipped, real-extra 1380-1384; 2.4% and 4% keep the finding, 1267 and 1385).
    # The same when no step reached `min_peak_clip_ratio`: one to five capped answers in the 64-128 responses of a
    # short run's steps average 1.5-2.5% but never make one in twenty (real-extra 1600, 0-3.9% a step).
    floor = float(params.get("min_clip_ratio", 0.0))
    peak_floor = float(params.get("min_peak_clip_ratio", 0.0))
    for key in params.get("clip_keys") or []:
        clips = [v for _, v in run.series(key) if math.isfinite(v)]
        if clips:
            if sum(clips) / len(clips) < floor or max(clips) < peak_floor:
                return []
            break
    hits: list[tuple[Event, dict[str, float]]] = []
    for ev, slow_len in run.series("timing_s/agent_loop/slowest/response_length"):  # a record needs them all
        v = ev.fields["values"]
        max_len = v.get("response_length/max")
        gmax = v.get("timing_s/agent_loop/generate_sequences/max")
        gmean = v.get("timing_s/agent_loop/generate_sequences/mean")
        if None in (slow_len, max_len, gmax, gmean) or not gmean:
            continue
        gen, step = v.get("timing_s/gen"), v.get("timing_s/step")
        share = gen / step if gen is not None and step else 1.0
        if slow_len >= 0.99 * max_len and gmax >= min_ratio * gmean and share >= min_share:
            hits.append((ev, {"slowest_response_length": slow_len, "max_response_length": max_len,
                              "slowest_seconds": gmax, "mean_seconds": gmean, "gen_share": round(share, 3)}))
    if not hits:
        return []
    ev, numbers = hits[0]
    evidence = [_line(ev, "timing_s/agent_loop/slowest/response_length")]
    extra = _line(ev, "response_length/max")
    if extra is not evidence[0]:
        evidence.append(extra)
    return [CheckResult(evidence=evidence, count=len(hits), numbers=numbers)]


def dataset_filtered(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """A dataset that lost at least `min` of its samples to the length filter before training (ms-swift's
    `Dataset filtered, origin length: N, filtered dataset length: M`; verl's `dataset len:` / `filter dataset
    len:` pair). One finding for the largest share; the arithmetic names both counts."""
    low = float(params.get("min", 0.1))
    hits = [(ev, v) for ev, v in run.series("dataset/dropped_share") if math.isfinite(v) and v >= low]
    if not hits:
        return []
    ev, share = max(hits, key=lambda ev_v: ev_v[1])
    values = ev.fields["values"]
    size, kept = values.get("dataset/size", 0.0), values.get("dataset/kept", 0.0)
    evidence = [ev.line]
    other = _line(ev, "dataset/kept")
    if other is not ev.line:
        evidence.append(other)
    arithmetic = f"{size - kept:g} of {size:g} samples dropped, {100 * share:.1f}%"
    return [CheckResult(evidence=evidence, count=len(hits),
                        numbers={"dataset_size": size, "dataset_kept": kept, "dropped_share": share,
                                 "threshold": low, "arithmetic": arithmetic})]
