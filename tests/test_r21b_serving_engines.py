"""Recognition round 21 (r21b): serving OOM, KV pools and prompt budgets in the newest engine versions and wrappers
(real-extra 2040-2049).

- LMDeploy TurboMind cuts its context (session_len) to what the KV pool holds at start-up, in two wordings:
  "No enough blocks for `session_len` (N), `session_len` truncated to M." (0.2-0.7) and "`session_len` truncated to M
  due to limited KV cache memory" (0.8+, 2026): serving.context-cut-to-kv-pool, warning (2041, 2042). The older
  wording is no longer a failed request (serving.kv-blocks-exhausted).
- vLLM V1 with --max-model-len auto: "Auto-fit max_model_len: reduced from X to Y ..." is a note
  (serving.vllm-auto-fit-context, info); "Cannot auto-fit max_model_len: not enough GPU memory available to serve even
  a single token" is the KV pool that cannot hold one token (serving.no-memory-for-kv-pool).
- TurboMind's sequence manager preempting running sequences ("[SeqMgr] #victim: N"): serving.turbomind-preemption,
  TurboMind's counterpart of SGLang's retraction and vLLM's preemption.
- An accelerator OOM exception cut after its head ("RuntimeError: NPU out of memory." ending a vllm-ascend worker's
  flattened traceback, 2048) is the engine's OOM (serving.engine-cuda-oom), not an unexplained line.
- Blind right, kept right: HIP OOMs of vLLM on ROCm (2040 Strix Halo, 2046 gfx906 with a glued traceback line), vLLM
  0.15's sampler warm-up OOM (2043), the KV check re-wrapped over three lines (2044), vLLM's VLLMValidationError for a
  prompt plus output over the context under vllm-ascend (2045), a double-spaced worker OOM paste (2047), ctransformers'
  "Number of tokens (513) exceeded maximum context length (512)" (2049).
- Graph captures broken by a kernel library on ROCm, not by memory, stay `other`: SGLang's "Capture cuda graph failed:
  HIP error: operation failed due to a previous error during capture" (AITER all-reduce, 2050, by
  other.graph-capture-failed) and vLLM's AITER "splitk workspace not initialized for the current CUDA stream" (2051,
  right only by the unexplained-error fallback).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

# -- LMDeploy TurboMind: the context cut to the KV pool -----------------------------------------------------------


def test_turbomind_session_len_cut_to_the_pool_and_warmup_failing_above_it():
    f = top(triage_dir(extra_input("2041")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.context-cut-to-kv-pool", "warning")
    assert [(e.file, e.line) for e in f.evidence][0] == ("lmdeploy-serve.log", 3)
    assert f.numbers["actual"] == 4928
    assert knob_names(f)[:2] == ["inference.sglang_mem_fraction_static", "inference.max_context_length"]


def test_turbomind_session_len_cut_on_four_ranks():
    f = top(triage_dir(extra_input("2042")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.context-cut-to-kv-pool")
    assert [(e.file, e.line) for e in f.evidence][0] == ("lmdeploy-serve.log", 3)
    assert f.numbers["actual"] == 42880


def test_turbomind_older_wording_names_the_requested_length(tmp_path: Path):
    line = "[TM][WARNING] No enough blocks for `session_len` (131072), `session_len` truncated to 111360."
    report = triage_files(tmp_path, {"lmdeploy.log": line + "\n"})
    f = top(report)
    assert (f.rule, f.numbers["requested"], f.numbers["actual"]) == ("serving.context-cut-to-kv-pool", 131072, 111360)
    assert "serving.kv-blocks-exhausted" not in {x.rule for x in report.findings}


def test_turbomind_block_assert_is_still_a_failed_request(tmp_path: Path):
    line = "[TM][ERROR] No enough blocks. Assertion fail: /root/lmdeploy/src/turbomind/models/llama/LlamaBatch.cc:358"
    f = top(triage_files(tmp_path, {"lmdeploy.log": line + "\n"}))
    assert (f.rule, f.severity) == ("serving.kv-blocks-exhausted", "error")


def test_turbomind_max_cached_tokens_alone_is_quiet(tmp_path: Path):
    report = triage_files(tmp_path, {"lmdeploy.log": "[TM][INFO] max cached tokens: 42880\n"})
    assert "serving.context-cut-to-kv-pool" not in {f.rule for f in report.findings}


# -- LMDeploy TurboMind: preempted sequences ------------------------------------------------------------------------


def test_turbomind_repeated_victims_warn(tmp_path: Path):
    text = "".join(f"[TM][WARNING] [SeqMgr] #victim: {n}\n" for n in (3, 1, 2))
    f = top(triage_files(tmp_path, {"lmdeploy.log": text}))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.turbomind-preemption", "warning")
    assert knob_names(f)[0] == "inference.sglang_max_running_requests"


def test_turbomind_single_victim_is_a_note(tmp_path: Path):
    f = top(triage_files(tmp_path, {"lmdeploy.log": "[TM][INFO] [SeqMgr] #victim: 1\n"}))
    assert (f.rule, f.severity) == ("serving.turbomind-preemption", "info")


# -- vLLM --max-model-len auto -----------------------------------------------------------------------------------------


def test_vllm_auto_fit_reduction_is_a_note(tmp_path: Path):
    line = ("(EngineCore_DP0 pid=7) INFO 06-01 10:00:00 [kv_cache_utils.py:2022] Auto-fit max_model_len: reduced from "
            "262144 to 117264 to fit in available GPU memory (12.5 GiB available for KV cache)")
    f = top(triage_files(tmp_path, {"vllm.log": line + "\n"}))
    assert (f.rule, f.severity) == ("serving.vllm-auto-fit-context", "info")
    assert (f.numbers["requested"], f.numbers["actual"], f.numbers["kv_cache_gib"]) == (262144, 117264, 12.5)


def test_vllm_auto_fit_with_no_room_for_one_token(tmp_path: Path):
    line = ("ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. "
            "Try increasing `gpu_memory_utilization`.")
    f = top(triage_files(tmp_path, {"vllm.log": line + "\n"}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.no-memory-for-kv-pool")
    assert knob_names(f)[0] == "inference.sglang_mem_fraction_static"


# -- an OOM exception cut after its head ---------------------------------------------------------------------------


def test_flattened_vllm_ascend_worker_traceback_ending_in_npu_oom():
    f = top(triage_dir(extra_input("2048")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert [(e.file, e.line) for e in f.evidence][0] == ("vllm-infer.log", 2)


@pytest.mark.parametrize("line", [
    "(VllmWorkerProcess pid=270962) ERROR 07-03 19:33:28 [multiproc_worker_utils.py:238] RuntimeError: NPU out of memory.",
    "(EngineCore_DP0 pid=43) ERROR 03-20 17:39:14 [core.py:1100] torch.OutOfMemoryError: HIP out of memory.",
])
def test_engine_oom_head_alone(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"vllm.log": line + "\n"}))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.engine-cuda-oom", "error")


def test_prose_naming_an_oom_is_not_the_exception(tmp_path: Path):
    report = triage_files(tmp_path, {"vllm.log": "After two hours the engine died with CUDA out of memory.\n"})
    assert "serving.engine-cuda-oom" not in {f.rule for f in report.findings}


# -- blind right, kept right -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case, category, rule, line", [
    ("2040", "serving-oom-retraction", "serving.engine-cuda-oom", 1),
    ("2043", "serving-oom-retraction", "serving.vllm-warmup-oom", 1),
    ("2044", "serving-oom-retraction", "serving.vllm-kv-capacity", 1),
    ("2045", "prompt-budget", "prompt.context-length-exceeded", 8),
    ("2046", "serving-oom-retraction", "serving.engine-cuda-oom", 5),
    ("2047", "serving-oom-retraction", "serving.engine-cuda-oom", 3),
    ("2049", "prompt-budget", "prompt.llamacpp-context-exceeded", 1),
])
def test_blind_right_cases(case: str, category: str, rule: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == (category, rule)
    assert f.evidence[0].line == line


def test_rocm_capture_broken_by_a_stream_is_not_a_capture_oom():
    f = top(triage_dir(extra_input("2050")))
    assert (f.category, f.rule) == ("other", "other.graph-capture-failed")
    assert f.rule != "serving.graph-capture-oom"


def test_aiter_workspace_error_in_capture_stays_outside_the_six():
    report = triage_dir(extra_input("2051"))
    assert all(f.category not in {"serving-oom-retraction", "cold-start"} for f in report.findings)
