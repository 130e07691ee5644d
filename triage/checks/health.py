"""Run health from step/metric lines: the domain document's "useful result" of a small synchronous run.

A useful run records finite rewards and gradients, nonzero advantages, weight publication, replay mismatches,
actual sequence lengths and stage times. These checks read the merged metric records (verl step lines,
slime/MILES dicts, TRL dicts, JSON lines), the trainer timers, and the run's configuration for the caps.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from statistics import median
from typing import Any

from triage.checks.base import CheckResult, Run
from triage.checks.metrics import _line, over_threshold, threshold_result
from triage.model import Event

PUBLISH_KEYS = ("timing_s/update_weights", "perf/update_weights_time", "perf/update_weights_implementation_time")
TRAIN_TAGS = ("step", "continued", "log", "record")


def metric_non_finite(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Any of `keys` NaN or infinite in any record (e.g. gradient norms): the first and last such record. When a
    reward went non-finite in that record or an earlier one, the rewards fed it (NaN rewards make NaN advantages, a
    NaN loss and NaN gradients): ranked at `fed_by_rewards_priority`, below the rewards' finding."""
    for key in params.get("keys") or []:
        s = run.summary(key)
        if s is not None and s.bad_first is not None and s.bad_last is not None:
            ev, v, _ = run.point(s.bad_first)
            last = run.point(s.bad_last)[0]
            numbers: dict[str, Any] = {"metric": key, "value": str(v), "non_finite": s.bad, "records": s.n,
                                       "arithmetic": f"{key} = {v} in {s.bad} of {s.n} records"}
            fed = _rewards_non_finite_by(run, s.bad_first[0])
            if fed is not None:
                numbers["after_non_finite_reward"] = fed
            return [CheckResult(evidence=[_line(ev, key)] + ([_line(last, key)] if s.bad > 1 else []),
                                count=s.bad, numbers=numbers,
                                priority=int(params.get("fed_by_rewards_priority", 0)) if fed is not None else 0)]
    return []


def _rewards_non_finite_by(run: Run, record: int) -> str | None:
    """The raw key of a reward series (the step total or one function) non-finite in `record` or before it."""
    total = run.canon_summary("reward")
    for s in ([total] if total is not None else []) + list(run.fn_summaries().values()):
        if s.bad_first is not None and s.bad_first[0] <= record:
            return str(s.bad_first[2])
    return None


def _degenerate(values: dict[str, float], params: dict[str, Any]) -> str | None:
    """Why this record exercises no policy gradient, or None when it does (or cannot tell)."""
    for hi, lo in params.get("equal_pairs") or []:
        if hi in values and lo in values and values[hi] == values[lo]:
            return f"{hi} = {lo} = {values[hi]}"
    for key in params.get("zero_keys") or []:
        if key in values and values[key] == 0:
            return f"{key} = 0"
    for key in params.get("one_keys") or []:
        if key in values and values[key] >= 1:
            return f"{key} = {values[key]}"
    return None


def _telling_keys(params: dict[str, Any]) -> list[str]:
    """The keys `_degenerate` looks at: a record holding none of them cannot tell."""
    keys = [k for pair in params.get("equal_pairs") or [] for k in pair]
    return keys + list(params.get("zero_keys") or []) + list(params.get("one_keys") or [])


def _spread(run: Run, ev: Event) -> tuple[float, float] | None:
    """(min, max) of the step's sample rewards, when the record holds them."""
    lows, highs = run.once("reward_spreads", lambda r: ({id(e): v for e, v, _ in r.canon("reward_min")},
                                                        {id(e): v for e, v, _ in r.canon("reward_max")}))
    lo, hi = lows.get(id(ev)), highs.get(id(ev))
    return (lo, hi) if lo is not None and hi is not None else None


