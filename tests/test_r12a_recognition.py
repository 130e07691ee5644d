"""Recognition round 12 (r12a): serving OOM and KV exhaustion in engines beyond SGLang and vLLM, on fresh threads.

- LMDeploy TurboMind's cache asserts, "No enough blocks" (real-extra 930, InternLM/lmdeploy issue 720) and "No
  enough cache entries" (931, issue 277), join the paged-allocator family (serving.kv-blocks-exhausted).
- ggml / llama.cpp (ollama, llama-cpp-python, llamafile): a device buffer that cannot be allocated (935), the KV cache
  sized for n_ctx that does not fit (936), and the server finding no free KV cells for a batch (937, 938).
- Other engines' device OOM: Tenstorrent's tt-metal allocator under its vLLM fork (942), vLLM-Metal's negative KV
  budget (943); Rust engines (mistral.rs 939/940, vllm.rs 941) and vLLM-Ascend NPU OOMs (932-934) were already known.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_case as case
from conftest import knob_names, top, triage_dir, triage_files


@pytest.mark.parametrize(("prefix", "line", "what"), [
    ("930-", 29, "blocks"),
    ("931-", 2, "cache entries"),
])
def test_turbomind_running_out_of_cache_blocks_is_kv_exhaustion(prefix: str, line: int, what: str) -> None:
    f = top(triage_dir(case(prefix) / "input"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.kv-blocks-exhausted", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", line)
    assert f.numbers["turbomind_ran_out_of"] == what
    assert {"inference.sglang_max_running_requests", "inference.sglang_mem_fraction_static"} <= set(knob_names(f))


def test_the_words_no_enough_blocks_without_turbomind_are_not_a_kv_cache(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"server.log": "ERROR: No enough blocks\n"})
    assert not [f for f in report.findings if f.rule == "serving.kv-blocks-exhausted"]


def test_ollama_failing_to_allocate_the_weights_buffer_is_an_engine_oom() -> None:
    f = top(triage_dir(case("935-") / "input"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.ggml-device-alloc-failed", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", 4)
    assert f.numbers["alloc_mib"] == 81656.95 and f.numbers["device"] == 0
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


@pytest.mark.parametrize("line", [
    "llama_model_load: error loading model: unable to allocate ROCm0 buffer",
    "0.02.468.179 E alloc_tensor_range: failed to allocate Vulkan0 buffer of size 1037832192",
    "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8900.01 MiB on device 0: cudaMalloc failed: out of memory",
])
def test_other_ggml_backends_failing_a_device_buffer(tmp_path: Path, line: str) -> None:
    f = top(triage_files(tmp_path, {"server.log": line + "\n"}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.ggml-device-alloc-failed")


def test_a_cpu_buffer_that_fails_is_not_a_gpu_buffer(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"server.log": (
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 437944320\n"
        "llama_model_load: error loading model: unable to allocate CPU buffer\n")})
    assert not [f for f in report.findings if f.rule == "serving.ggml-device-alloc-failed"]


def test_llama_cpp_kv_cache_for_the_context_that_does_not_fit_ranks_above_its_buffer() -> None:
    report = triage_dir(case("936-") / "input")
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.kv-cache-startup-oversized")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", 2)
    assert "inference.sglang_max_total_tokens" in knob_names(f)
    assert "serving.ggml-device-alloc-failed" in {g.rule for g in report.findings}


@pytest.mark.parametrize(("prefix", "first_line", "count", "first_batch"), [
    ("937-", 1, 12, 64),
    ("938-", 1, 10, 256),
])
def test_llama_cpp_server_with_no_free_kv_cells_is_a_warning_with_the_batch(
        prefix: str, first_line: int, count: int, first_batch: int) -> None:
    f = top(triage_dir(case(prefix) / "input"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.llamacpp-kv-cache-full", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", first_line)
    assert f.count == count
    assert f.numbers["n_batch"] == first_batch
    assert {"inference.sglang_max_total_tokens", "inference.sglang_max_running_requests"} <= set(knob_names(f))


def test_another_decode_failure_code_is_not_a_kv_shortage(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"server.log": "update_slots : failed to decode the batch, n_batch = 1, ret = -1\n"})
    assert not [f for f in report.findings if f.rule == "serving.llamacpp-kv-cache-full"]


def test_tt_metal_dram_allocator_oom_in_the_engine_is_a_serving_oom() -> None:
    f = top(triage_dir(case("942-") / "input"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", 3)


def test_vllm_metal_negative_kv_budget_names_the_memory_share() -> None:
    f = top(triage_dir(case("943-") / "input"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-memory-negative")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm-server.log", 2)
    assert f.numbers["gpu_memory_utilization"] == 0.15 and f.numbers["kv_gb"] == -0.89
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


def test_tensorrt_llm_engine_that_does_not_fit_when_deserialized_is_an_engine_oom(tmp_path: Path) -> None:
    # guidance-ai/llgtrt issue 7 (TensorRT-LLM 0.14): the allocator's three lines, then the runtime's assertion
    f = top(triage_files(tmp_path, {"server.log": (
        "[TensorRT-LLM][INFO] Loaded engine size: 68370 MiB\n"
        "[TensorRT-LLM][ERROR] [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)\n"
        "[TensorRT-LLM][WARNING] Requested amount of GPU memory (69568823808 bytes) could not be allocated. There may "
        "not be enough free memory for allocation to succeed.\n"
        "[TensorRT-LLM][ERROR] [deserialize.cpp::load::572] Error Code 2: OutOfMemory (Requested size was 69568823808 "
        "bytes.)\n"
        "Error: tlc_init: [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. (/home/jenkins/"
        "agent/workspace/LLM/release-0.14/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:135)\n")}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.cuda-check-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", 2)
    assert f.count == 3
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


def test_the_tensorrt_engine_builder_running_out_is_not_serving(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"build.log": (
        "[11/10/2023-06:30:40] [TRT] [W] Requested amount of GPU memory (24793579520 bytes) could not be allocated. "
        "There may not be enough free memory for allocation to succeed.\n")})
    assert not [f for f in report.findings if f.rule == "serving.cuda-check-oom"]


@pytest.mark.parametrize(("line", "numbers"), [
    # sgl-project/sglang issue 2102 (FlashInfer 0.1.x)
    ("RuntimeError: Failed to allocate memory for batch_prefill_tmp_v with size 435814400 and alignment 16 in "
     "AlignedAllocator", {"requested_bytes": 435814400}),
    # vllm-project/vllm issue 25342 (FlashInfer 0.2+)
    ("flashinfer/allocator.h:49: Buffer overflow when allocating memory for batch_prefill_tmp_v with size 283115520 "
     "and alignment 16, but only 268435456 bytes available in AlignedAllocator. Increase the workspace buffer size.",
     {"requested_bytes": 283115520, "available_bytes": 268435456}),
    # flashinfer-ai/flashinfer issue 362 (0.0.x, sic)
    ("RuntimeError: RuntimeError: Out of workspace memory in AlignedAlloactor", {}),
])
def test_flashinfer_workspace_overflow_names_the_prefill_chunk(tmp_path: Path, line: str,
                                                                numbers: dict[str, int]) -> None:
    f = top(triage_files(tmp_path, {"sglang-server.log": line + "\n"}))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.attention-workspace-overflow", "error")
    for key, value in numbers.items():
        assert f.numbers[key] == value
    assert knob_names(f)[0] == "miles.sglang_chunked_prefill_size"


def test_mindie_warmup_out_of_memory_is_the_warmup_family_with_its_setting(tmp_path: Path) -> None:
    # gpustack/gpustack issue 3541 (MindIE 2.2.RC1): the file name says nothing of the engine
    f = top(triage_files(tmp_path, {"mindie.log": (
        "[2025-11-25 17:23:11,888] [249] [281471718846752] [llm] [ERROR] [logging.py-348] : Warmup failed, because of "
        "multimodal model inference out of memory when `maxInputTokenLen` set to 8192. Please try to decrease "
        "`maxPrefillTokens` in config.json of mindie-service.\n")}))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.warmup-no-memory", "error")
    assert (f.numbers["setting"], f.numbers["setting_value"]) == ("maxInputTokenLen", 8192)
    assert knob_names(f)[0] == "miles.sglang_chunked_prefill_size"


@pytest.mark.parametrize(("line", "rule"), [
    ("Decode out of memory. This should nerver happen.", "serving.decode-alloc-failed"),
    ("[2024-08-01 10:00:00 TP0] Prefill out of memory. This should never happen.", "serving.prefill-alloc-failed"),
])
def test_sglang_02_allocator_exits_are_the_same_families(tmp_path: Path, line: str, rule: str) -> None:
    f = top(triage_files(tmp_path, {"sglang-server.log": line + "\n"}))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", rule, "error")


@pytest.mark.parametrize(("name", "line", "category", "rule"), [
    # vllm-project/tpu-inference PR 1710: the engine core on TPU
    ("vllm-server.log", "(EngineCore_DP0 pid=344) ERROR 02-10 19:23:35 [tpu_offload_connector.py:2498] Error gathering "
     "blocks for request cmpl-9cbf94ef9250316c-0: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to "
     "allocate 832.0K. That was not possible. There are 112.5K free.; (0x0x0_HBM0)",
     "serving-oom-retraction", "serving.engine-cuda-oom"),
    # googlecolab/colabtools issue 5126: a Hugging Face trainer on a TPU v2-8
    ("train.log", "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to "
     "allocate 129.50M. That was not possible. There are 78.17M free.; (0x0x0_HBM0)", "trainer-oom", "trainer.cuda-oom"),
])
def test_xla_device_buffer_oom_goes_to_the_process_that_printed_it(tmp_path: Path, name: str, line: str,
                                                                   category: str, rule: str) -> None:
    f = top(triage_files(tmp_path, {name: line + "\n"}))
    assert (f.category, f.rule, f.severity) == (category, rule, "error")


def test_lmdeploy_pytorch_engine_without_room_for_one_prefill_is_the_warmup_family(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"server.log": (
        "2025-06-20 10:00:00,000 - lmdeploy - WARNING - cache_engine.py:90 - No enough memory. Update "
        "max_prefill_token_num=2048\n"
        "RuntimeError: No enough gpu memory for runtime.\n")})
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.warmup-no-memory", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", 2)
    assert f.count == 1


def test_vllm_v0_prompt_beyond_the_block_manager_is_kv_capacity_not_the_prompt_limit(tmp_path: Path) -> None:
    # vllm-project/vllm issue 2198 (V0 0.2.x): the request is ignored because the KV blocks cannot hold its prompt
    report = triage_files(tmp_path, {"vllm-server.log": (
        "WARNING 12-19 10:21:05 scheduler.py:161] Input prompt (1217 tokens) is too long and exceeds the capacity of "
        "block_manager\n"
        "INFO 12-19 10:21:05 async_llm_engine.py:111] Finished request cmpl-b8c7b3b2eb7a4de488ef870004648708.\n")})
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm-server.log", 1)
    assert f.numbers["input_tokens"] == 1217
    assert knob_names(f)[0] == "inference.sglang_mem_fraction_static"
