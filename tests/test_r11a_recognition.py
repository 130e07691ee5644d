"""Recognition round 11 (r11a): trainer OOM, prompt-budget and verifier families on fresh public threads.

- Prompt over the context of a llama.cpp server or binding (real-extra 877, lreuss07/secintel-ai issue 1): "Cannot
  truncate prompt with n_keep (K) >= n_ctx (C)" and the other wordings of llama-server, LM Studio and
  llama-cpp-python, with the numbers.
- The OpenAI API's 2022-2023 context rejection, ", however you requested T tokens (I in your prompt; R for the
  completion)" (876, tatsu-lab/stanford_alpaca issue 47; 881, stanford-crfm/helm issue 94): numbers extracted.
- Trainer OOM wordings: ROCm "HIP out of memory" (873, 880), torch_npu's older "NPU out of memory ... (NPU 3; ...)"
  (874), a paste that lost the leading "t" of torch.OutOfMemoryError (872), a message wrapped mid-word (883), a
  "[time] [INFO]" relay prefix (884); a host-RAM kill by Ray stays other (878).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_case as case
from conftest import knob_names, top, triage_dir, triage_files


def test_llama_cpp_server_refusing_a_prompt_over_n_ctx_is_the_prompt_budget() -> None:
    f = top(triage_dir(case("877-") / "input"))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.llamacpp-context-exceeded")
    assert (f.evidence[0].file, f.evidence[0].line) == ("summarizer.log", 1)
    assert f.numbers["input_tokens"] == 14169 and f.numbers["context_length"] == 4096
    assert "inference.max_context_length" in knob_names(f)


@pytest.mark.parametrize(("line", "numbers"), [
    # LM Studio, later wording
    ("The number of tokens to keep from the initial prompt is greater than the context length "
     "(n_keep: 8485 >= n_ctx: 8192).", {"input_tokens": 8485, "context_length": 8192}),
    # llama-server exceed_context_size_error (2025-09 ->), the JSON body a client logs
    ('openai.BadRequestError: Error code: 400 - {"error":{"code":400,"message":"the request exceeds the available '
     'context size. try increasing the context size or enable context shift","type":"exceed_context_size_error",'
     '"n_prompt_tokens":14429,"n_ctx":8192}}', {"input_tokens": 14429, "context_length": 8192}),
    # llama-server's own log line, without numbers
    ("srv    send_error: task id = 2119, error: the request exceeds the available context size. try increasing the "
     "context size or enable context shift", {}),
    # llama-cpp-python
    ("[llama-cpp] | Exception: Requested tokens (2285) exceed context window of 2048",
     {"input_tokens": 2285, "context_length": 2048}),
])
def test_other_llama_cpp_wordings_of_the_same_refusal(tmp_path: Path, line: str, numbers: dict[str, int]) -> None:
    f = top(triage_files(tmp_path, {"client.log": line + "\n"}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.llamacpp-context-exceeded")
    for key, value in numbers.items():
        assert f.numbers[key] == value


def test_llama_cpp_startup_lines_naming_n_ctx_are_not_a_refusal(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"server.log": (
        "llama_new_context_with_model: n_ctx      = 2048\n"
        "slot update_slots: id  0 | task 7 | new prompt, n_ctx_slot = 131072, n_keep = 0, n_prompt_tokens = 912\n")})
    assert not [f for f in report.findings if f.category == "prompt-budget"]


@pytest.mark.parametrize(("prefix", "numbers"), [
    ("876-", {"context_length": 4097, "total_tokens": 4162, "input_tokens": 1090, "response_tokens": 3072}),
    ("881-", {"context_length": 2049, "total_tokens": 2054, "input_tokens": 2049, "response_tokens": 5}),
])
def test_the_openai_2023_context_rejection_carries_prompt_and_completion(prefix: str, numbers: dict[str, int]) -> None:
    f = top(triage_dir(case(prefix) / "input"))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert {k: f.numbers[k] for k in numbers} == numbers
    assert "inference.max_response_length" in knob_names(f)


@pytest.mark.parametrize(("prefix", "file", "line", "text"), [
    ("872-", "vf-rl.log", 1, "Tried to allocate 36.98 GiB"),
    ("873-", "train.log", 1, "HIP out of memory. Tried to allocate 594.00 MiB"),
    ("874-", "train.log", 1, "NPU out of memory. Tried to allocate 5.03 GiB"),
    ("880-", "train.log", 1, "HIP out of memory. Tried to allocate 11.74 GiB"),
    ("882-", "train.log", 5, "Tried to allocate 23.93 GiB"),
    ("883-", "train.log", 1, "Tried to allocate 1.42 GiB"),
    ("884-", "train.log", 1, "Tried to allocate 80.00 MiB"),
])
def test_trainer_oom_wordings_across_backends_and_pastes(prefix: str, file: str, line: int, text: str) -> None:
    f = top(triage_dir(case(prefix) / "input"))
    assert f.category == "trainer-oom"
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert text in f.evidence[0].text


def test_the_vocab_parallel_logits_oom_points_to_log_prob_chunking() -> None:
    f = top(triage_dir(case("882-") / "input"))
    assert f.rule == "trainer.oom-logprobs"
    assert "miles.log_probs_chunk_size" in knob_names(f)


def test_ray_killing_a_task_for_host_memory_is_not_a_gpu_oom() -> None:
    f = top(triage_dir(case("878-") / "input"))
    assert (f.category, f.rule) == ("other", "other.host-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 5)


@pytest.mark.parametrize(("line", "numbers"), [
    # vLLM V1, counting multimodal tokens (real-extra 886, vllm-project/vllm issue 12165)
    ("ValueError: The prompt (total length 25938) is too long to fit into the model (context length 4096). Make sure "
     "that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
     {"input_tokens": 25938, "context_length": 4096}),
    # Anthropic
    ("anthropic.BadRequestError: Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', "
     "'message': 'prompt is too long: 202095 tokens > 200000 maximum'}}", {"input_tokens": 202095, "context_length": 200000}),
    # Gemini on Vertex, and AI Studio without the prompt's count
    ("google.api_core.exceptions.InvalidArgument: 400 The input token count (1200000) exceeds the maximum number of "
     "tokens allowed (1048576).", {"input_tokens": 1200000, "context_length": 1048576}),
    ('{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed (1048576).",'
     '"status":"INVALID_ARGUMENT"}}', {"context_length": 1048576}),
    # xAI
    ("This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
     {"input_tokens": 537812, "context_length": 131072}),
])
def test_provider_wordings_of_a_prompt_over_the_context(tmp_path: Path, line: str, numbers: dict[str, int]) -> None:
    f = top(triage_files(tmp_path, {"rollout.log": line + "\n"}))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.context-length-exceeded", "error")
    assert {k: f.numbers[k] for k in numbers} == numbers


def test_a_judge_calls_prompt_over_its_providers_context_is_the_verifiers(tmp_path: Path) -> None:
    line = ("anthropic.BadRequestError: Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', "
            "'message': 'prompt is too long: 202095 tokens > 200000 maximum'}}")
    f = top(triage_files(tmp_path, {"judge.log": line + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.judge-context-length")
    assert "judge.max_context_length" in knob_names(f)


def test_a_host_ram_allocation_failure_is_not_a_gpu_oom() -> None:
    f = top(triage_dir(case("885-") / "input"))
    assert (f.category, f.rule) == ("other", "other.host-allocation-failed")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 6)
    assert f.numbers["tried_bytes"] == 318767104000
    assert not knob_names(f)


@pytest.mark.parametrize("line", [
    "RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
    "to allocate 2359296 bytes. Error code 12 (Cannot allocate memory)",
    "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.50 GiB for an array with shape (30000, 31327) and "
    "data type float32",
])
def test_other_host_allocator_wordings(tmp_path: Path, line: str) -> None:
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.host-allocation-failed")


# TRL GRPOTrainer's logged dicts (the format of real-extra 202, trl issue 3857): a reward NaN in the same record as
# the NaN gradient norm fed it (NaN advantages, loss, gradients), so the rewards' finding leads; NaN gradients that
# came first lead themselves.
NAN_FED = ("{'loss': 0.0, 'grad_norm': nan, 'rewards/accuracy_reward/mean': nan, 'reward': nan, 'reward_std': nan, "
           "'epoch': 0.1}\n")
NAN_FIRST = ("{'loss': 0.1, 'grad_norm': nan, 'reward': 0.5, 'reward_std': 0.3, 'epoch': 0.1}\n"
             "{'loss': 0.1, 'grad_norm': nan, 'reward': nan, 'reward_std': nan, 'epoch': 0.2}\n")


def test_non_finite_rewards_lead_the_non_finite_gradients_they_fed(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": NAN_FED})
    rules = [f.rule for f in report.findings]
    assert rules.index("verifier.rewards-degenerate") < rules.index("health.grads-non-finite")
    grads = report.findings[rules.index("health.grads-non-finite")]
    assert grads.numbers["after_non_finite_reward"] == "reward"  # the step total, checked first


def test_gradients_non_finite_before_the_rewards_lead(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": NAN_FIRST})
    assert top(report).rule == "health.grads-non-finite"
    assert "after_non_finite_reward" not in top(report).numbers
