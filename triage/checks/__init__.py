"""Aggregate checks: conclusions no single line proves (a full pool with a queue, a cap-hit rate, a slow first
step, degenerate rewards). Each check is a function named by a rule's `check:` and tuned by its `params:`;
the rule (title, knobs, explanation) lives in patterns/ like any other.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import CheckResult, Run
from .metrics import first_step_slow, generation_tail, metric_threshold, rewards_degenerate
from .serving import pool_saturation

CHECKS: dict[str, Callable[..., list[CheckResult]]] = {
    "pool_saturation": pool_saturation,
    "metric_threshold": metric_threshold,
    "generation_tail": generation_tail,
    "first_step_slow": first_step_slow,
    "rewards_degenerate": rewards_degenerate,
}

__all__ = ["CHECKS", "CheckResult", "Run"]
