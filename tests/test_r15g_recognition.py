"""Recognition round 15 (r15g): verl threads of every category (real-extra 1340-1354).

- An inference engine refusing a per-step token budget below its context at start-up (vLLM's SchedulerConfig check,
  plain and pydantic "Value error," forms; verl's and EasyR1's own rollout checks) is a configuration rejected before
  any request ran: other, naming the two lengths, never a prompt over its budget (1343 verl PR 259, 1344 verl issue
  7624).
- SandboxFusion answering status SandboxError is the code sandbox's own failure: verifier (1346, verl issue 4074).
- torch_memory_saver failing a driver call with a result other than 2 is no out-of-memory (1347, verl PR 1911).
- A driver's own check that the Ray cluster lacks the GPUs it asks for stops the start: cold-start with the
  resource knob, as the Ray placement rules (1348, verl issue 539).
- transformers raising for a model directory without a file it must read (verl's FSDP save reloading a missing
  generation_config.json) is other.model-file-missing; SGLang's logged note about the same file stays info (1352,
  verl issue 2658).
- A vision-language forward with fewer image placeholder tokens than image features is a prompt cut to its limit
  (1354, open-r1-multimodal issue 28); more tokens than features is an extra placeholder, from generation or data
  (1353, NoisyRollout issue 3): the rule's `when` compares the two numbers (features-tokens).
- verl's rollout failures that were already recognised stay so: vLLM's cumem wake-up OOM (1340), a missing vLLM
  module (1341), NCCL watchdog timeouts (1342, 1345), illegal memory access (1349, 1350), Ray's host OOM kill (1351).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

from triage.scan.scanner import condition_value, thresholds_hold


def test_vllm_refusing_a_step_budget_below_max_model_len_is_a_config_rejection_not_a_prompt_over_budget():
    report = triage_dir(extra_input("1343-"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.engine-token-budget-below-context", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("main_task.log", 1)]
    assert (f.numbers["budget"], f.numbers["context"]) == (8192, 9216)
    assert set(knob_names(f)) >= {"miles.sglang_chunked_prefill_size", "inference.max_context_length"}
    assert "vocabulary.prompt-over-budget" not in by_rule(report)


def test_the_pydantic_form_of_the_same_check_names_the_value_error_line():
    f = top(triage_dir(extra_input("1344-")))
    assert (f.category, f.rule) == ("other", "other.engine-token-budget-below-context")
    assert [(e.file, e.line) for e in f.evidence] == [("console.log", 2)]
    assert (f.numbers["budget"], f.numbers["context"]) == (8192, 131072)


@pytest.mark.parametrize("line", [
    # verl's vllm_rollout_spmd check, chunked prefill on
    "ValueError: Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len,"
    "                              please increase max_num_batched_tokens or disable chunked prefill",
    # EasyR1 / verl forks' rollout check
    "(WorkerDict pid=4242) ValueError: max_num_batched_tokens should be greater than prompt_length + response_length.",
])
def test_the_rl_frameworks_own_budget_checks_are_the_same_rejection(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.engine-token-budget-below-context")


def test_sandbox_fusion_answering_sandbox_error_is_the_verifiers_failure():
    f = top(triage_dir(extra_input("1346-")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.sandbox-internal-error", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("parallel.out", 14), ("parallel.out", 30)]
    assert "verifier.timeout" in knob_names(f)


def test_one_stray_sandbox_error_among_successes_is_only_noted(tmp_path: Path):
    ok = '{"status": "Success", "message": "", "run_result": {"status": "Finished", "return_code": 0}}\n'
    bad = ('{"status": "SandboxError", "message": "exception on running command python /tmp/a.py: '
           '[Errno 24] Too many open files | None"}\n')
    report = triage_files(tmp_path, {"reward.log": ok * 20 + bad + ok * 20})
    f = by_rule(report)["verifier.sandbox-internal-error"]
    assert f.severity == "info"


def test_a_memory_saver_driver_error_other_than_out_of_memory_is_other():
    f = top(triage_dir(extra_input("1347-")))
    assert (f.category, f.rule) == ("other", "other.memory-saver-driver-error")
    assert [(e.file, e.line) for e in f.evidence] == [("console.log", 4)]
    assert (f.numbers["result"], f.numbers["func"]) == (1, "resume")


def test_a_memory_saver_out_of_memory_stays_the_engines_oom(tmp_path: Path):
    line = ("(SGLangHttpServer pid=250977) [torch_memory_saver.cpp] CUresult error: 2 (out of memory)  "
            "file=csrc/utils.h func=cu_mem_create line=194\n")
    report = triage_files(tmp_path, {"rollout.log": line})
    assert top(report).rule == "serving.memory-saver-resume-oom"
    assert "other.memory-saver-driver-error" not in by_rule(report)


def test_verl_finding_fewer_free_ray_gpus_than_its_pools_need_is_a_start_that_cannot_place():
    f = top(triage_dir(extra_input("1348-")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.ray-resources-short", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("error.txt", 1)]
    assert (f.numbers["available"], f.numbers["desired"]) == (0, 8)
    assert knob_names(f) == ["ray.placement_resources"]


def test_verls_per_pool_wording_without_its_space_is_the_same_start_failure(tmp_path: Path):
    line = "(TaskRunner pid=7) ValueError: Resource pool global_pool: 8*1cannot be satisfied in this ray cluster\n"
    f = top(triage_files(tmp_path, {"main_ppo.log": line}))
    assert (f.category, f.rule) == ("cold-start", "cold.ray-resources-short")
    assert (f.numbers["pool"], f.numbers["gpus"], f.numbers["nodes"]) == ("global_pool", 8, 1)


def test_vllms_cumem_wake_up_oom_under_verl_is_the_engines():
    f = top(triage_dir(extra_input("1340-")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-cumem-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("console.log", 3)]


@pytest.mark.parametrize("prefix, rule, line", [
    ("1341-", "other.import-error", 5),
    ("1342-", "other.nccl-watchdog-timeout", 1),
    ("1345-", "other.nccl-watchdog-timeout", 1),
    ("1351-", None, 1),
])
def test_verls_failures_outside_the_six_stay_other(prefix: str, rule: str | None, line: int):
    report = triage_dir(extra_input(prefix))
    f = top(report)
    assert f.category not in SIX
    if rule:
        assert f.rule == rule
    assert f.evidence[0].line == line


@pytest.mark.parametrize("prefix, line", [("1349-", 1), ("1350-", 19)])
def test_a_rollout_illegal_memory_access_is_other_at_its_exception_line(prefix: str, line: int):
    f = top(triage_dir(extra_input(prefix)))
    assert f.category == "other"
    assert "illegal memory access" in f.evidence[0].text
    assert f.evidence[0].line == line


def test_a_model_directory_without_a_file_transformers_reads_is_a_missing_file():
    f = top(triage_dir(extra_input("1352-")))
    assert (f.category, f.rule, f.severity) == ("other", "other.model-file-missing", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("error.txt", 1)]
    assert (f.numbers["path"], f.numbers["file"]) == ("/workspace/model", "generation_config.json")


def test_sglangs_logged_missing_generation_config_stays_the_info_note(tmp_path: Path):
    line = ("[2026-05-14 09:44:58] Failed to load generation config for Qwen/Qwen3-8B: Qwen/Qwen3-8B does not appear to "
            "have a file named generation_config.json.\n")
    report = triage_files(tmp_path, {"server.log": line})
    assert "other.model-file-missing" not in by_rule(report)
    assert by_rule(report)["other.no-generation-config"].severity == "info"


def test_fewer_image_tokens_than_features_is_a_prompt_cut_to_its_limit():
    f = top(triage_dir(extra_input("1354-")))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.vision-tokens-truncated", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("error.log", 2)]
    assert (f.numbers["tokens"], f.numbers["features"]) == (8142, 11392)
    assert "miles.rollout_max_prompt_len" in knob_names(f)


def test_more_image_tokens_than_features_is_an_extra_placeholder_not_a_cut_prompt():
    report = triage_dir(extra_input("1353-"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.vision-tokens-extra")
    assert (f.numbers["tokens"], f.numbers["features"]) == (1333, 1332)
    assert "prompt.vision-tokens-truncated" not in by_rule(report)


def test_a_when_field_may_be_a_difference_or_a_sum_of_the_numbers():
    numbers = {"tokens": 8142, "features": 11392}
    assert condition_value(numbers, "features-tokens") == 3250
    assert condition_value(numbers, "tokens - features") == -3250
    assert condition_value(numbers, "tokens+features") == 19534
    assert condition_value(numbers, "features-missing") is None
    assert thresholds_hold([{"field": "features-tokens", "min": 1}], numbers)
    assert not thresholds_hold([{"field": "tokens-features", "min": 1}], numbers)
