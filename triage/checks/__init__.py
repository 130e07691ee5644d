"""Aggregate checks: conclusions no single line proves (a full pool with a queue, a cap-hit rate, a slow first
step, degenerate rewards). Each check is a function named by a rule's `check:` and tuned by its `params:`;
the rule (title, knobs, explanation) lives in patterns/ like any other.

Each check is registered here with the parameters it reads (name -> type and default, as yamllint rules
declare their CONF), so the library is validated against them when it loads: a `check:` that is not here, a
`params:` key the check does not read, or a value of the wrong type is a LibraryError naming file, line and
rule (`load_library(checks=PARAMS)`). Types: number (int or float), whole, text, words (a list of text),
pairs (a list of [text, text]).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from triage.checks import config as cc
from triage.checks import health, startup
from triage.checks import series as ts
from triage.checks import verifier_results as vr
from triage.checks.base import CheckResult, Run
from triage.checks.exits import fatal_exit, orderly_shutdown
from triage.checks.metrics import dataset_filtered, generation_tail, metric_threshold
from triage.checks.serving import kv_pressure, lone_decode, pool_saturation
from triage.library.rules import Library, Param, load_library

Check = Callable[..., list[CheckResult]]
CHECKS: dict[str, Check] = {}
PARAMS: dict[str, dict[str, Param]] = {}


def _register(name: str, check: Check, **params: tuple[str, Any]) -> None:
    """Register `check` as `name`, with the parameters it reads: name=(type, default)."""
    CHECKS[name] = check
    PARAMS[name] = {k: Param(t, d) for k, (t, d) in params.items()}


def number(default: Any = None) -> tuple[str, Any]:
    return ("number", default)


def whole(default: Any = None) -> tuple[str, Any]:
    return ("whole", default)


def text(default: Any = None) -> tuple[str, Any]:
    return ("text", default)


def words(default: Any = None) -> tuple[str, Any]:
    return ("words", default)


def pairs(default: Any = None) -> tuple[str, Any]:
    return ("pairs", default)


THRESHOLD = {"keys": words([]), "series": text(), "min": number(0.0)}  # metrics.over_threshold's
RATE = {"min_count": whole(3), "min_rate": number(0.02), "error_rate": number(0.2)}  # verifier_results._rate_result's

_register("pool_saturation", pool_saturation)
_register("metric_threshold", metric_threshold, **THRESHOLD)
_register("dataset_filtered", dataset_filtered, min=number(0.1))
_register("generation_tail", generation_tail, min_ratio=number(1.8), min_gen_share=number(0.3),
          min_clip_ratio=number(0.0), min_peak_clip_ratio=number(0.0),
          clip_keys=words([]))
_register("first_step_slow", startup.first_step_slow, keys=words([]), min_ratio=number(3.0), min_seconds=number(120),
          min_steps=whole(3), dominated_share=number(0.5), collapse_length_ratio=number(2.0), minor_share=number(0.0),
          length_keys=words(list(startup.LENGTH_KEYS)))
_register("metric_non_finite", health.metric_non_finite, keys=words([]), fed_by_rewards_priority=whole(0))
_register("no_policy_gradient", health.no_policy_gradient, min_steps=whole(3), equal_pairs=pairs([]),
          zero_keys=words([]), one_keys=words([]))
_register("publication_missing", health.publication_missing, min_steps=whole(2), frameworks=words([]))
_register("run_summary", health.run_summary, reward_keys=words([]), grad_keys=words([]), length_keys=words([]),
          stage_pattern=text(""))
_register("cap_hits", health.cap_hits, **THRESHOLD, max_keys=words([]), mean_keys=words([]), resolved_after=whole(0),
          resolved_min=whole(0), sparse_records=whole(0), isolated_max=whole(0), pooled_records=whole(0),
          few_completions=whole(0), settled_records=whole(0))
_register("prompt_response_over_context", cc.prompt_response_over_context)
_register("prompt_limit_derived", cc.prompt_limit_derived)
_register("pack_budget_below_context", cc.pack_budget_below_context)
_register("micro_batch_not_one", cc.micro_batch_not_one)
_register("pool_full_sequences", cc.pool_full_sequences, long_context=whole(16384), quiet_peak=number(cc.QUIET_PEAK))
_register("pool_below_requested", cc.pool_below_requested, tolerance=number(0.0), quiet_peak=number(cc.QUIET_PEAK))
_register("mamba_slots_vs_running", cc.mamba_slots_vs_running, radix_ratio=whole(3))
_register("cuda_graph_vs_admission", cc.cuda_graph_vs_admission, direction=text(""))
_register("mem_fraction_colocated", cc.mem_fraction_colocated, value=number(0.6))
_register("long_context_training", cc.long_context_training, min_context=whole(65536))
_register("log_probs_chunk_unset", cc.log_probs_chunk_unset, min_response=whole(8192))
_register("results_timeouts", vr.results_timeouts, **RATE)
_register("results_errors", vr.results_errors, **RATE)
_register("results_rewards", vr.results_rewards, min_rows=whole(8))
_register("results_latency_tail", vr.results_latency_tail, near=number(0.95), min_rows=whole(10), min_count=whole(3),
          min_share=number(0.02), error_share=number(0.2), cluster_share=number(0.01))
_register("results_judge_overflow", vr.results_judge_overflow, min_count=whole(1), error_rate=number(0.2))
_register("results_summary", vr.results_summary)
_register("startup_phase_slow", startup.startup_phase_slow, phases=words([]), min_seconds=number(30),
          per_size_seconds=number())
_register("startup_not_ready", startup.startup_not_ready)
_register("trl_server_absent", startup.trl_server_absent)
_register("startup_abandoned", startup.startup_abandoned, min_seconds=number(120))
_register("startup_wait_unanswered", startup.startup_wait_unanswered, min_seconds=number(60))
_register("startup_summary", startup.startup_summary, min_seconds=number(10))
_register("engine_stall_after_ready", startup.engine_stall_after_ready, min_waits=whole(2))
_register("kv_pressure", kv_pressure, min_usage=number(0.9), min_queue=number(1), min_share=number(0.1),
          min_seconds=number(120))
_register("lone_decode", lone_decode, min_seconds=number(300), max_running=number(2))
_register("pool_below_context", cc.pool_below_context, quiet_peak=number(cc.QUIET_PEAK))
_register("pool_is_input_limit", cc.pool_is_input_limit)
_register("swa_pool_below_floor", cc.swa_pool_below_floor)
_register("rewards_all_zero", ts.rewards_all_zero, min_steps=whole(3), min_unsolved_prompts=whole(64))
_register("reward_function_constant", ts.reward_function_constant, min_records=whole(3))
_register("policy_collapse", ts.policy_collapse, min_steps=whole(5), ratio=number(0.25), min_collapsed=whole(1),
          entropy_floor=number(0.01))
_register("response_collapse", ts.response_collapse, min_steps=whole(5), ratio=number(0.05), max_tokens=number(64))
_register("no_eos", ts.no_eos, min_steps=whole(2))
_register("mean_length_at_cap", ts.mean_length_at_cap, min_share=number(0.95), min_steps=whole(2),
          resolved_after=whole(0), resolved_min=whole(0),
          min_pinned_records=whole(10), min_pinned_tokens=number(32), pinned_tolerance=number(0.005),
          min_pinned_share=number(0.9), sparse_records=whole(0), sparse_share=number(0.0))
_register("step_time_trend", ts.step_time_trend, growth=number(5.0), stall=number(8.0), min_seconds=number(60.0),
          min_points=whole(4), generation_bars=words(list(ts.GENERATION_BARS)))
_register("slow_generation", ts.slow_generation, min_seconds=number(60.0), min_elapsed=number(600.0),
          min_tokens_per_prompt=number(1024.0), bars=words(list(ts.GENERATION_BARS)))
_register("fatal_exit", fatal_exit)
_register("orderly_shutdown", orderly_shutdown)


def load_checked_library(extra_dirs: list[Path] | None = None, compile_all: bool = False) -> Library:
    """`load_library` with every check rule's `check:` and `params:` validated against this registry."""
    return load_library(extra_dirs, compile_all=compile_all, checks=PARAMS)


__all__ = ["CHECKS", "PARAMS", "CheckResult", "Run", "load_checked_library"]
