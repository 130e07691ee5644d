"""Recognition round 19 (r19f): prompt-budget and cold-start message families across versions (real-extra
1860-1869).

- llama.cpp's server before its 2025 refactor (and ik_llama.cpp, cortex.cpp, llama-box) refuses a request no KV slot
  can hold: "failed to decode the batch: KV cache is full - try increasing it via the context size" then HTTP 500
  "Input prompt is too big compared to KV size. Please try increasing KV size." (llama-box: "input prompt is too big
  compared to KV size, please increase KV size"): prompt.llamacpp-context-exceeded (1861-1863).
- SGLang's 2024 scheduler warning "Request length is longer than the KV cache pool size or the max context length.
  Truncated!!!" quoted without its "!!!" now passes the prefilter: prompt.auto-truncated (1860).
- SkyRL's wait_for_server deadline "Server at HOST:PORT did not come online within N seconds" is a readiness
  deadline: cold.startup-not-ready with the deadline read (1868).
- Blind right, kept right: vLLM 0.7's "maximum context length is 1 tokens ... in the messages," (1864), vLLM 0.5's
  KV capacity below the window (1865), vllm-ascend's double-spaced "No available memory for the cache blocks" (1866),
  the text-only decoder-prompt message (1867) and the HF tokenizer warning in a GRPO run (1869).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files


def test_llama_box_prompt_too_big_for_kv_is_a_prompt_over_the_slot_context():
    f = top(triage_dir(extra_input("1861")))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.llamacpp-context-exceeded", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("client-error.txt", 1)]
    assert "inference.max_context_length" in knob_names(f)


@pytest.mark.parametrize("case, lines", [("1862", [1, 2]), ("1863", [1, 3])])
def test_ik_llama_kv_cache_full_and_prompt_too_big(case: str, lines: list[int]):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.llamacpp-context-exceeded")
    assert [(e.file, e.line) for e in f.evidence] == [("llama-server.log", n) for n in lines]
    assert knob_names(f)[0] == "inference.max_context_length"


@pytest.mark.parametrize("line", [
    # llama.cpp examples/server (2024), cortex.cpp, xinference's llama.cpp backend (its docs quote the JSON error)
    "Server error: {'code': 500, 'message': 'Input prompt is too big compared to KV size. Please try increasing KV "
    "size.', 'type': 'server_error'}",
    "input prompt is too big compared to KV size, please increase KV size",
    "update_slots: failed to decode the batch: KV cache is full - try increasing it via the context size, i = 0, "
    "n_batch = 1, ret = 1",
])
def test_the_llama_cpp_kv_refusal_family(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"server.log": line + "\n"}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.llamacpp-context-exceeded")


def test_llama_cpp_smaller_batch_retry_is_not_the_refusal(tmp_path: Path):
    log = ("29.22.825.917 W srv        decode: failed to find free space in the KV cache, retrying with smaller batch "
           "size, off = 2012, n_batch = 64, ret = 1\n")
    report = triage_files(tmp_path, {"server.log": log})
    assert all(f.rule != "prompt.llamacpp-context-exceeded" for f in report.findings)


def test_sglang_truncation_quoted_without_its_exclamation_marks():
    f = top(triage_dir(extra_input("1860")))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.auto-truncated", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("worker.log", 1)]


def test_skyrl_server_did_not_come_online_is_a_readiness_deadline():
    f = top(triage_dir(extra_input("1868")))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-not-ready")
    assert [(e.file, e.line) for e in f.evidence] == [("pytest.log", 2)]
    assert f.numbers["deadline"] == 200.0
    assert "engine.startup_timeout" in knob_names(f)


@pytest.mark.parametrize("line, deadline", [
    ("TimeoutError: Server at 127.0.0.1:8001 did not come online within 600 seconds", 600.0),
    ("RuntimeError: vLLM server did not come up within 900s", 900.0),
])
def test_come_online_deadline_family(tmp_path: Path, line: str, deadline: float):
    f = top(triage_files(tmp_path, {"launcher.log": line + "\n"}))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-not-ready")
    assert f.numbers["deadline"] == deadline


@pytest.mark.parametrize("line", [
    "The API did not come up within two minutes. See .run/api.log.",
    "Service 'Spooler' did not come Online within 60s (status: Stopped)",
])
def test_other_things_not_coming_up_are_not_an_engine_start(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"setup.log": line + "\n"})
    assert all(f.category != "cold-start" for f in report.findings)


@pytest.mark.parametrize("case, category, rule, numbers", [
    ("1864", "prompt-budget", "prompt.context-length-exceeded", {"context_length": 1, "total_tokens": 28}),
    ("1865", "serving-oom-retraction", "serving.vllm-kv-capacity", {"context_length": 163840, "pool_tokens": 63040}),
    ("1866", "serving-oom-retraction", "serving.vllm-kv-capacity", {}),
    ("1867", "prompt-budget", "prompt.context-length-exceeded", {"input_tokens": 76557, "context_length": 32000}),
    ("1869", "prompt-budget", "prompt.tokenizer-sequence-too-long", {"input_tokens": 15000, "context_length": 4096}),
])
def test_blind_right_cases_stay_right(case: str, category: str, rule: str, numbers: dict[str, int]):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == (category, rule)
    for k, v in numbers.items():
        assert f.numbers[k] == v


def test_double_spaced_ascend_paste_points_at_the_value_error():
    f = top(triage_dir(extra_input("1866")))
    assert ("vllm-serve.log", 5) in [(e.file, e.line) for e in f.evidence]


# Round 2 (1870-1872): TensorRT-LLM's max_num_tokens refusal and Ollama's embed context refusal.

def test_trtllm_prompt_over_max_num_tokens_through_triton():
    f = top(triage_dir(extra_input("1870")))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.trtllm-max-num-tokens", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("tritonserver.log", 1)]
    assert (f.numbers["input_tokens"], f.numbers["budget"]) == (9351, 8192)
    assert "miles.sglang_chunked_prefill_size" in knob_names(f)


@pytest.mark.parametrize("line", [
    "RequestError: The sum of prompt length (101), query length (0) should not exceed max_num_tokens (100)",
    '{"object":"error","message":"The sum of prompt length (38049.0), query length (0) should not exceed '
    'max_num_tokens (32768)","type":"BadRequestError","param":null,"code":400}',
])
def test_trtllm_max_num_tokens_family(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"serve.log": line + "\n"}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.trtllm-max-num-tokens")


def test_a_build_time_clamp_is_not_a_refused_request(tmp_path: Path):
    report = triage_files(tmp_path, {"build.log": "opt_num_tokens (9000) should not exceed max_num_tokens (8192).\n"})
    assert all(f.rule != "prompt.trtllm-max-num-tokens" for f in report.findings)


@pytest.mark.parametrize("case, file, line", [("1871", "nano-brain.log", 3), ("1872", "n8n-error.txt", 2)])
def test_ollama_embed_input_over_context(case: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert (file, line) in [(e.file, e.line) for e in f.evidence]
