"""Checks over SGLang batch-stats timelines."""

from __future__ import annotations

from typing import Any

from .base import CheckResult, Run


def pool_saturation(params: dict[str, Any], run: Run) -> list[CheckResult]:
    """KV pool usage at (or near) 1.00 while requests wait: concurrency bound by the pool."""
    min_usage = float(params.get("min_usage", 0.99))
    min_queue = float(params.get("min_queue", 1))
    min_rows = int(params.get("min_rows", 1))
    out = []
    for es in run.engines.values():
        rows = sum(1 for u, q in zip(es.usage, es.queue) if u >= min_usage and q >= min_queue)
        if rows < min_rows:
            continue
        lines = [ln for ln, u, q in es.pressure if u >= min_usage and q >= min_queue]
        if es.last_pressure and es.last_pressure[1] >= min_usage and es.last_pressure[0] not in lines:
            lines.append(es.last_pressure[0])
        peak_queue = max(q for u, q in zip(es.usage, es.queue) if u >= min_usage)
        out.append(CheckResult(evidence=lines[:1] + lines[-1:] if len(lines) > 1 else lines, count=rows,
                               numbers={"saturated_rows": rows, "rows": es.total, "peak_queue": peak_queue,
                                        "engine": es.origin}))
    return out
