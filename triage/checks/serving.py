"""Checks over engine batch-stats timelines (SGLang and vLLM rows alike, see stats.py)."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from triage.checks.base import CheckResult, Run
from triage.parsers.engine_stats import PRESSURE_USAGE, EngineStats, Episode


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def retracted(ev: Any) -> int:
    """Requests a retraction event stands for: its count for each copy of its line, plus what the lines of its
    family folded into it (origins.Families) counted beyond that."""
    return int(ev.fields.get("count", 1)) * ev.line.repeat + int(ev.fields.get("extra", 0))


def retractions(run: Run) -> dict[str, int]:
    """Retracted (SGLang) or preempted (vLLM) requests per file, from the engines' own lines."""
    def count(r: Run) -> dict[str, int]:
        out: dict[str, int] = {}
        for ev in r.events:
            if ev.kind == "retraction":
                out[ev.line.file] = out.get(ev.line.file, 0) + retracted(ev)
        return out
    return run.once("retractions", count)


def _file(es: EngineStats) -> str:
    return es.first_line.file if es.first_line else es.origin.split(" ")[0]


MIN_SHARE = 0.1  # of an engine's stats rows under pressure, or
MIN_SECONDS = 120  # in one episode: pressure that bound the run (less is a passing moment)


def kv_pressure(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """KV pool at least `min_usage` full while requests wait: concurrency bound by the pool.

    One result per engine with pressure episodes (first/last/peak/count, the rows as evidence). Severity follows how
    much of the engine's run was under pressure: at least `min_share` of its rows, or one episode lasting
    `min_seconds`, is the rule's severity; less (a lone row in a long healthy log) is info."""
    min_usage = float(params.get("min_usage", 0.9))
    min_queue = float(params.get("min_queue", 1))
    min_share = float(params.get("min_share", MIN_SHARE))
    min_seconds = float(params.get("min_seconds", MIN_SECONDS))
    retracted = retractions(run)
    out = []
    for es in run.engines.values():
        eps = [e for e in es.pressure_episodes.items if e.peak_usage >= min_usage and e.peak_queue >= min_queue]
        if not eps:
            if es.preempted:  # vLLM V1 rows counting preemptions, the pool never printed as full with a queue
                out.append((es.preempted > 1, 0.0, _preemptions(es)))
            continue
        tracked = es.pressure_episodes
        if min_usage <= PRESSURE_USAGE and min_queue <= 1:  # every episode counts: the totals over all of them
            rows, n_eps, under = tracked.total_rows, tracked.count, tracked.total_seconds
            peak_usage, peak_queue = tracked.peak_usage, tracked.peak_queue
        else:  # a stricter threshold: the episodes kept (the longest) that reach it
            rows, n_eps, under = sum(e.rows for e in eps), len(eps), sum(e.seconds for e in eps)
            peak_usage, peak_queue = max(e.peak_usage for e in eps), max(e.peak_queue for e in eps)
        share = rows / es.total if es.total else 1.0
        longest = max(eps, key=lambda e: (e.seconds, e.rows))
        sustained = share >= min_share or longest.seconds >= min_seconds
        first, last = eps[0], eps[-1]
        top = max(eps, key=lambda e: (e.peak_usage, e.peak_queue))
        lines = [first.first] + [ln for ln in (top.peak, last.last) if ln is not None]
        lines = [ln for i, ln in enumerate(lines) if all(ln is not o for o in lines[:i])]
        numbers = {"engine": es.origin, "program": es.engine or "sglang", "pressure_rows": rows, "rows": es.total,
                   "share": round(100 * share, 1), "episodes": n_eps,
                   "peak_usage": round(peak_usage, 4), "peak_queue": peak_queue,
                   "seconds_under_pressure": round(under, 1), "longest_episode_s": round(longest.seconds, 1),
                   "saturated_rows": rows, "retractions": retracted.get(_file(es), 0) + es.preempted,
                   "summary": (f"{rows} of {es.total} rows ({100 * share:.0f}%), peak usage {peak_usage:.2f}, up to "
                               f"{peak_queue:.0f} waiting" + (f", {_minutes(under)} under pressure" if under else ""))}
        out.append((sustained, share, CheckResult(evidence=sorted(lines, key=lambda ln: ln.lineno), count=rows,
                                                  numbers=numbers,
                                                  severity="" if sustained else "info")))
    out.sort(key=lambda r: (not r[0], -r[1]))
    return [r for _, _, r in out]


def _preemptions(es: EngineStats) -> CheckResult:
    first, last = es.preempt_rows
    lines = [ln for ln in (first, last) if ln is not None]
    if len(lines) == 2 and lines[0] is lines[1]:
        lines = lines[:1]
    peak = es.peak_usage()
    peak = -1.0 if peak is None else peak
    return CheckResult(evidence=lines, count=es.preempted, severity="" if es.preempted > 1 else "info",
                       title="The engine preempted running requests to free KV-cache space ({summary})",
                       numbers={"engine": es.origin, "program": es.engine, "retractions": es.preempted,
                                "pressure_rows": 0, "rows": es.total, "peak_usage": round(peak, 4),
                                "summary": f"{es.preempted} requests preempted, peak usage {peak:.2f}"})


def pool_saturation(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The earlier name of kv_pressure (user rule libraries may still name it)."""
    return kv_pressure({"min_usage": 0.99} | params, run)


def lone_decode(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """One or a few requests decoding alone, nothing waiting, for at least `min_seconds`: a generation straggler.

    The engine's own rows show it (vLLM `Running: 1 reqs … Pending: 0 reqs` for minutes, SGLang `#running-req: 1 …
    #queue-req: 0`): the batch is finished but for a runaway or very long response, and the rollout step waits on
    it. Rows must have time stamps; an episode spans consecutive rows of one engine."""
    min_seconds = float(params.get("min_seconds", 300))
    max_running = float(params.get("max_running", 2))
    out = []
    for es in run.engines.values():
        eps = [e for e in es.lone_episodes.items if e.seconds >= min_seconds and e.peak_running <= max_running]
        if not eps:
            continue
        tails = [e for e in eps if _straggled(es, e, max_running)]
        longest = max(tails or eps, key=lambda e: e.seconds)
        total = es.seconds()
        numbers = {"engine": es.origin, "program": es.engine or "sglang", "episodes": len(eps),
                   "longest_s": round(longest.seconds, 1), "running": longest.peak_running, "rows": longest.rows,
                   "run_s": round(total, 1), "peak_usage": round(longest.peak_usage, 4),
                   "summary": (f"{longest.peak_running:.0f} request(s) alone for {_minutes(longest.seconds)}"
                               + (f" in {len(eps)} episodes" if len(eps) > 1 else ""))}
        ev = [longest.first] + ([longest.last] if longest.last is not longest.first else [])
        res = CheckResult(evidence=ev, count=len(eps), numbers=numbers)
        if not tails:  # began with the engine idle, finished with the engine going on: no batch waited on it
            res.severity = "info"
            res.title = "Engine decoding one long request alone, one request at a time, no batch waiting ({summary})"
        out.append((longest.seconds, res))
    out.sort(key=lambda r: -r[0])
    return [r for _, r in out]


DRAIN_ROWS = 3  # rows before a lone episode in which the batch it straggles from shows


def _straggled(es: EngineStats, e: Episode, max_running: float) -> bool:
    """Whether a lone episode is a tail: the rows just before it ran a wider batch (more than `max_running`
    requests, or some waiting), or the log ends inside it (still decoding, or cut off, when the log stops). An
    episode that began with the engine idle and ended with the engine going on (an agent or chat client sending one
    long request at a time) held no batch back."""
    first = e._first.lineno
    if e._last.lineno >= es.last_lineno():
        # the log ends inside it (still decoding, or cut off): a batch's tail, unless the engine never ran a batch
        # at all, one or two requests at a time through several episodes (an eval or chat client): its log stopped
        # in the middle of one more long answer, and nothing waited on it
        return es.lone_episodes.count <= 1 or _ever_batched(es, max_running)
    i = bisect_left(es.lineno, first)
    before = es.lineno[i - 1] if i else 0
    if es.folded_ends and es.folded_ends[0][0] < first and es.folded_ends[-1][0] > before:
        return True  # rows just before it were folded away (never lone ones): what ran then is not known
    return any(es.running[j] > max_running or es.queue[j] > 0 for j in range(max(0, i - DRAIN_ROWS), i))


def _ever_batched(es: EngineStats, max_running: float) -> bool:
    """Whether the engine's rows ever ran more than `max_running` requests or queued any (rows folded away by the
    prefilter count as unknown, so as batched)."""
    return (max(es.running, default=0.0) > max_running or (es.peak_queue() or 0.0) > 0
            or bool(es.folded_ends))


def pressure_seen(run: Run, file: str | None = None) -> tuple[float, int, int]:
    """(peak usage, pressure rows, retractions) over the run's engines (of `file` when given): whether the stats
    show a pool risk materialising. Peak is -1 when no row printed a usage."""
    retracted = retractions(run)
    peak, rows, n = -1.0, 0, 0
    for es in run.engines.values():
        if file is not None and _file(es) != file:
            continue
        usage = es.peak_usage()
        if usage is not None:
            peak = max(peak, usage)
        rows += es.pressure_episodes.rows()
        n += es.preempted
    n += sum(v for f, v in retracted.items() if file is None or f == file)
    return peak, rows, n



def pressure_brief(run: Run, file: str | None = None) -> bool:
    """Whether the pool pressure the engines (of `file` when given) show stayed a passing moment: under MIN_SHARE of
    each engine's rows and no episode as long as MIN_SECONDS (what kv_pressure reports as info)."""
    for es in run.engines.values():
        if file is not None and _file(es) != file:
            continue
        tracked = es.pressure_episodes
        if not tracked.total_rows:
            continue
        share = tracked.total_rows / es.total if es.total else 1.0
        if share >= MIN_SHARE or max(e.seconds for e in tracked.items) >= MIN_SECONDS:
            return False
    return True
