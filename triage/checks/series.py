"""Run-health checks on the canonical trainer series (parsers/vocabulary.py), whatever framework printed them:
all rewards zero, policy collapse, responses that never end (no EOS, mean length at the cap), step time that
grows or stalls, a generation bar minutes per prompt.
"""

from __future__ import annotations

import math
import re
from statistics import median
from typing import Any

from triage.checks.base import CheckResult, Run
from triage.checks.metrics import _line
from triage.model import Event, Line
from triage.parsers.series_store import SHARE, TOP, Summary

Point = tuple[Event, float, str]  # (record, value, raw key)


def _ev(points: list[Point], *which: int) -> list[Line]:
    """Evidence lines of the points at these positions (each line once)."""
    out: list[Line] = []
    for i in which:
        ev, _, key = points[i]
        line = _line(ev, key)
        if all(line is not o for o in out):
            out.append(line)
    return out


def _cap(run: Run) -> tuple[Any, str] | None:
    setting = run.config.setting("inference.max_response_length") if run.config else None
    return (setting.value, setting.source) if setting is not None and isinstance(setting.value, (int, float)) else None


def _at(points: list[Point], ev: Event) -> float | None:
    for e, v, _ in points:
        if e is ev:
            return v
    return None


def _ends(run: Run, s: Summary) -> list[Line]:
    """Evidence lines of a summary's first and last points (each line once)."""
    assert s.first is not None and s.last is not None
    first, last = run.point(s.first), run.point(s.last)
    return _ev([first, last], 0, 1)


# -- rewards ------------------------------------------------------------------------------------------------

def _no_gradient(run: Run, records: dict[int, Event]) -> bool:
    """Every record holds grad_norm exactly 0."""
    norms = {id(ev): v for ev, v, _ in run.canon("grad_norm")}
    return all(norms.get(k) == 0 for k in records)


