"""Recognition round 23 (r23a): whole public run logs (real-extra 2250-2265).

- Cap hits on a minority of records of a larger batch (not only of a handful of completions a step) are
  information when the share pooled over the run and over its last third stay under the threshold and the last
  third is not growing: a TRL GRPO run of 133 records, 24 completions each, 20 of them at 0.2-0.33 and 11.5% pooled
  (2255); a verl video GRPO whose first steps put 69-75% at a 256 cap and whose last six records none (2265). A run
  growing into its cap stays a warning (993, tests/test_cap_hit_isolated.py), and so do a third of all completions
  truncated throughout (2256, 31.7% pooled), every response at the cap (2263) and a collapsed policy at the cap
  before a worker death (2250).
- slime's argument check "FileNotFoundError: ref_load <path> does not exist, please check the path." is
  other.checkpoint-load-failed, ahead of the command line's pack-budget check (2253).
- A PyTorch kernel without the tensor's dtype ('"_amp_foreach_non_finite_check_and_unscale_cuda" not implemented
  for 'BFloat16'': fp16 mixed precision over a bf16 model) is other.dtype-kernel-not-implemented and gates, though
  the traceback follows asyncio's "Task exception was never retrieved" teardown noise (2254).
- Hydra's "Error executing job with overrides: [...]" echo, which names reward_manager / compute_score for a run with
  a custom reward, is no verifier marker: a vLLM video-input assertion in the rollout and a Hub 404 for the model
  path are not the judge's or the reward's (2260).
- Multi-turn video prompts over the engine's context are prompt-budget, with the engine's numbers (2261, 2262).
- Healthy whole runs carry no warning: verl DAPO 200/200 on 64 ranks (2251), an overnight SFT/GRPO curriculum's
  orchestrator log (2257), TRL GRPO text-to-SQL Slurm outputs (2258, 2259).
"""

from __future__ import annotations

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, warnings_or_worse

from triage.report.gate import scan_exit


def _exit(report) -> int:
    return scan_exit(report.findings, "error", complete=report.coverage_complete)


# -- cap hits on a minority of records, settled -----------------------------------------------------------------------


def test_larger_batch_cap_hits_on_a_minority_of_records_are_information():
    report = triage_dir(extra_input("2255"))
    assert warnings_or_worse(report) == []
    f = by_rule(report)["gen.cap-hit-rate"]
    assert f.severity == "info"
    assert (f.numbers["steps_over"], f.numbers["records"]) == (20, 133)
    assert f.numbers["pooled_share"] == pytest.approx(0.1153)
    assert f.numbers["late_share"] == pytest.approx(0.1259)
    assert "ratio_step" not in f.numbers  # 24 completions a record: not the few-completions path
    assert "on 20 of 133 records; 11.5% over all of them, 12.6% over the last 44" in f.title
    assert _exit(report) == 0


def test_early_cap_hits_of_a_short_run_that_stopped_are_information():
    report = triage_dir(extra_input("2265"))
    assert warnings_or_worse(report) == []
    f = top(report)
    assert (f.rule, f.severity) == ("gen.cap-hit-rate", "info")
    assert (f.numbers["records"], f.numbers["late_share"]) == (19, 0.0)
    assert f.numbers["max"] == 0.75


def test_a_third_of_completions_truncated_throughout_stays_a_warning():
    report = triage_dir(extra_input("2256"))
    f = top(report)
    assert (f.rule, f.severity, f.numbers["steps_over"]) == ("gen.cap-hit-rate", "warning", 156)
    assert "inference.max_response_length" in knob_names(f)
    assert _exit(report) == 0


def test_every_response_at_a_256_cap_is_generation_tail():
    f = top(triage_dir(extra_input("2263")))
    assert (f.rule, f.severity) == ("gen.cap-hit-rate", "warning")
    assert (f.numbers["max"], f.numbers["response_cap"]) == (1.0, 256.0)
    assert (f.evidence[0].file, f.evidence[0].line) == ("out.txt", 900)


def test_collapsed_policy_at_the_cap_leads_an_unexplained_worker_death_and_gates():
    report = triage_dir(extra_input("2250"))
    f = top(report)
    assert (f.rule, f.numbers["steps_over"], f.numbers["response_cap"]) == ("gen.cap-hit-rate", 19, 512.0)
    assert "other.fatal-exit" in warnings_or_worse(report)
    assert _exit(report) == 1


# -- other: a missing checkpoint path, a dtype the kernel lacks -------------------------------------------------------


def test_slime_ref_load_path_missing_is_checkpoint_load_failed():
    report = triage_dir(extra_input("2253"))
    f = top(report)
    assert (f.rule, f.severity) == ("other.checkpoint-load-failed", "error")
    assert (f.numbers["what"], f.numbers["path"]) == ("ref_load", "/root/workspace/erdos/ckpt/gpt-oss-20b_torch_dist")
    assert (f.evidence[0].file, f.evidence[0].line) == ("gpt_oss_20b.log", 36)
    assert warnings_or_worse(report).index("config.pack-budget-below-context") > 0
    assert _exit(report) == 1


def test_grad_scaler_on_bf16_gradients_is_a_dtype_kernel_error_and_gates():
    report = triage_dir(extra_input("2254"))
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("other.dtype-kernel-not-implemented", "other", "error")
    assert (f.numbers["op"], f.numbers["dtype"]) == ("_amp_foreach_non_finite_check_and_unscale_cuda", "BFloat16")
    assert (f.evidence[0].file, f.evidence[0].line) == ("output.log", 164)
    assert knob_names(f) == []
    assert _exit(report) == 1


# -- Hydra's overrides echo is no verifier marker ---------------------------------------------------------------------


def test_hydra_overrides_echo_does_not_make_rollout_errors_the_verifiers():
    report = triage_dir(extra_input("2260"))
    f = top(report)
    assert (f.rule, f.category) == ("other.hub-access-denied", "other")
    rules = by_rule(report)
    assert "verifier.judge-api-error" not in rules
    assert "verifier.reward-exception" not in rules
    assert _exit(report) == 1


# -- prompts over the engine's context --------------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "line", "tokens", "context"), [
    ("2261", 1616, 34374, 32786),
    ("2262", 1235, 13346, 8192),
])
def test_video_prompts_over_the_context_are_prompt_budget(case, line, tokens, context):
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.rule, f.category) == ("prompt.context-length-exceeded", "prompt-budget")
    assert (f.numbers["input_tokens"], f.numbers["context_length"]) == (tokens, context)
    assert (f.evidence[0].file, f.evidence[0].line) == ("train_log.txt", line)
    assert "inference.max_context_length" in knob_names(f)


# -- healthy whole runs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["2251", "2257", "2258", "2259"])
def test_healthy_whole_runs_carry_no_warning(case):
    report = triage_dir(extra_input(case))
    assert warnings_or_worse(report) == []
    assert _exit(report) == 0
