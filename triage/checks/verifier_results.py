"""Checks over per-sample verifier and judge result files (triage/parsers/results.py): how many samples timed
out or errored, whether the rewards carry any signal, where the latency tail sits against the verifier's
timeout, and which judge calls could not fit their context. Every rate is counted over the file's rows and
the evidence is the first affected rows, each at its own line.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from triage.checks.base import CheckResult, Run
from triage.model import Line
from triage.parsers.results import EMPTY, ERROR_STATUS, PROGRAM_STATUS, TIMEOUT_TEXT, Table, as_float
from triage.template import template

TIMEOUT_RX = re.compile(TIMEOUT_TEXT)
CONTEXT_RX = re.compile(r"(?i)maximum context length|context[ _-]?(?:length|window)|context_length_exceeded|"
                        r"too many tokens|prompt is too long|input (?:is )?too long|exceeds? (?:the )?(?:model'?s? )?"
                        r"(?:max(?:imum)?|context)|longer than the maximum|max_model_len")
RATE_RX = re.compile(r"(?i)\b429\b|rate[ _-]?limit|too many requests|quota")
SHOWN_ROWS = 3


def tables(run: Run) -> list[Table]:
    return [ev.fields["table"] for ev in run.events if ev.kind == "verifier_results" and "table" in ev.fields]


def _empty(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v == 0 or (isinstance(v, float) and math.isnan(v))
    return str(v).strip().lower() in EMPTY


def _texts(t: Table, i: int, cols: list[str]) -> list[str]:
    return [str(t.cols[c][i]) for c in cols if not _empty(t.cols[c][i])]


def _timeout_flag(t: Table, i: int) -> bool:
    for c in t.roles.timeout:
        v = t.cols[c][i]
        if isinstance(v, bool) and v or isinstance(v, str) and v.strip().lower() in ("true", "yes", "1"):
            return True
    return False


def classify(t: Table) -> dict[str, list[int]]:
    """Row indices per outcome: timeout, error (the verifier's own), context (judge over its context),
    rate (rate limited; also counted as errors)."""
    out: dict[str, list[int]] = {"timeout": [], "error": [], "context": [], "rate": []}
    verifier_status = [c for c in t.roles.status if not PROGRAM_STATUS.search("." + c)]
    for i in range(t.rows):
        texts = _texts(t, i, t.roles.status) + _texts(t, i, t.roles.error)
        if _timeout_flag(t, i) or any(TIMEOUT_RX.search(x) for x in texts):
            out["timeout"].append(i)
            continue
        errors = _texts(t, i, t.roles.error)
        status_error = any(ERROR_STATUS.match(x.strip()) for x in _texts(t, i, verifier_status))
        if any(CONTEXT_RX.search(x) for x in errors):
            out["context"].append(i)
            continue
        if errors or status_error:
            out["error"].append(i)
            if any(RATE_RX.search(x) for x in errors + _texts(t, i, verifier_status)):
                out["rate"].append(i)
    return out


def _classes(run: Run) -> list[tuple[Table, dict[str, list[int]]]]:
    return run.once("verifier_results.classes", lambda r: [(t, classify(t)) for t in tables(r)])


def _evidence(pairs: list[tuple[Table, list[int]]]) -> list[Line]:
    out: list[Line] = []
    for t, rows in pairs:
        for i in rows[: SHOWN_ROWS - len(out)]:
            out.append(t.line(i))
        if len(out) >= SHOWN_ROWS:
            break
    return out


def _rate_result(params: dict[str, Any], run: Run, key: str, what: str) -> list[CheckResult]:
    found = [(t, c[key]) for t, c in _classes(run)]
    total = sum(t.rows for t, _ in found)
    hit = sum(len(rows) for _, rows in found)
    if not total or not hit:
        return []
    rate = hit / total
    files = [t.file for t, rows in found if rows]
    severity = "info"
    if hit >= int(params.get("min_count", 3)) and rate >= float(params.get("min_rate", 0.02)):
        severity = "error" if rate >= float(params.get("error_rate", 0.2)) else "warning"
    arithmetic = f"{hit} of {total} rows ({100 * rate:.1f} %) {what}"
    numbers: dict[str, Any] = {"rows": total, "affected": hit, "rate": round(rate, 4), "files": files,
                               "arithmetic": arithmetic}
    if key == "error":
        families = Counter(_family(t, i) for t, rows in found for i in rows)
        numbers["families"] = dict(families.most_common(5))
        rate_limited = sum(len(c["rate"]) for _, c in _classes(run))
        if rate_limited:
            numbers["rate_limited"] = rate_limited
    return [CheckResult(evidence=_evidence([p for p in found if p[1]]), count=hit, numbers=numbers,
                        severity=severity, title="")]


def _family(t: Table, i: int) -> str:
    texts = _texts(t, i, t.roles.error) or _texts(t, i, t.roles.status)
    return template(texts[0])[:120] if texts else "?"


def results_timeouts(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Rows whose status or error says the verifier timed out (or whose timeout flag is set)."""
    return _rate_result(params, run, "timeout", "timed out in the verifier")


def results_errors(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Rows whose error column is set or whose verifier status is an error (not a sample's own failure)."""
    return _rate_result(params, run, "error", "errored in the verifier")


def results_rewards(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """The reward column, over every results file that has it, is non-finite somewhere, zero everywhere, or one
    constant value: no learning signal. (One step's file all zero among others that are not is just a step.)"""
    min_rows = int(params.get("min_rows", 8))
    by_col: dict[str, list[tuple[Table, int, float]]] = {}
    for t in tables(run):
        if not t.roles.reward:
            continue
        col = t.roles.reward[0]
        for i, v in enumerate(t.cols[col]):
            f = as_float(v)
            if f is not None:
                by_col.setdefault(col, []).append((t, i, f))
    for col, vals in by_col.items():
        files = sorted({t.file for t, _, _ in vals})
        where = files[0] if len(files) == 1 else f"{len(files)} files"
        bad = [(t, i, v) for t, i, v in vals if not math.isfinite(v)]
        if bad:
            arithmetic = f"{col} = {bad[0][2]} in {len(bad)} of {len(vals)} rows of {where}"
            return [CheckResult(evidence=[t.line(i) for t, i, _ in bad[:SHOWN_ROWS]], count=len(bad), severity="error",
                                numbers={"column": col, "rows": len(vals), "non_finite": len(bad), "files": files,
                                         "arithmetic": arithmetic},
                                title=f"Verifier rewards are not finite ({arithmetic})")]
        if len(vals) < min_rows:
            continue
        if len({v for _, _, v in vals}) == 1:
            value = vals[0][2]
            arithmetic = f"{col} = {value:g} in {len(vals)} of {len(vals)} rows of {where}"
            title = (f"Every verifier reward is zero ({arithmetic})" if value == 0 else
                     f"Every verifier reward is the same value ({arithmetic})")
            (t0, i0, _), (t1, i1, _) = vals[0], vals[-1]
            return [CheckResult(evidence=[t0.line(i0), t1.line(i1)], count=len(vals),
                                numbers={"column": col, "rows": len(vals), "value": value, "files": files,
                                         "arithmetic": arithmetic},
                                title=title)]
    return []


def _quantile(sorted_vals: list[float], q: float) -> float:
    return sorted_vals[min(len(sorted_vals) - 1, int(q * (len(sorted_vals) - 1) + 0.5))]


def _round_value(v: float) -> bool:
    """A limit someone typed: a whole number of seconds that is a multiple of 5 (or below 5), within 2 %."""
    for step in (60.0, 30.0, 10.0, 5.0, 1.0):
        if step == 1.0 and v > 5:
            break
        near = round(v / step) * step
        if near > 0 and abs(v - near) <= 0.02 * near:
            return True
    return False


def _limit(params: dict[str, Any], run: Run, t: Table, lat: list[float]) -> tuple[float, str] | None:
    """The verifier's timeout: from the run's configuration, from a per-row limit column, or the maximum
    latency when several rows cluster right at it and it is a round number (the clock that cut them off)."""
    cfg = run.config.get("verifier.timeout") if run.config is not None else None
    v = as_float(cfg[0]) if cfg else None
    if v and v > 0:
        return v, f"verifier.timeout = {v:g} s ({cfg[1]})"  # type: ignore[index]
    for c in t.roles.limit + [c for c in t.roles.timeout if any(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in t.cols[c][:50])]:
        vals = [x for x in map(as_float, t.cols[c]) if x is not None and x > 0]
        if vals:
            common = Counter(vals).most_common(1)[0][0]
            return common, f"{c} = {common:g} s (column)"
    if not lat:
        return None
    top = lat[-1]
    at = sum(1 for x in lat if x >= 0.97 * top)
    if top >= 1 and at >= max(3, int(float(params.get("cluster_share", 0.01)) * len(lat))) and _round_value(top):
        return top, f"~{top:g} s (the largest latency, which {at} rows reach)"
    return None


def _seconds(col: str, v: float) -> float:
    low = col.lower()
    return v / 1000.0 if low.endswith("ms") or "_ms_" in low or low.endswith("millis") else v


def results_latency_tail(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Verifier latency against its timeout: the share of rows at or above `near` x the timeout."""
    near = float(params.get("near", 0.95))
    out = []
    for t in tables(run):
        if not t.roles.latency:
            continue
        col = t.roles.latency[0]
        raw = [(i, as_float(v)) for i, v in enumerate(t.cols[col])]
        pairs = [(i, _seconds(col, v)) for i, v in raw if v is not None and math.isfinite(v) and v >= 0]
        if len(pairs) < int(params.get("min_rows", 10)):
            continue
        lat = sorted(v for _, v in pairs)
        found = _limit(params, run, t, lat)
        if found is None:
            continue
        limit, where = found
        tail = [i for i, v in pairs if v >= near * limit]
        share = len(tail) / len(pairs)
        if len(tail) < int(params.get("min_count", 3)) or share < float(params.get("min_share", 0.02)):
            continue
        p50, p99 = _quantile(lat, 0.5), _quantile(lat, 0.99)
        arithmetic = (f"{len(tail)} of {len(pairs)} rows ({100 * share:.1f} %) took ≥ {near:.0%} of the {limit:g} s "
                      f"timeout; p50 {p50:.3g} s, p99 {p99:.3g} s, max {lat[-1]:.3g} s")
        out.append(CheckResult(evidence=[t.line(i) for i in tail[:SHOWN_ROWS]], count=len(tail),
                               severity="error" if share >= float(params.get("error_share", 0.2)) else "warning",
                               numbers={"column": col, "rows": len(pairs), "at_timeout": len(tail),
                                        "share": round(share, 4), "timeout": limit, "timeout_from": where,
                                        "p50": p50, "p99": p99, "max": lat[-1], "arithmetic": arithmetic}))
    return out[:1] if out else []


def _judge_context(run: Run, t: Table, i: int) -> float | None:
    for c in t.roles.context:
        v = as_float(t.cols[c][i])
        if v and v > 0:
            return v
    cfg = run.config.get("judge.max_context_length") if run.config is not None else None
    v = as_float(cfg[0]) if cfg else None
    return v if v and v > 0 else None


def _tokens(t: Table, i: int) -> float | None:
    parts = [p for p in (as_float(t.cols[c][i]) for c in t.roles.prompt_tokens[:1] + t.roles.response_tokens[:1]
                         + t.roles.rubric_tokens[:1]) if p is not None]
    if parts:
        return sum(parts)
    total = [as_float(t.cols[c][i]) for c in t.roles.total_tokens[:1]]
    return total[0] if total and total[0] is not None else None


def results_judge_overflow(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """Judge calls whose prompt + response + rubric tokens exceed the judge's context, or whose error says so."""
    over: list[tuple[Table, list[int]]] = []
    total = 0
    worst: tuple[float, float] | None = None
    for t, classes in _classes(run):
        rows = set(classes["context"])
        if t.roles.tokens:
            for i in range(t.rows):
                ctx = _judge_context(run, t, i)
                used = _tokens(t, i)
                if ctx and used is not None and used > ctx:
                    rows.add(i)
                    if worst is None or used - ctx > worst[0] - worst[1]:
                        worst = (used, ctx)
        total += t.rows
        if rows:
            over.append((t, sorted(rows)))
    hit = sum(len(r) for _, r in over)
    if not hit or not total:
        return []
    rate = hit / total
    arithmetic = f"{hit} of {total} judge calls ({100 * rate:.1f} %) over the judge's context"
    if worst:
        arithmetic += f"; largest: {worst[0]:g} tokens (prompt + response + rubric) against {worst[1]:g}"
    severity = "error" if rate >= float(params.get("error_rate", 0.2)) else (
        "warning" if hit >= int(params.get("min_count", 1)) else "info")
    return [CheckResult(evidence=_evidence(over), count=hit, severity=severity,
                        numbers={"rows": total, "affected": hit, "rate": round(rate, 4), "arithmetic": arithmetic}
                        | ({"tokens": worst[0], "context": worst[1]} if worst else {}))]


def results_summary(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """What the result files hold: rows, mean reward, timeouts and errors (info; the problems are other checks)."""
    found = _classes(run)
    if not found:
        return []
    rows = sum(t.rows for t, _ in found)
    timeouts = sum(len(c["timeout"]) for _, c in found)
    errors = sum(len(c["error"]) for _, c in found)
    nums: dict[str, Any] = {"files": [t.file for t, _ in found], "rows": rows, "timeouts": timeouts, "errors": errors}
    rewards = [v for t, _ in found if t.roles.reward for v in map(as_float, t.cols[t.roles.reward[0]])
               if v is not None and math.isfinite(v)]
    nums["arithmetic"] = f"{rows} rows in {len(found)} file{'s' if len(found) > 1 else ''}; {timeouts} timed out, {errors} errored"
    if rewards:
        nums["reward_mean"] = round(sum(rewards) / len(rewards), 4)
        nums["arithmetic"] += f"; mean reward {nums['reward_mean']:g}"
    return [CheckResult(evidence=[t.line(0) for t, _ in found[:2]], count=rows, numbers=nums)]
