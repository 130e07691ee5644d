"""Aggregate checks: conclusions no single line proves (a full pool with a queue, a cap-hit rate, a slow first
step, degenerate rewards). Each check is a function named by a rule's `check:` and tuned by its `params:`;
the rule (title, knobs, explanation) lives in patterns/ like any other.
"""

from __future__ import annotations

from collections.abc import Callable

from triage.checks import config as cc
from triage.checks import health, startup
from triage.checks import series as ts
from triage.checks import verifier_results as vr
from triage.checks.base import CheckResult, Run
from triage.checks.exits import fatal_exit, orderly_shutdown
from triage.checks.metrics import dataset_filtered, generation_tail, metric_threshold
from triage.checks.serving import kv_pressure, lone_decode, pool_saturation

CHECKS: dict[str, Callable[..., list[CheckResult]]] = {
    "pool_saturation": pool_saturation,
    "metric_threshold": metric_threshold,
    "dataset_filtered": dataset_filtered,
    "generation_tail": generation_tail,
    "first_step_slow": startup.first_step_slow,
    "metric_non_finite": health.metric_non_finite,
    "no_policy_gradient": health.no_policy_gradient,
    "publication_missing": health.publication_missing,
    "run_summary": health.run_summary,
    "cap_hits": health.cap_hits,
    "prompt_response_over_context": cc.prompt_response_over_context,
    "prompt_limit_derived": cc.prompt_limit_derived,
    "pack_budget_below_context": cc.pack_budget_below_context,
    "micro_batch_not_one": cc.micro_batch_not_one,
    "pool_full_sequences": cc.pool_full_sequences,
    "pool_below_requested": cc.pool_below_requested,
    "mamba_slots_vs_running": cc.mamba_slots_vs_running,
    "cuda_graph_vs_admission": cc.cuda_graph_vs_admission,
    "mem_fraction_colocated": cc.mem_fraction_colocated,
    "long_context_training": cc.long_context_training,
    "log_probs_chunk_unset": cc.log_probs_chunk_unset,
    "results_timeouts": vr.results_timeouts,
    "results_errors": vr.results_errors,
    "results_rewards": vr.results_rewards,
    "results_latency_tail": vr.results_latency_tail,
    "results_judge_overflow": vr.results_judge_overflow,
    "results_summary": vr.results_summary,
    "startup_phase_slow": startup.startup_phase_slow,
    "startup_not_ready": startup.startup_not_ready,
    "startup_summary": startup.startup_summary,
    "kv_pressure": kv_pressure,
    "lone_decode": lone_decode,
    "pool_below_context": cc.pool_below_context,
    "pool_is_input_limit": cc.pool_is_input_limit,
    "rewards_all_zero": ts.rewards_all_zero,
    "policy_collapse": ts.policy_collapse,
    "no_eos": ts.no_eos,
    "mean_length_at_cap": ts.mean_length_at_cap,
    "step_time_trend": ts.step_time_trend,
    "slow_generation": ts.slow_generation,
    "fatal_exit": fatal_exit,
    "orderly_shutdown": orderly_shutdown,
}

__all__ = ["CHECKS", "CheckResult", "Run"]