def rewards_all_zero(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Rewards NaN/inf in any series (error), or exactly zero in every record of every reward series: the step
    total and each reward function (warning: no policy gradient). Zero must persist: `min_steps` records, or
    two records in which two or more reward functions are all zero, or a closing run summary (wandb) whose
    reward max is zero (every sample of the last step scored 0), or records (one is enough) whose reward std and
    grad_norm are both exactly 0 (no gradient measured, not only inferred), or a step record (one is enough) that
    counts at least `min_unsolved_prompts` prompts none of whose samples scored, none solved, and a batch reward
    max of 0: a whole large batch credited nothing, which a hard task alone does not explain; or a record (one is
    enough) whose share of zero-std groups is 1 while reward_std is 0 and two or more reward functions are all 0. Counts, non-finite values and
    "every value zero" come from the exact summaries (series_store.Summary), whatever the log's length."""
    min_steps = int(params.get("min_steps", 3))
    total = run.canon_summary("reward")
    fns = run.fn_summaries()
    groups = ([("reward", total)] if total is not None else []) + sorted(fns.items())
    for _, s in groups:
        if s.bad_first is not None:
            ev, v, key = run.point(s.bad_first)
            arithmetic = f"{key} = {v} in {s.bad} of {s.n} records"
            return [CheckResult(evidence=[_line(ev, key)], count=s.bad, severity="error",
                                numbers={"metric": key, "non_finite": s.bad, "records": s.n,
                                         "arithmetic": arithmetic},
                                title=f"Rewards are not finite ({arithmetic})")]
    if not groups or any(s.nonzero for _, s in groups):
        return []
    n = run.count_holding(run.reward_keys())
    viewed = {id(ev): ev for ev in run.holding(run.reward_keys())}
    maxima = run.canon("reward_max")
    summary_zero = any(ev.fields.get("tag") == "summary" and _at(maxima, ev) == 0 for ev in viewed.values())
    spread = run.canon_summary("reward_std")
    no_spread = spread is not None and spread.n > 0 and not spread.nonzero
    min_unsolved = int(params.get("min_unsolved_prompts", 64))
    solved = {id(ev): v for ev, v, _ in run.canon("solved_prompts")}
    broad = [(ev, v, k) for ev, v, k in run.canon("unsolved_prompts")
             if id(ev) in viewed and v >= min_unsolved and solved.get(id(ev), 0) == 0 and _at(maxima, ev) == 0]
    # a record whose share of zero-std groups is 1 (TRL frac_reward_zero_std, Video-R1's zero_var_ratio): every
    # prompt group's samples scored alike; with reward_std 0 and two or more reward functions (the lenient format
    # reward among them) all 0, the whole batch was credited nothing by any function (Video-R1 issue 86)
    flat = [(ev, v, k) for ev, v, k in run.canon("frac_reward_zero_std") if id(ev) in viewed and v >= 1.0] \
        if no_spread and len(fns) >= 2 else []
    if not (n >= min_steps or (n >= 2 and len(fns) >= 2) or summary_zero or broad or flat
            or (no_spread and _no_gradient(run, viewed))):  # the update measured no gradient at all
        return []
    first = groups[0][1]
    assert first.first is not None
    key = first.first[2]
    names = [fn for fn, _ in sorted(fns.items())]
    arithmetic = f"{key} = 0 in {first.n} of {first.n} records"
    if names:
        arithmetic += f"; {len(names)} reward function{'s' if len(names) > 1 else ''} all 0 ({', '.join(names[:6])})"
    if summary_zero and n < min_steps:
        arithmetic += "; the run summary's reward max is 0: every sample of the last step scored 0"
    if flat and n < min_steps and not summary_zero and not broad:
        arithmetic += (f"; {flat[0][2]} = {flat[0][1]:g} with reward_std 0: every prompt group's samples scored "
                       "alike, and every function gave 0")
    if broad and n < min_steps and not summary_zero:
        arithmetic += (f"; {broad[0][2]} = {broad[0][1]:g} with a reward max of 0: none of the step's "
                       f"{broad[0][1]:g} prompts got a nonzero score from any sample")
    numbers: dict[str, Any] = {"metric": key, "records": n, "all": 0.0, "reward_functions": names,
                               "arithmetic": arithmetic}
    evidence = _ends(run, first)
    for ev, v, k in maxima:
        if summary_zero and id(ev) in viewed and v == 0 and all(_line(ev, k) is not e for e in evidence):
            evidence.append(_line(ev, k))  # the summary's max: every sample of the last step scored 0
            break
    return [CheckResult(evidence=evidence, count=n, numbers=numbers,
                        title=f"Every reward is zero: lifecycle pass, no policy gradient exercised ({arithmetic})")]


_EVAL_FN = re.compile(r"eval[_/]rewards/(?P<fn>[^/]+?)(?:/mean)?")


def reward_function_constant(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """One reward function's mean is the same value, strictly between 0 and 1, in every record that prints it
    (train records, and the trainer's eval records of the same function: `eval_rewards/<fn>`), at least
    `min_records` of them, while the step's total reward moves: the function gives every batch the same score
    whatever the completions say. A grader that falls back to a fixed "neutral" score when it cannot read the
    reference does this (the open-r1-derived accuracy_reward returns 0.5 when math_verify cannot parse the gold
    solution: real-extra 1844). 0 and 1 are left out: a function pinned at a bound can be a hard task or a learned
    format (an all-zero run is rewards_all_zero's)."""
    min_records = int(params.get("min_records", 3))
    total = run.canon_summary("reward")
    if total is None or total.lo is None or total.hi is None or total.hi[1] - total.lo[1] <= 1e-9:
        return []  # no moving total: nothing says the records are different batches
    evals: dict[str, list[Any]] = {}
    for key, s in run.store().sums.items():
        m = _EVAL_FN.fullmatch(key)
        if m and s.lo is not None and s.hi is not None:
            evals.setdefault(m["fn"], []).append(s)
    out: list[CheckResult] = []
    for fn, s in sorted(run.fn_summaries().items()):
        if s.lo is None or s.hi is None or s.bad or s.hi[1] != s.lo[1]:
            continue
        value = s.lo[1]
        if not 0 < abs(value) < 1:
            continue
        extra = [e for e in evals.get(fn, ()) if e.lo[1] == value and e.hi[1] == value and not e.bad]
        if any(e.lo[1] != value or e.hi[1] != value for e in evals.get(fn, ())):
            continue  # the eval batches score differently: the function does read the completions
        n = s.n + sum(e.n for e in extra)
        if n < min_records:
            continue
        assert s.first is not None and s.last is not None
        key = s.first[2]
        evidence = _ends(run, s)
        for e in extra:
            if e.first is not None:
                ev, _, k = run.point(e.first)
                line = _line(ev, k)
                if all(line is not o for o in evidence):
                    evidence.append(line)
        arithmetic = (f"{key} = {value:g} in {s.n} of {s.n} records"
                      + (f" and in {sum(e.n for e in extra)} eval records" if extra else "")
                      + f" while {total.first[2] if total.first else 'reward'} moved "
                      f"{total.lo[1]:.4g}..{total.hi[1]:.4g}")
        out.append(CheckResult(evidence=evidence, count=n,
                               numbers={"metric": key, "reward_function": fn, "value": value, "records": n,
                                        "arithmetic": arithmetic},
                               title=f"Reward function {fn} scores every batch {value:g} ({arithmetic})"))
    return out[:1]


# -- collapse -----------------------------------------------------------------------------------------------

def policy_collapse(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The last `min_steps` records: reward constant, and the response length and the entropy each collapsed
    (at most `ratio` of their median over the earlier records or over the run's first `min_steps` records, or
    near-zero entropy). The first records count on their own: a policy that collapsed early and stayed collapsed
    for hundreds of steps has a collapsed median (real-extra 714: verl, 1,760-token responses for a few steps,
    then one token for 250 steps)."""
    min_steps = int(params.get("min_steps", 5))
    ratio = float(params.get("ratio", 0.25))
    rewards = run.canon("reward")  # the last records are always in view (series_store.TAIL)
    if len(rewards) < 2 * min_steps:
        return []
    tail = rewards[-min_steps:]
    values = [v for _, v, _ in tail]
    if not all(math.isfinite(v) for v in values) or max(values) - min(values) > 1e-9 or values[0] == 0:
        return []  # all-zero rewards are rewards_all_zero's
    start = tail[0][0]
    facts = [f"{tail[0][2]} = {values[0]:g} for the last {min_steps} records"]
    collapsed = 0
    for name, floor in (("response_length", 1.0), ("entropy", float(params.get("entropy_floor", 0.01)))):
        series = run.canon(name)
        i = next((j for j, p in enumerate(series) if p[0] is start), None)
        if i is None or i < 2:
            continue
        before = [v for _, v, _ in series[:i] if math.isfinite(v)]
        if not before:
            return []
        early = max(median(before), median(before[:min_steps]))
        late = [v for _, v, _ in series[i:]]
        if early > 0 and (max(late) <= ratio * early or (name == "entropy" and max(late) <= floor)):
            collapsed += 1
            facts.append(f"{series[i][2]} {early:g} -> {late[-1]:g}")
        else:
            return []
    if collapsed < int(params.get("min_collapsed", 1)):
        return []
    arithmetic = "; ".join(facts)
    return [CheckResult(evidence=_ev(tail, 0, -1), count=min_steps,
                        numbers={"records": min_steps, "reward": values[0], "arithmetic": arithmetic})]


def response_collapse(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The responses shrank to a sliver of their early length and stayed there while the reward did not improve:
    in each of the last `min_steps` records the mean response length is at most `ratio` of its median over the
    run's first `min_steps` records (or over all the earlier ones, whichever is larger) and at most `max_tokens`,
    and the reward's mean over those records is no better than its early median. The policy settled on near-empty
    answers that score no better (real-extra 1270: verl, ~950 tokens, then 9-12 tokens for 19 steps as the score
    fell from -0.55 to -0.9; the entropy did not fall, so policy_collapse, which needs a constant reward and a
    collapsed entropy, does not see it). A constant reward is policy_collapse's case."""
    min_steps = int(params.get("min_steps", 5))
    ratio = float(params.get("ratio", 0.05))
    lengths = [p for p in run.canon("response_length") if math.isfinite(p[1])]
    if len(lengths) < 2 * min_steps:
        return []
    tail, before = lengths[-min_steps:], lengths[:-min_steps]
    early = max(median(v for _, v, _ in before), median(v for _, v, _ in lengths[:min_steps]))
    late = max(v for _, v, _ in tail)
    if early <= 0 or late > ratio * early or late > float(params.get("max_tokens", 64)):
        return []
    reward_of = {id(ev): (v, key) for ev, v, key in run.canon("reward") if math.isfinite(v)}
    late_rewards = [reward_of[id(ev)][0] for ev, _, _ in tail if id(ev) in reward_of]
    early_rewards = [reward_of[id(ev)][0] for ev, _, _ in before if id(ev) in reward_of]
    if len(late_rewards) < min_steps or not early_rewards:
        return []  # no reward beside the lengths: a shorter answer may be the better one
    if max(late_rewards) - min(late_rewards) <= 1e-9:
        return []  # constant: policy_collapse's
    reward_early, reward_late = median(early_rewards), sum(late_rewards) / len(late_rewards)
    if reward_late > reward_early:
        return []  # the short answers score better: the policy learned to be brief
    reward_key = next(reward_of[id(ev)][1] for ev, _, _ in tail if id(ev) in reward_of)
    arithmetic = (f"{tail[0][2]} {early:g} -> at most {late:g} in the last {min_steps} records; "
                  f"{reward_key} {reward_early:.4g} -> {reward_late:.4g}")
    return [CheckResult(evidence=_ev(tail, 0, -1), count=min_steps,
                        numbers={"records": min_steps, "length_early": early, "length_late": late,
                                 "reward_early": reward_early, "reward_late": reward_late,
                                 "arithmetic": arithmetic})]


# -- the response cap -----------------------------------------------------------------------------------------

def no_eos(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Not one response ended with EOS in any of at least `min_steps` records: every response ran to the cap."""
    s = run.canon_summary("num_eos")
    if s is None or s.first is None or s.n < int(params.get("min_steps", 2)) or s.nonzero:
        return []
    key = s.first[2]
    arithmetic = f"{key} = 0 in {s.n} of {s.n} records"
    numbers: dict[str, Any] = {"metric": key, "records": s.n, "arithmetic": arithmetic}
    cap = _cap(run)
    if cap:
        numbers["response_cap"], numbers["cap_source"] = cap
        numbers["arithmetic"] += f": every response ran to the cap of {cap[0]} tokens"
    else:
        numbers["arithmetic"] += ": every response ran to the response cap"
    return [CheckResult(evidence=_ends(run, s), count=s.n, numbers=numbers)]


def mean_length_at_cap(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The mean response length is at least `min_share` of the cap in at least `min_steps` records (the cap as
    configured, else the step's longest response when it is the run's longest: a step whose responses are all one
    token long, in a run whose responses reached 8,096, collapsed; it was not cut at a cap): nearly every response
    was cut."""
    share = float(params.get("min_share", 0.95))
    cap = _cap(run)
    longest = {id(ev): v for ev, v, _ in run.canon("response_length_max")}
    s_max = run.canon_summary("response_length_max")
    run_longest = s_max.hi[1] if s_max is not None and s_max.hi is not None else 0.0
    hits: list[tuple[Point, float, str]] = []
    means = run.canon("response_length")
    for p in means:
        limit, source = (float(cap[0]), cap[1]) if cap else (longest.get(id(p[0])) or 0.0, "the longest response")
        if not cap and limit < share * run_longest:
            continue  # this step's longest response is far below the run's: not a cap
        if limit > 0 and math.isfinite(p[1]) and p[1] >= share * limit:
            hits.append((p, limit, source))
    s = run.canon_summary("response_length")
    if not cap and s_max is None and s is not None:
        hits = _pinned_at_ceiling(params, means, s)
    if not cap and hits and _never_clipped(run):
        return []
    near = run.canon_summary(SHARE)  # every record at `share` of its longest response is in view unless TOP are
    if s is not None and (cap or near is None or (len(near.top) == TOP and near.top[0][0] >= share)):
        count = run.scaled([p[0] for p, _, _ in hits], [p[0] for p in means], s.n)  # more than the view holds
    else:
        count = len(hits)
    if count < int(params.get("min_steps", 2)):
        return []
    points = [h[0] for h in hits]
    (ev, mean, key), limit, source = hits[-1]
    arithmetic = (f"mean {key} {mean:g} = {100 * mean / limit:.0f}% of the cap {limit:g} ({source}) "
                  f"in {count} records")
    result = CheckResult(evidence=_ev(points, 0, -1), count=count,
                         numbers={"metric": key, "mean": mean, "response_cap": limit, "cap_source": source,
                                  "records": count, "arithmetic": arithmetic})
    # Hits that stopped: the run's last `resolved_after` records (a shorter run's last third, from `resolved_min`
    # records on) all under `min_share` of the cap. A verl GRPO run whose first 6 of 435 steps ran to its 192-token
    # cap and whose policy then learned to answer inside it (real-extra 2230): what it was, not the run's problem.
    after = int(params.get("resolved_after") or 0)
    if after and len(means) < after and len(means) >= int(params.get("resolved_min") or 0) > 0:
        after = len(means) // 3
    recent = means[-after:] if after else []
    ceiling = float(cap[0]) if cap else run_longest
    if len(recent) == after > 0 and ceiling > 0 and all(math.isfinite(v) and v < share * ceiling
                                                        for _, v, _ in recent):
        top = max(v for _, v, _ in recent)
        result.numbers["recent_max"] = top
        result.numbers["arithmetic"] = (f"{arithmetic} at the start; at most {100 * top / ceiling:.0f}% of it "
                                        f"over the last {after} records")
        result.severity = "info"
        result.title = "Mean response length at the cap early, then below it ({arithmetic})"
        return [result]
    # Hits that are a few scattered records of a long run: at least `sparse_records` records, fewer than
    # `sparse_share` of them at the cap, and no more than that share of the last third either (hits gathering at the
    # end are a late collapse, not scatter). A TRL GRPO run whose records are one prompt's 8 completions each puts a
    # record at its 128-token cap whenever one prompt's answers all run on: 34 of 2,400 records, spread from the
    # first hundred to the last (real-extra 2387, a finished run); the responses of the run were not cut.
    sparse = int(params.get("sparse_records") or 0)
    total = s.n if s is not None else len(means)
    sparse_share = float(params.get("sparse_share") or 0.0)
    if sparse and total >= sparse and count < sparse_share * total and means:
        third = means[-max(len(means) // 3, 1):]
        late = {id(p[0]) for p in third}
        late_hits = sum(1 for p, _, _ in hits if id(p[0]) in late)
        if late_hits < sparse_share * len(third):
            result.numbers["arithmetic"] = f"{arithmetic} of {total} ({100 * count / total:.1f}%), spread over the run"
            result.severity = "info"
            result.title = "Mean response length at the cap on a few records ({arithmetic})"
    return [result]


def _never_clipped(run: Run) -> bool:
    """The run reports its clip ratio and no record has any response clipped (verl `response_length/clip_ratio:0.0`
    on each of 300 steps whose responses are all 17-20 tokens, a fixed-format agent answer, real-extra 1888; TRL
    `completions/clipped_ratio: 0.0`): the step's longest response is then no cap, and a mean equal to it is responses
    of one length, not responses cut."""
    s = run.canon_summary("clip_ratio")
    return s is not None and s.n > 0 and s.nonzero == 0


def _pinned_at_ceiling(params: dict[str, Any], means: list[Point], s: Summary) -> list[tuple[Point, float, str]]:
    """With neither a configured cap nor a per-step longest response (TRL < 0.14 prints only `completion_length`,
    the step's mean): the records whose mean sits at the run's highest mean, when nearly all of them do. Means of
    sampled responses vary from step to step; a mean that returns to the same highest value record after record
    is every response cut at one length, the cap (a Qwen3.5-9B GRPO run on GSM8K: `'completion_length': '128'` in
    99 of 100 records, 127.8 in the other). A mean pinned at the run's lowest value is no cap (a collapse to
    one-token answers); short pinned means (a fixed-format answer) are not either."""
    if s.hi is None or s.n < int(params.get("min_pinned_records", 10)):
        return []
    ceiling = s.hi[1]
    if ceiling < float(params.get("min_pinned_tokens", 32)):
        return []
    tol = float(params.get("pinned_tolerance", 0.005)) * ceiling
    pinned = [p for p in means if math.isfinite(p[1]) and p[1] >= ceiling - tol]
    if len(pinned) < float(params.get("min_pinned_share", 0.9)) * len(means):
        return []
    return [(p, ceiling, "the mean's own ceiling, held record after record") for p in pinned]


# -- step time ------------------------------------------------------------------------------------------------

def _groups(series: list[Point]) -> dict[tuple[Any, ...], list[Point]]:
    """One series per printer: a tqdm bar is its own (its description), a framework's step records another."""
    out: dict[tuple[Any, ...], list[Point]] = {}
    for p in series:
        f = p[0].fields
        key = (p[0].line.file, f["framework"], f["tag"] if f["framework"] == "tqdm" else "", p[2])
        if math.isfinite(p[1]) and p[1] > 0:
            out.setdefault(key, []).append(p)
    return out


def step_time_trend(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Step time growing (every step of the last third at least `growth` x every one of the first third) or one warm step
    stalled (at least `stall` x the median of the other warm steps), and at least `min_seconds` either way."""
    growth = float(params.get("growth", 5.0))
    stall = float(params.get("stall", 8.0))
    min_seconds = float(params.get("min_seconds", 60.0))
    min_points = int(params.get("min_points", 4))
    words = tuple(params.get("generation_bars") or GENERATION_BARS)
    steps = [p for p in run.canon("step_time") if not _generation_bar(p[0], words)]  # slow_generation's
    for points in _groups(steps).values():
        if len(points) < min_points:
            continue
        values = [v for _, v, _ in points]
        k = max(2, len(values) // 3)
        early, late = median(values[:k]), median(values[-k:])
        sustained = min(values[-k:]) >= growth * max(values[:k])  # a single late spike is a stall, not growth
        key = points[0][2]
        f = points[0][0].fields
        label = f"'{f['tag']}' seconds per iteration" if f["framework"] == "tqdm" else key
        if late >= min_seconds and sustained:
            arithmetic = f"{label} {early:g} s -> {late:g} s ({late / early:.1f}x) over {len(values)} records"
            peak = max(range(len(values)), key=values.__getitem__)
            return [CheckResult(evidence=_ev(points, 0, peak), count=len(values),
                                numbers={"metric": key, "early_median": round(early, 3), "late_median": round(late, 3),
                                         "ratio": round(late / early, 2), "records": len(values),
                                         "arithmetic": arithmetic},
                                title=f"Step time grew {late / early:.0f}x during the run ({arithmetic})")]
        warm = values[1:]
        worst = max(range(len(warm)), key=warm.__getitem__)
        rest = warm[:worst] + warm[worst + 1:]
        base = median(rest) if rest else 0.0
        if base > 0 and _slow_prefix(values, worst + 1, stall * base):
            continue  # the run's first steps were all slow: a warm-up (or a regime that ended), not one stalled step
        if _closing_iteration(points, worst + 1):
            continue  # the bar's last update of a finished run carries the end-of-run work, not a training step
        if base > 0 and warm[worst] >= max(min_seconds, stall * base) and _waited(points, worst + 1, min_seconds):
            arithmetic = f"{label} {warm[worst]:g} s against a median of {base:g} s ({warm[worst] / base:.1f}x)"
            return [CheckResult(evidence=_ev(points, worst + 1), count=1,
                                numbers={"metric": key, "seconds": warm[worst], "median": base,
                                         "ratio": round(warm[worst] / base, 2), "arithmetic": arithmetic},
                                title=f"One step stalled far beyond the others ({arithmetic})")]
    return []


def _slow_prefix(values: list[float], i: int, slow: float) -> bool:
    """Whether the step at `i` is the end of a run of slow steps that began with the first one, none of them far
    above the first: a TRL bar whose first two iterations took 11 and 7 minutes (first-time kernels) before 98 took
    37 s each, a verl run whose steps fell from 427 s to 38 s as its responses collapsed from 1,760 tokens to one.
    Each step of such a prefix is slow against the later median, but none stalled among fast neighbours."""
    return i >= 1 and all(v >= slow for v in values[:i + 1]) and values[i] <= 2.0 * values[0]


def _closing_iteration(points: list[Point], i: int) -> bool:
    """Whether the record at `i` is a progress bar's last record and the bar reached its total (`300/300`): trainers
    run their end-of-run work before that last update (verl's final validation and checkpoint save: `Training
    Progress: 100%| 300/300 [4:15:33<00:00, 1556.49s/it]` after steps of ~34 s, the final `timing_s/testing` 5059 s,
    real-extra 1888; the HF Trainer's last save), so its rate measures the run's closing, not a stalled step."""
    if i != len(points) - 1:
        return False
    values = points[i][0].fields.get("values") or {}
    total = values.get("total")
    return bool(total) and values.get("n") == total


def _waited(points: list[Point], i: int, min_seconds: float) -> bool:
    """Whether the step at `i` took `min_seconds` of the bar's own clock: a tqdm bar prints its elapsed time, and a
    rate over one long wait that several iterations ended together (a benchmark client's bar over concurrent
    requests: 1/576 at 181 s/it, 2/576 at 74.8 s/it, both at 03:01) is no stalled step. Records without a clock
    count as waited."""
    now, before = points[i][0].fields.get("values") or {}, points[i - 1][0].fields.get("values") or {}
    if "elapsed_s" not in now or "elapsed_s" not in before:
        return True
    return now["elapsed_s"] - before["elapsed_s"] >= min_seconds


def _generation_bar(ev: Event, words: tuple[str, ...]) -> bool:
    """A progress bar over prompts being generated (vLLM's carries token speeds), not over training steps."""
    f = ev.fields
    return f["framework"] == "tqdm" and ("output_toks_s" in f["values"] or any(w in f["tag"] for w in words))


GENERATION_BARS = ("Processed prompts", "Generat", "generat", "rollout", "Rollout", "Sampling", "sampling")


def slow_generation(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """A generation progress bar (vLLM `Processed prompts`, with its token speeds) that has run at least
    `min_elapsed` seconds and averages `min_seconds` or more per finished prompt (elapsed / done: the bar's own
    s/it is smoothed and its first redraws wait on a whole batch): responses run for minutes; output speed far
    above input speed says they are long. A bar whose output speed shows short responses (vLLM's `output: X toks/s`
    is the finished requests' tokens over the elapsed time, so X * elapsed / done is the mean response of a finished
    prompt) below `min_tokens_per_prompt` is an engine decoding slowly, not a tail of long generations: vLLM 0.14
    on ROCm, 256-token responses at 0.15 tok/s while its Triton AWQ kernels were still being tuned (real-extra
    1705), against 38,900-token responses at 171 s/it (corpus 139)."""
    min_seconds = float(params.get("min_seconds", 60.0))
    min_elapsed = float(params.get("min_elapsed", 600.0))
    min_tokens = float(params.get("min_tokens_per_prompt", 1024.0))
    words = tuple(params.get("bars") or GENERATION_BARS)
    worst: tuple[float, Point] | None = None
    count = 0
    for p in run.canon("step_time"):
        ev = p[0]
        if not _generation_bar(ev, words):
            continue
        values = ev.fields["values"]
        elapsed, done = values.get("elapsed_s", 0.0), values.get("n", 0.0)
        out = values.get("output_toks_s")
        if out is not None and done > 0 and out * elapsed / done < min_tokens:
            continue
        if done > 0 and elapsed >= min_elapsed and elapsed / done >= min_seconds:
            count += 1
            if worst is None or elapsed / done > worst[0]:
                worst = (elapsed / done, p)
    if worst is None:
        return []
    per, (ev, v, key) = worst
    values = ev.fields["values"]
    arithmetic = (f"{values['n']:g} of {values['total']:g} prompts done in {values['elapsed_s']:g} s = {per:.0f} s per "
                  f"prompt in '{ev.fields['tag']}' (bar rate {v:g} s/it)")
    numbers: dict[str, Any] = {"seconds_per_prompt": round(per, 2), "bar_seconds_per_it": v, "done": values["n"],
                               "total": values["total"], "elapsed_s": values["elapsed_s"]}
    i, o = values.get("input_toks_s"), values.get("output_toks_s")
    if i and o:
        numbers["input_toks_s"], numbers["output_toks_s"] = i, o
        arithmetic += f"; output {o:g} tok/s against input {i:g} tok/s: responses ~{o / i:.0f}x the prompt length"
    numbers["arithmetic"] = arithmetic
    return [CheckResult(evidence=[_line(ev, key)], count=count, numbers=numbers)]