def no_policy_gradient(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Zero advantages or zero reward spread in every record, over at least `min_steps` records: a lifecycle
    pass, not training. One such step is healthy (a batch whose groups all saturated); it must persist, unless
    every record the log holds also shows grad_norm exactly 0 (no gradient measured, not only inferred).

    All-zero rewards are left to verifier.rewards-degenerate (same conclusion, a more specific cause)."""
    min_steps = int(params.get("min_steps", 3))
    telling = _telling_keys(params)
    records = run.holding(telling)
    if not records:
        return []
    reasons = [_degenerate(ev.fields["values"], params) for ev in records]
    if any(r is None for r in reasons):
        return []
    n = run.count_holding(telling)
    if n < min_steps:
        # Fewer records than a persistence test needs: enough only when each of them (all the log holds) also
        # measured no gradient at all, grad_norm exactly 0 (a saturated batch in a healthy run still has the
        # KL/entropy terms' gradient), which is the no-gradient conclusion observed, not inferred.
        norms = {id(ev): v for ev, v, _ in run.canon("grad_norm")}
        if any(norms.get(id(ev)) != 0 for ev in records):
            return []
    rewards = run.canon_summary("reward")
    if rewards is not None and not rewards.nonzero:
        return []
    first, last = records[0], records[-1]
    key = next(iter(first.fields["values"]))
    evidence = [_line(first, key)] + ([_line(last, key)] if last is not first else [])
    spreads = [s for ev in records if (s := _spread(run, ev)) is not None]
    reason = reasons[0]
    if spreads and any(hi > lo for lo, hi in spreads):
        lo, hi = min(s[0] for s in spreads), max(s[1] for s in spreads)
        why = (f"sample rewards ranged {lo:g}..{hi:g}, yet each group's samples scored alike (every group all "
               f"solved or all failed), so the group-relative advantages are zero")
    elif spreads:
        why = f"every sample scored {spreads[0][1]:g}"
    else:
        why = "the rewards within each group never differ"
    return [CheckResult(evidence=evidence, count=n,
                        numbers={"records": n, "reason": reason, "why": why,
                                 "arithmetic": f"{reason} in {n} of {n} records"
                                               f"{', grad_norm = 0 in each' if n < min_steps else ''}: {why}"})]


def publications(run: Run) -> tuple[int, int]:
    """(weight publications seen: timer ends and records timing one, lines showing one that failed)."""
    return run.once("publications", _publications)


def _publications(run: Run) -> tuple[int, int]:
    ok = failed = 0
    for ev, n in run.timers():
        if ev.fields.get("name") == "update_weights" and ev.fields.get("phase") == "end":
            if ev.fields.get("ok", True):
                ok += n
            else:
                failed += n
    return ok + run.count_holding(PUBLISH_KEYS), failed


def publication_missing(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Several training steps logged and no sign that weights ever reached the rollout engines. Only the records
    of `frameworks` (trainers that log every publication) count: where publishing leaves no line (TRL generating
    with the trained model, verl's hybrid engine resharding in place), its absence shows nothing."""
    min_steps = int(params.get("min_steps", 2))
    n, first, last = run.tag_records(TRAIN_TAGS, params.get("frameworks") or None)
    ok, failed = publications(run)
    if n < min_steps or first is None or last is None or ok or failed:
        return []
    evidence = [first.line] + ([last.line] if last is not first else [])
    return [CheckResult(evidence=evidence, count=n,
                        numbers={"train_records": n, "publications": 0,
                                 "arithmetic": f"0 publications in {n} training records"})]


def _first_value(values: dict[str, float], keys: list[str]) -> tuple[str, float] | None:
    for k in keys:
        if k in values and math.isfinite(values[k]):
            return k, values[k]
    return None


def _stage_times(run: Run, pattern: str) -> dict[str, float]:
    """Median seconds per stage: metric keys matching `pattern`, and the trainer's Timer end lines."""
    per: dict[str, list[float]] = {}
    if pattern:
        rx = re.compile(pattern)
        for k in sorted(k for k in run.metric_keys() if rx.fullmatch(k)):
            values = [v for _, v in run.series(k) if math.isfinite(v)]
            if values:
                per[k] = values
    medians = {k: median(vs) for k, vs in per.items()}
    timed: dict[str, Counter[float]] = {}
    for ev, n in run.timers():
        seconds = ev.fields.get("seconds")
        if seconds is not None:
            timed.setdefault(ev.fields["name"], Counter())[seconds] += n
    medians.update((f"Timer {name}", counted_median(counts)) for name, counts in timed.items())
    return {k: round(v, 3) for k, v in sorted(medians.items())}


def counted_median(counts: Counter[float]) -> float:
    """The median of values given with how many times each occurs (statistics.median of the values listed)."""
    total = sum(counts.values())
    first, second = (total + 1) // 2, total // 2 + 1  # 1-based places of the middle values (the same when odd)
    below, lower = 0, 0.0
    for v in sorted(counts):
        if below < first <= below + counts[v]:
            lower = v
        below += counts[v]
        if below >= second:
            return v if total % 2 else (lower + v) / 2
    raise ValueError("median of no values")


def run_summary(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """One info finding: what a useful run records, as far as the logs show it."""
    records = run.metrics()
    if not records:
        return []
    total = run.store().total
    numbers: dict[str, Any] = {"records": total}
    facts: list[str] = []
    for label, keys in (("reward", params.get("reward_keys") or []), ("grad_norm", params.get("grad_keys") or [])):
        keys = list(keys) + [k for k in run.aliases(label) if k not in keys]  # every framework's name for it
        found = [(k, s) for k in keys if (s := run.summary(k)) is not None and s.n]
        if found:
            # the name with the most records: a wandb run summary's one `train/grad_norm` row at the end must not
            # stand for the 47 `grad_norm` records of the console, 20 of them nan (real-extra 1260)
            key, s = max(found, key=lambda ks: ks[1].n)
            numbers[f"{label}_metric"] = key
            numbers[f"{label}_non_finite"] = s.bad
            if s.lo is not None and s.hi is not None:
                numbers[f"{label}_min"], numbers[f"{label}_max"] = s.lo[1], s.hi[1]
            facts.append(f"{label} {'finite' if not s.bad else f'{s.bad} non-finite'}")
    ok, failed = publications(run)
    numbers["publications"], numbers["publications_failed"] = ok, failed
    # an absence says nothing: most trainers (verl, TRL, OpenRLHF) never log a weight publication
    facts += [f"publication {what} ×{n}" for what, n in (("seen", ok), ("failed", failed)) if n]
    length_keys = list(params.get("length_keys") or [])
    length_keys += [k for k in run.aliases("response_length_max") if k not in length_keys]
    lengths = [m for ev in run.holding(length_keys) if (m := _first_value(ev.fields["values"], length_keys))]
    if lengths:
        numbers["response_length_metric"] = lengths[0][0]
        numbers["response_length_max"] = max(v for _, v in lengths)
        cap = run.config.setting("inference.max_response_length") if run.config else None
        if cap is not None:
            numbers["response_cap"] = cap.value
            facts.append(f"longest response {numbers['response_length_max']:g} of cap {cap.value}")
        else:
            facts.append(f"longest response {numbers['response_length_max']:g}")
    stages = _stage_times(run, str(params.get("stage_pattern") or ""))
    if stages:
        numbers["stage_seconds"] = stages
    if not facts:  # an SFT or eval log: metric lines, none of the keys a useful RL run records
        facts.append(f"{total} metric records, no reward, gradient norm or response length among them")
    numbers["arithmetic"] = ", ".join(facts)
    evidence = [records[0].line] + ([records[-1].line] if len(records) > 1 else [])
    return [CheckResult(evidence=evidence, count=total, numbers=numbers)]


def _below_cap(ev: Event, max_keys: list[str], cap: Any) -> bool:
    """Whether the record's longest response is shorter than the configured response cap."""
    longest = _first_value(ev.fields["values"], max_keys)
    try:
        limit = float(cap.value) if cap is not None else 0.0
    except (TypeError, ValueError):
        return False
    return longest is not None and limit > 0 and longest[1] < limit


GROWING = 1.5  # a last third's cap-hit share this many times the earlier records' is a run growing into its cap


def _granularity(values: list[float], most: int) -> int | None:
    """The smallest N <= `most` such that every ratio is a whole number of 1/N (the fewest completions a step that
    could give these ratios), or None."""
    for n in range(1, most + 1):
        if all(abs(v * n - round(v * n)) < 1e-6 for v in values):
            return n
    return None


def cap_hits(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """A share of responses at the response cap of at least `min` (a clip or truncation ratio), with the
    length distribution and the configured cap beside it."""
    found = over_threshold(params, run)
    if not found:
        return []
    key, over, count = found
    cap = run.config.setting("inference.max_response_length") if run.config else None
    max_keys = list(params.get("max_keys") or [])
    # A record whose longest response is shorter than the configured cap has no response at that cap, whatever its
    # ratio says: verl's V1 trainer (trainer.use_v1, the default from 2026) measures response_length/clip_ratio
    # against the batch's padded width, i.e. its longest response, so the ratio is never 0 (verl#7817, #7821).
    kept = [(ev, v) for ev, v in over if not _below_cap(ev, max_keys, cap)]
    if not kept:
        return []
    if len(kept) < len(over):
        count = max(len(kept), round(count * len(kept) / len(over)))
        over = kept
    result = threshold_result(params, key, over, count)
    worst_ev, worst = max(over, key=lambda ev_v: ev_v[1])
    values = worst_ev.fields["values"]
    longest = _first_value(values, max_keys)
    mean = _first_value(values, list(params.get("mean_keys") or []))
    numbers = result.numbers
    if longest:
        numbers["response_length_max"] = longest[1]
    if mean:
        numbers["response_length_mean"] = mean[1]
    if cap is not None:
        numbers["response_cap"], numbers["cap_source"] = cap.value, cap.source
    elif longest:
        numbers["response_cap"], numbers["cap_source"] = longest[1], f"{longest[0]} (the longest response)"
    text = f"{100 * worst:.1f}% of responses at the cap"
    if "response_cap" in numbers:
        text += f" of {numbers['response_cap']:g} tokens"
    if mean:
        text += f", mean length {mean[1]:g}"
    # Cap hits that stopped: the run's last `resolved_after` records of the key all below the threshold (the
    # policy learned to finish inside the cap, or the cap was raised on resume). What it was is worth knowing;
    # it is not the run's problem now.
    after = int(params.get("resolved_after") or 0)
    history = run.series(key)

    def stopped(after: int) -> list[CheckResult]:
        recent = history[-after:] if after else []
        if len(recent) == after > 0 and all(v < result.numbers["threshold"] or _below_cap(ev, max_keys, cap)
                                            for ev, v in recent):
            numbers["recent_max"] = max(v for _, v in recent)
            numbers["arithmetic"] = (f"{text} at worst; at most {100 * numbers['recent_max']:.1f}% over the last "
                                     f"{after} records")
            result.severity = "info"
            result.title = "Responses hit the response-length cap early, then stopped ({arithmetic})"
            return [result]
        return []

    if stopped(after):
        return [result]
    # One step at the threshold among many records below it is a few long answers, not a run that keeps hitting
    # its cap (a healthy TRL GRPO run: one record of 40 at exactly 0.2, real-extra 990): information, with the count
    # of records in the title. Two or more such steps, or a short paste (fewer than `sparse_records`), keep the warning.
    summary = run.summary(key)
    records = summary.n if summary is not None else len(run.series(key))
    if records >= int(params.get("sparse_records") or 0) > 0 and count <= int(params.get("isolated_max") or 0):
        numbers["records"] = records
        numbers["arithmetic"] = f"{text}, on {count} of {records} records"
        result.severity = "info"
        result.title = "Responses hit the response-length cap on an isolated step ({arithmetic})"
        return [result]
    # A run shorter than `resolved_after`: its last third, once it has `resolved_min` records (a verl PPO run of 45
    # steps whose first 15 put 55-64% of responses at the cap and whose last 15 stay at 7-12%, real-extra 2231).
    least = int(params.get("resolved_min") or 0)
    if after and least > 0 and least <= len(history) < after and stopped(len(history) // 3):
        return [result]
    # A ratio that only ever moves in steps of 1/N for a small N (0, 0.25, 0.5: 4 completions a step) counts one or
    # two completions per hit. Over the threshold on a minority of such records while the share pooled over all of
    # them stays under it is a few long answers, not a run that keeps hitting its cap (a TRL GRPO run: 2 and 1 of 4
    # capped on 2 of 5 records, 15% pooled, real-extra 1388). Information, with the pooled share.
    pooled_min = int(params.get("pooled_records") or 0)
    series = [v for _, v in run.series(key) if math.isfinite(v)]
    per_step = _granularity(series, int(params.get("few_completions") or 0))
    # The same with larger batches (24 completions a record: 0.29 is 7 of them), once the run has `settled_records`
    # records: a minority over the threshold, the pooled share under it, and the last third's pooled share under it
    # too (the hits are not where the run ends up): a healthy TRL GRPO run, 20 of 133 records at 0.2-0.33, 11.5%
    # pooled (real-extra 2255); a verl video GRPO whose first steps put 69-75% at a 256 cap and whose last third puts
    # none (2265, 19 records). Responses growing into the cap stay a warning: a last third whose share is over
    # GROWING times the share of the records before it (verl ReTool, 0.5% a step early, 15-22% at the end, 993).
    tail = series[-(len(series) // 3):] if len(series) >= 3 else series
    head = series[:len(series) - len(tail)]
    settled = (bool(tail) and bool(head) and 0 < int(params.get("settled_records") or 0) <= len(series)
               and sum(tail) / len(tail) < result.numbers["threshold"]
               and sum(tail) / len(tail) <= GROWING * sum(head) / len(head))
    if pooled_min and (per_step or settled) and len(series) >= pooled_min and 2 * count < len(series):
        pooled = sum(series) / len(series)
        if pooled < result.numbers["threshold"]:
            numbers["records"], numbers["pooled_share"] = len(series), round(pooled, 4)
            if per_step:
                numbers["ratio_step"] = f"1/{per_step}"
                numbers["arithmetic"] = (f"{text}, on {count} of {len(series)} records moving in steps of "
                                         f"1/{per_step}; {100 * pooled:.1f}% over all of them")
            else:
                late = sum(tail) / len(tail)
                numbers["late_share"] = round(late, 4)
                numbers["arithmetic"] = (f"{text}, on {count} of {len(series)} records; {100 * pooled:.1f}% over all "
                                         f"of them, {100 * late:.1f}% over the last {len(tail)}")
            result.severity = "info"
            result.title = "Responses hit the response-length cap on a few steps ({arithmetic})"
            return [result]
    numbers["arithmetic"] = text
    return [result]
