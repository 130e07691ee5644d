"""Recognition round 13 (r13a): serving OOM and prompt budgets as the RL frameworks relay them, on fresh threads.

- vLLM's sleep-mode allocator (csrc/cumem_allocator.cpp) failing on wake_up is the engine's memory whichever process
  relays the line: verl prints it under the driver's main_task prefix inside the sharding manager's frames
  (real-extra 1003, verl issue 302), OpenRLHF under the LLMRayActor (008); users retype it as "cuda error".
- The completion budget itself refused (a client's own max_tokens: vLLM 0.10+ "'max_tokens' or
  'max_completion_tokens' is too large", the older wording with the completion equal to the window, the OpenAI API's
  "max_tokens is too large") names the response cap first, not the prompt bound (1008, 1009).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_case as case
from conftest import knob_names, top, triage_dir, triage_files


@pytest.mark.parametrize(("prefix", "file", "line"), [
    ("1003-", "train.log", 12),
    ("008-", "train.log", 5),
    ("423-", "rollout.log", 15),
])
def test_vllm_sleep_allocator_oom_is_the_engines_whoever_relays_it(prefix: str, file: str, line: int) -> None:
    f = top(triage_dir(case(prefix) / "input"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-cumem-oom", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert knob_names(f)[0] == "inference.sglang_mem_fraction_static"


def test_cumem_oom_under_the_drivers_prefix_in_verls_sharding_manager_is_not_a_trainer_oom(tmp_path: Path) -> None:
    frames = "".join(f"(main_task pid=1748945) {x}\n" for x in (
        '  File "/verl/verl/workers/sharding_manager/fsdp_vllm.py", line 79, in __enter__',
        "    self.inference_engine.wake_up()",
        '  File "site-packages/vllm/device_allocator/cumem.py", line 75, in create_and_map',
        "    python_create_and_map(*allocation_handle)",
        "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62"))
    report = triage_files(tmp_path, {"train.log": frames})
    f = top(report)
    assert (f.category, f.rule, f.evidence[0].line) == ("serving-oom-retraction", "serving.vllm-cumem-oom", 5)
    assert not [g for g in report.findings if g.category == "trainer-oom"]


def test_a_wake_on_the_wrong_device_is_not_an_oom(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"engine.log": "CUDA Error: invalid argument at cumem_allocator.cpp:145\n"})
    assert not [f for f in report.findings if f.category == "serving-oom-retraction"]


@pytest.mark.parametrize(("prefix", "numbers"), [
    ("1009-", {"response_tokens": 8192, "context_length": 8192, "input_tokens": 1210}),
    ("1008-", {"context_length": 8192, "input_tokens": 12, "total_tokens": 8204}),
])
def test_a_clients_own_max_tokens_filling_the_window_names_the_response_cap(prefix: str, numbers: dict) -> None:
    f = top(triage_dir(case(prefix) / "input"))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.completion-cap-too-large")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", 1)
    assert {k: f.numbers[k] for k in numbers} == numbers
    assert knob_names(f) == ["inference.max_response_length", "inference.max_context_length"]


@pytest.mark.parametrize(("line", "tokens", "limit"), [
    ("openai.BadRequestError: Error code: 400 - {'error': {'message': 'max_tokens is too large: 4738. This model "
     "supports at most 4096 completion tokens, whereas you provided 4738.', 'type': 'invalid_request_error'}}",
     4738, 4096),
    ("max_completion_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you "
     "provided 100000.", 100000, 16384),
    ("max_tokens (521276) exceeds model's maximum output tokens (131072) for model MiniMax-M2", 521276, 131072),
])
def test_api_output_cap_refusals(tmp_path: Path, line: str, tokens: int, limit: int) -> None:
    f = top(triage_files(tmp_path, {"client.log": line + "\n"}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.completion-cap-too-large")
    assert (f.numbers["response_tokens"], f.numbers["response_limit"]) == (tokens, limit)
    assert knob_names(f)[0] == "inference.max_response_length"


def test_a_long_multi_turn_prompt_with_a_modest_completion_stays_the_prompt_budget() -> None:
    f = top(triage_dir(case("1001-") / "input"))
    assert (f.rule, f.evidence[0].line) == ("prompt.context-length-exceeded", 10)
    assert (f.numbers["input_tokens"], f.numbers["response_tokens"], f.numbers["context_length"]) == (2089, 2048, 4096)
    assert knob_names(f)[0] == "miles.rollout_max_prompt_len"


def test_rllm_agent_first_prompt_over_max_prompt_length_reveals_the_limit(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": (
        "Exception: Trajectory 260: initial prompt length 4273 already exceeded max_prompt_length 4096, retrying\n"
        "Exception: Trajectory 260 cannot complete. Please check the log message\n")})
    f = top(report)
    assert (f.category, f.rule, f.evidence[0].line) == ("prompt-budget", "prompt.framework-length-check", 1)
    assert (f.numbers["input_tokens"], f.numbers["prompt_limit"]) == (4273, 4096)
    assert knob_names(f)[0] == "miles.rollout_max_prompt_len"


@pytest.mark.parametrize("prefix", ["1014-", "1015-"])
def test_the_tokenizers_over_length_notice_alone_is_no_failure(prefix: str) -> None:
    report = triage_dir(case(prefix) / "input")
    assert not [f for f in report.findings if f.severity in ("error", "warning")]
    assert [f.rule for f in report.findings] == ["prompt.tokenizer-sequence-too-long"]


@pytest.mark.parametrize(("line", "remaining"), [
    # ms-swift issue 8223 (GRPO multi-turn on a colocated vLLM), verl-tool issue 88, vllm issue 4667 / PR 36789
    ("[rank13]: ValueError: max_tokens must be at least 1, got -239.", -239),
    ("ValueError: max_tokens must be at least 1, got 0.", 0),
    ("openai.BadRequestError: Error code: 400 - {'error': {'message': 'max_tokens must be at least 1, got -7584. "
     "(parameter=max_tokens, value=-7584)', 'type': 'BadRequestError', 'param': 'max_tokens', 'code': 400}}", -7584),
])
def test_a_completion_budget_of_zero_or_less_is_a_prompt_that_fills_the_context(
        tmp_path: Path, line: str, remaining: int) -> None:
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.completion-budget-exhausted")
    assert f.numbers["remaining_tokens"] == remaining
    assert knob_names(f)[0] == "miles.rollout_max_prompt_len"


def test_a_positive_max_tokens_complaint_is_not_an_exhausted_budget(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": "ValueError: max_tokens must be at least 1, got 5.\n"})
    assert not [f for f in report.findings if f.rule == "prompt.completion-budget-exhausted"]


def test_vllms_2026_input_length_wording_is_the_context_limit(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"client.log": (
        "openai.BadRequestError: Error code: 400 - {'error': {'message': \"Input length (11680) exceeds model's "
        "maximum context length (4096).\", 'type': 'BadRequestError', 'param': None, 'code': 400}}\n")}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert (f.numbers["input_tokens"], f.numbers["context_length"]) == (11680, 4096)
