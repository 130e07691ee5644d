"""Recognition round 19 (r19c): trainer OOM, prompt budgets, verifiers and failures outside the six (real-extra
1800-1819).

- The Hugging Face Hub answering a server error (500/502/503/504) while a run resolves, downloads or pushes a model,
  tokenizer or dataset: other.hub-server-error (1809-1811 blind, 1815-1817 round 2). Blind, the Hub's "504 Server
  Error: Gateway Time-out for url: https://huggingface.co/..." went to generation-tail (gen.gateway-timeout, a proxy
  in front of the rollout engine); the same 504 on an engine's URL still does.
- Ollama and llama.cpp's server cutting a prompt longer than the loaded context (Ollama's default num_ctx of 2048):
  prompt.auto-truncated, with the context and the prompt's length (1812-1814 blind, none before; 1818-1819 round 2).
- The Anthropic SDK's client errors (anthropic.RateLimitError, a 529 as InternalServerError) join openai and litellm in
  verifier.llm-client-error: unexplained before (found probing the family, no case of its own).
- A judge's provider refusing the reward's calls for want of credit, printed by the driver (verl's TaskRunner scores
  in-process) under frames of the reward or judge code: verifier.judge-credit-in-reward-code, not other (a
  data-generation client's refusal, 1710, stays other.api-credit-exhausted).
- Blind right, kept right: an optimizer-state OOM behind a log collector's timestamp (1801), a ZeRO-3 all-gather OOM
  (1802), MLX's Metal "Insufficient Memory" in GRPO and LoRA training (1806, 1807), Ray spilling onto a full disk
  (1803), Ray's memory monitor at a checkpoint save (1804), a ZeRO-3 checkpoint saved with empty shards (1808), a
  vLLM V0 prompt rejection inside Jupyter's HTML (1800).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files


@pytest.mark.parametrize(("case", "file", "line", "status", "url"), [
    ("1809", "train.log", 1, 504, "https://huggingface.co/api/models/Antreas/timm-ade20k-debug-137/commit/main"),
    ("1810", "notebook.txt", 10, 504, "https://huggingface.co/api/models/bert-base-uncased/tree/main?recursive=True"),
    ("1811", "colab.txt", 1, 504, "https://huggingface.co/openai/clip-vit-large-patch14/resolve/main/vocab.json"),
    ("1815", "train.log", 1, 500, "https://huggingface.co/api/datasets/ylacombe/jenny-tts-6h-tagged"),
    ("1816", "report.txt", 6, 500,
     "https://huggingface.co/api/datasets/HuggingFaceM4/the_cauldron/paths-info/847a98a779b1652d65111daf20c972dfcd333605"),
    ("1817", "issue.txt", 1, 500,
     "https://huggingface.co/api/models/unsloth/deepseek-r1-distill-qwen-32b-bnb-4bit/commits/main"),
])
def test_hub_server_errors_are_the_hubs(case: str, file: str, line: int, status: int, url: str):
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.hub-server-error", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert (f.numbers["status"], f.numbers["url"]) == (status, url)
    assert knob_names(f) == []
    assert not any(g.rule == "gen.gateway-timeout" for g in report.findings)


@pytest.mark.parametrize("text", [
    # httpx's raise_for_status wording (huggingface_hub 1.x)
    "huggingface_hub.errors.HfHubHTTPError: Server error '504 Gateway Timeout' for url "
    "'https://huggingface.co/api/models/Qwen/Qwen3-8B/revision/main'",
    # the Hub's mirror, requests' wording
    "requests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: https://hf-mirror.com/api/models/Qwen/Qwen3-8B",
])
def test_other_hub_server_error_wordings(tmp_path: Path, text: str):
    f = top(triage_files(tmp_path, {"train.log": text + "\n"}))
    assert (f.category, f.rule) == ("other", "other.hub-server-error")


@pytest.mark.parametrize("text", [
    "requests.exceptions.HTTPError: 504 Server Error: Gateway Time-out for url: http://10.0.0.5:8000/v1/chat/completions",
    "openai.InternalServerError: Error code: 504 - {'error': 'Request timed out.'}",
])
def test_a_504_from_the_engine_is_still_a_generation_timeout(tmp_path: Path, text: str):
    f = top(triage_files(tmp_path, {"rollout.log": text + "\n"}))
    assert (f.category, f.rule) == ("generation-tail", "gen.gateway-timeout")


def test_the_hubs_rate_limit_keeps_its_rule(tmp_path: Path):
    text = ("huggingface_hub.utils._errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
            "https://huggingface.co/api/datasets/HuggingFaceM4/WebSight\n")
    assert top(triage_files(tmp_path, {"train.log": text})).rule == "other.hub-rate-limited"


@pytest.mark.parametrize(("case", "file", "line", "context", "prompt"), [
    ("1812", "ollama.log", 3, 2048, 5065),
    ("1813", "ollama.log", 1, 2048, 91541),
    ("1814", "ollama.log", 1, 2048, None),
    ("1818", "issue.txt", 3, 2048, 74706),
    ("1819", "issue.txt", 2, 2048, 16101),
])
def test_engine_truncating_the_prompt_is_a_prompt_budget(case: str, file: str, line: int, context: int,
                                                         prompt: int | None):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.auto-truncated", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers["context_length"] == context
    assert f.numbers.get("input_tokens") == prompt
    assert {"inference.max_context_length", "miles.rollout_max_prompt_len"} <= set(knob_names(f))


def test_llama_server_slot_truncation(tmp_path: Path):
    log = ("slot update_slots: id  0 | task 0 | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 39846\n"
           "slot update_slots: id  0 | task 0 | input truncated, n_ctx = 4096, n_keep = 0, n_left = 4096, "
           "n_prompt_tokens = 2982\n")
    f = top(triage_files(tmp_path, {"llama-server.log": log}))
    assert (f.rule, f.evidence[0].line, f.numbers["context_length"]) == ("prompt.auto-truncated", 2, 4096)


def test_ollama_startup_lines_are_not_truncation(tmp_path: Path):
    log = ('time=2025-04-22T11:21:46.411Z level=INFO source=server.go:619 msg="llama runner started in 0.25 seconds"\n'
           '[GIN] 2025/04/22 - 11:21:46 | 200 |  444.455595ms |    10.130.41.81 | POST     "/api/embeddings"\n')
    assert not [f for f in triage_files(tmp_path, {"ollama.log": log}).findings if f.category == "prompt-budget"]


@pytest.mark.parametrize(("case", "rule", "file", "line"), [
    ("1800", "prompt.context-length-exceeded", "notebook-output.txt", 13),
    ("1801", "trainer.oom-optimizer-step", "train.log", 4),
    ("1802", "trainer.oom-param-gather", "train.log", 3),  # s20: the ZeRO-3 gather OOM has its own rule
    ("1806", "trainer.cuda-oom", "issue.txt", 2),
    ("1807", "trainer.cuda-oom", "train.log", 7),
])
def test_blind_right_kept_right(case: str, rule: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.rule, f.evidence[0].file, f.evidence[0].line) == (rule, file, line)


def test_optimizer_state_oom_numbers_behind_a_glued_timestamp():
    f = top(triage_dir(extra_input("1801")))
    assert (f.numbers["tried"], f.numbers["free"], f.numbers["capacity"]) == (3.74, 1.33, 79.15)
    assert "trainer.optimizer_offload" in knob_names(f)


@pytest.mark.parametrize(("case", "rule"), [
    ("1803", "other.disk-full"),
    ("1804", "other.host-oom"),
    ("1808", "other.checkpoint-load-failed"),
])
def test_outside_the_six(case: str, rule: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", rule)


@pytest.mark.parametrize("text", [
    "anthropic.RateLimitError: Error code: 429 - {'type': 'error', 'error': {'type': 'rate_limit_error', 'message': "
    "'This request would exceed the rate limit for your organization'}}",
    "anthropic.InternalServerError: Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error', "
    "'message': 'Overloaded'}}",
])
def test_anthropic_judge_client_errors_are_the_verifiers(tmp_path: Path, text: str):
    f = top(triage_files(tmp_path, {"train.log": text + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.llm-client-error")
    assert "judge.rate_limit" in knob_names(f)


QUOTA = ("openai.RateLimitError: Error code: 429 - {'error': {'message': 'You exceeded your current quota, please check "
         "your plan and billing details.', 'type': 'insufficient_quota', 'param': None, 'code': 'insufficient_quota'}}")


def test_judge_out_of_credit_under_the_drivers_reward_frames_is_the_verifiers(tmp_path: Path):
    log = "".join(f"(TaskRunner pid=2210) {s}\n" for s in [
        "Traceback (most recent call last):",
        '  File "/workspace/verl/verl/workers/reward_manager/naive.py", line 88, in __call__',
        "    score = self.compute_score(",
        '  File "/workspace/rewards/llm_judge.py", line 41, in compute_score',
        "    resp = client.chat.completions.create(model=JUDGE, messages=msgs)",
        QUOTA])
    f = top(triage_files(tmp_path, {"train.log": log}))
    assert (f.category, f.rule, f.evidence[0].line) == ("verifier", "verifier.judge-credit-in-reward-code", 6)
    assert knob_names(f) == ["judge.api_key"]


def test_a_data_generation_client_out_of_credit_stays_other():
    f = top(triage_dir(extra_input("1710")))
    assert (f.category, f.rule) == ("other", "other.api-credit-exhausted")
