"""Recognition round 20 (r20c): serving memory and prompt budgets across engines and versions (real-extra 1920-1933).

- TensorRT-LLM's batch manager printing the numbers after the names, "maxTokensInPagedKvCache (29184) must be large
  enough to process at least 1 sequence to completion (i.e. must be larger than beam_width (1) * tokensPerBlock (128)
  * maxBlocksPerSeq (272))": serving.vllm-kv-capacity, as the bare older wording (1920).
- vLLM V0's preemption warning pasted as "is preempted in PreemptionMode.RECOMPUTE mode": serving.vllm-preemption;
  followed within a few lines by the engine's death ("Engine background task failed"):
  serving.vllm-preemption-crashed, the crash folded into it (1927).
- GGML-era bindings' context overflow: ctransformers' "Number of tokens (757) exceeded maximum context length (512)."
  (with and without the logger prefix) and GPT4All's "The prompt size exceeds the context window size":
  prompt.llamacpp-context-exceeded (1929, 1930).
- SGLang's request-slot exhaustion in every generation: 2025's "alloc_req_slots runs out of memory", 2024's
  "Out of memory. Please set a smaller number for `--max-running-requests`." and 0.1.x's unchecked None
  ("req_pool_indices.cpu()" then AttributeError 'NoneType' ... 'cpu'): serving.request-slots-exhausted /
  serving.request-slots-none (1931).
- Engines refusing a model or a prompt on their own memory estimate: Ollama's "model requires more system memory
  (18.7 GiB) than is available (4.1 GiB)" and oMLX's "prefill memory guard rejected this prompt":
  serving.engine-memory-estimate-refused (1932, 1933).
- Blind right, kept right: TensorRT-LLM's cudaMallocAsync OOM (1921, 1922), TGI-family warm-ups with no memory for
  the prefill budget (LoRAX, router v3; 1923, 1924), vLLM V0 "exceeds limit of 1000" and TensorRT-LLM "Prompt length
  (1240) exceeds maximum input length (1024)" (1925, 1926), a hard-wrapped DeepGEMM warm-up OOM (1928).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files


def test_trtllm_kv_capacity_with_numbers_after_the_names():
    f = top(triage_dir(extra_input("1920")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-kv-capacity", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("triton_server.log", 3)]
    assert f.numbers["pool_tokens"] == 29184
    assert knob_names(f)[0] == "inference.sglang_mem_fraction_static"


@pytest.mark.parametrize("line", [
    "[TensorRT-LLM][ERROR] maxTokensInPagedKvCache must be large enough to process at least 1 sequence to completion "
    "(i.e. must be larger than beam_width * tokensPerBlock * maxBlocksPerSeq)",
    "ERROR: Failed to create instance: unexpected error when creating modelInstanceState: maxTokensInPagedKvCache "
    "(4096) must be large enough to process at least 1 sequence to completion (i.e. must be larger than beam_width (1) "
    "* tokensPerBlock (64) * maxBlocksPerSeq (128))",
])
def test_trtllm_kv_capacity_both_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"triton.log": line + "\n"}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")


def test_vllm_preemption_then_engine_death_is_the_kv_pressure():
    f = top(triage_dir(extra_input("1927")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-preemption-crashed", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("vllm-server.log", 1)
    assert f.numbers["mode"] == "RECOMPUTE"
    assert "other.engine-crash" in f.numbers["symptoms"]
    assert knob_names(f)[0] == "inference.sglang_max_running_requests"


PREEMPTED = ("WARNING 10-28 11:16:41 scheduler.py:1483] Sequence group chat-7e63 is preempted by PreemptionMode.SWAP "
             "mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
             "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
             "total_num_cumulative_preemption=1\n")


def test_vllm_preemption_alone_stays_a_warning(tmp_path: Path):
    text = PREEMPTED + "INFO 10-28 11:16:44 metrics.py:349] Avg prompt throughput: 0.0 tokens/s\n"
    f = top(triage_files(tmp_path, {"vllm.log": text}))
    assert (f.rule, f.severity) == ("serving.vllm-preemption", "warning")


def test_vllm_preemption_far_from_a_later_crash_is_not_its_cause(tmp_path: Path):
    filler = "".join(f"INFO 10-28 11:17:{i:02d} metrics.py:349] Avg prompt throughput: 0.0 tokens/s\n" for i in range(30))
    text = PREEMPTED + filler + "ERROR 10-28 11:18:30 async_llm_engine.py:63] Engine background task failed\n"
    rules = [f.rule for f in triage_files(tmp_path, {"vllm.log": text}).findings]
    assert "serving.vllm-preemption-crashed" not in rules
    assert "serving.vllm-preemption" in rules


@pytest.mark.parametrize("prefix,tokens,context", [("1929", 757, 512), ("1930", 755, 512)])
def test_ctransformers_context_overflow(prefix: str, tokens: int, context: int):
    f = top(triage_dir(extra_input(prefix)))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.llamacpp-context-exceeded")
    assert (f.evidence[0].line, f.numbers["input_tokens"], f.numbers["context_length"]) == (1, tokens, context)
    assert knob_names(f)[0] == "inference.max_context_length"


@pytest.mark.parametrize("line", [
    "2025-03-02 10:01:12,345 - ctransformers - WARNING - Number of tokens (2210) exceeded maximum context length (2048).",
    "ERROR: The prompt size exceeds the context window size and cannot be processed.",
    "LLaMA ERROR: The prompt is 2105 tokens and the context window is 2048!",
    "GPT-J ERROR: The prompt is3021tokens and the context window is2048!",
])
def test_other_ggml_binding_context_overflows(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"app.log": line + "\n"}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.llamacpp-context-exceeded")


def test_sglang_01_unchecked_request_pool_allocation():
    f = top(triage_dir(extra_input("1931")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.request-slots-none", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("server.log", 13)]
    assert knob_names(f)[:2] == ["inference.sglang_max_running_requests", "inference.sglang_mem_fraction_static"]


def test_a_none_cpu_error_elsewhere_is_not_the_request_pool(tmp_path: Path):
    text = ('  File "train.py", line 10, in step\n    x = batch.cpu()\n'
            "AttributeError: 'NoneType' object has no attribute 'cpu'\n")
    rules = [f.rule for f in triage_files(tmp_path, {"train.log": text}).findings]
    assert "serving.request-slots-none" not in rules


@pytest.mark.parametrize("line", [
    "RuntimeError: Out of memory. Please set a smaller number for `--max-running-requests`.",
    "RuntimeError: Out of memory. Please set a smaller number for `--max-running-requests` or `--beam-width`.",
    "RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for `--max-running-requests`. "
    "req_to_token_pool.available_size()=0, num_reqs=8, ",
])
def test_sglang_request_slot_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"sglang.log": line + "\n"}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.request-slots-exhausted")


def test_omlx_prefill_memory_guard_wrapped_by_the_client():
    f = top(triage_dir(extra_input("1932")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-memory-estimate-refused")
    assert [(e.file, e.line) for e in f.evidence][:2] == [("omlx.log", 1), ("omlx.log", 2)]
    assert knob_names(f)[0] == "inference.sglang_mem_fraction_static"


def test_ollama_model_needs_more_system_memory():
    f = top(triage_dir(extra_input("1933")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-memory-estimate-refused")
    assert [(e.file, e.line) for e in f.evidence] == [("continue.log", 4)]
    assert (f.numbers["needed"], f.numbers["available"]) == (18.7, 4.1)


@pytest.mark.parametrize("line", [
    "Error: model requires more system memory (44.0 GiB) than is available (7.6 GiB)",
    '{"error":"model requires more system memory (63.6 GiB) than is available (18.9 GiB)"}',
    "oMLX prefill memory guard rejected this prompt: Prefill would require ~35.57 GB peak (current 24.93 GB + "
    "KV+SDPA 10.64 GB) but metal_cap ceiling is 35.57 GB.",
    "MLX prefill memory guard rejected this prompt: Prefill context too large for available memory (preflight "
    "safety margin)",
])
def test_memory_estimate_refusals(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"server.log": line + "\n"}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-memory-estimate-refused")


@pytest.mark.parametrize("prefix,rule,where", [
    ("1921", "serving.cuda-check-oom", ("djl-serving.log", 1)),
    ("1922", "serving.cuda-check-oom", ("gptManagerBenchmark.log", 3)),
    ("1923", "serving.warmup-no-memory", ("lorax.log", 1)),
    ("1924", "serving.warmup-no-memory", ("tgi.log", 1)),
    ("1925", "prompt.context-length-exceeded", ("vllm.log", 1)),
    ("1926", "prompt.context-length-exceeded", ("predict.log", 1)),
    # r21c: the DeepGEMM warm-up OOM has its own rule now (serving.engine-oom-kernel-warmup), same line
    ("1928", "serving.engine-oom-kernel-warmup", ("vllm-serve.log", 19)),
])
def test_blind_right_cases_stay_right(prefix: str, rule: str, where: tuple[str, int]):
    f = top(triage_dir(extra_input(prefix)))
    assert f.rule == rule
    assert (f.evidence[0].file, f.evidence[0].line) == where


@pytest.mark.parametrize("prefix,rule,where", [
    # round 2: real threads added after the rules were written
    ("1934", "serving.engine-memory-estimate-refused", ("ollama-run.log", 11)),
    ("1935", "serving.engine-memory-estimate-refused", ("rag-agent.log", 10)),
    ("1936", "prompt.llamacpp-context-exceeded", ("privateGPT.log", 1)),
    ("1937", "serving.engine-memory-estimate-refused", ("app.log", 1)),
])
def test_round_two_cases(prefix: str, rule: str, where: tuple[str, int]):
    f = top(triage_dir(extra_input(prefix)))
    assert f.rule == rule
    assert (f.evidence[0].file, f.evidence[0].line) == where
