"""Recognition round 11 (r11b): serving OOM and cold-start wordings fresh cases missed.

LMDeploy's TurboMind engine reports its out-of-memory as "[TM][ERROR] CUDA runtime error: out of memory <source>"
from several sources across versions (real-extra 890, 891, 892, 898: lmdeploy issues 3557, 1019, 2236, 220), as
FasterTransformer ([FT]) and TensorRT-LLM's C++ runtime (with the failed call) do. RL
drivers that wait on a Ray placement group print their own wait (open-instruct issue 1431, real-extra 894; slime's
placement_group.py), and `ray status` lists the pending group under Demands. sglang-router gives up on the workers'
health at start-up (sglang issue 2778, real-extra 899)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, triage_dir, triage_files

EXTRA = FIXTURES / "real-extra"

CUDA_CHECK_OOMS = [
    # lmdeploy issue 3557 (0.8.0, core/allocator.cc)
    "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/core/allocator.cc:49",
    # lmdeploy issue 1019 (0.2.0, raised into Python)
    "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231",
    # lmdeploy issue 2236 (memory_utils.cu, and std::terminate's what() in a comment)
    "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32",
    "  what():  [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:233",
    # FasterTransformer's TensorRT plugin (code index, file id 28191851007)
    "  what():  [FT][ERROR] CUDA runtime error: out of memory /workspace/FasterTransformer/src/fastertransformer/"
    "tensorrt_plugin/swin/swinTransformerPlugin.h:198",
    # TensorRT-LLM's C++ runtime, raised into Python (code index, file id 71322705288) and inside Triton's model load
    # (code index, file id 57090894761)
    "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of memory",
    "E1128 16:31:49.479096 227 backend_model.cc:634] ERROR: Failed to create instance: unexpected error when creating "
    "modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(...): out of memory",
]


def test_every_engine_cuda_check_out_of_memory_is_the_engines_whatever_the_file(tmp_path: Path) -> None:
    for i, line in enumerate(CUDA_CHECK_OOMS):
        for name in ("api_server.log", "train.log", "deploy.log"):
            report = triage_files(tmp_path / f"{i}-{name}", {name: "INFO start\n" + line + "\n"})
            f = report.findings[0]
            assert (f.rule, f.category, f.severity) == ("serving.cuda-check-oom", "serving-oom-retraction", "error")
            assert (f.evidence[0].file, f.evidence[0].line) == (name, 2)
            assert knob_names(f)[:2] == ["inference.sglang_mem_fraction_static", "inference.sglang_max_running_requests"]


def test_the_engine_and_source_are_kept(tmp_path: Path) -> None:
    f = by_rule(triage_files(tmp_path, {"api_server.log": CUDA_CHECK_OOMS[0] + "\n"}))["serving.cuda-check-oom"]
    assert (f.numbers.get("engine"), f.numbers.get("source")) == ("TM", "/lmdeploy/src/turbomind/core/allocator.cc:49")
    f = by_rule(triage_files(tmp_path / "t", {"server.log": CUDA_CHECK_OOMS[5] + "\n"}))["serving.cuda-check-oom"]
    assert f.numbers.get("engine") == "TensorRT-LLM"


def test_an_engine_cuda_check_that_is_not_memory_is_not_an_oom(tmp_path: Path) -> None:
    for i, line in enumerate((
            # lmdeploy issue 1058
            "RuntimeError: [TM][ERROR] CUDA runtime error: invalid argument /lmdeploy/src/turbomind/utils/allocator.h:262",
            "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in cudaStreamIsCapturing(stream, &status): an illegal "
            "memory access was encountered")):
        report = triage_files(tmp_path / str(i), {"api_server.log": line + "\n"})
        assert not [f for f in report.findings if f.category == "serving-oom-retraction"]


def test_the_oom_outranks_the_none_instance_it_leaves_behind() -> None:
    """lmdeploy issue 220: the instance never created fails on None first in the file; the OOM is the cause."""
    report = triage_dir(EXTRA / "898-lmdeploy-a10g-llama2-7b-profile-throughput-concurrency-64-oom" / "input")
    f = report.findings[0]
    assert (f.rule, f.evidence[0].file, f.evidence[0].line) == ("serving.cuda-check-oom", "profile_throughput.log", 18)


PLACEMENT_WAITS = [
    # open-instruct issue 1431 (grpo_fast, single node)
    ("Waiting for placement group to be scheduled", {}),
    # slime/vime placement_group.py's 30 s progress line (built from its format string)
    ("Waiting for placement group of 16 GPUs (elapsed 90s): 8 GPUs registered with Ray, 8 available.",
     {"gpus": 16, "seconds": 90}),
    # ray issue 47792 (`ray status`, Ray 2.36)
    (" {'CPU': 2.0} * 1 (SPREAD): 1+ pending placement groups", {"pending": 1}),
]


def test_a_driver_waiting_on_its_placement_group_is_a_cold_start_warning(tmp_path: Path) -> None:
    for i, (line, numbers) in enumerate(PLACEMENT_WAITS):
        report = triage_files(tmp_path / str(i), {"driver.log": "Starting run\n" + line + "\n"})
        f = by_rule(report)["cold.ray-placement-wait"]
        assert (f.category, f.severity, f.evidence[0].line) == ("cold-start", "warning", 2)
        assert knob_names(f) == ["ray.placement_resources"]
        for key, value in numbers.items():
            assert float(f.numbers[key]) == value


def test_announcing_a_new_placement_group_is_not_a_wait(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"driver.log": "No current placement group found. Creating a new placement group.\n"})
    assert "cold.ray-placement-wait" not in by_rule(report)


ROUTER_TIMEOUTS = [
    # sglang issue 2778 (sglang-router 0.1.2, the Python wrapper's message)
    "Failed to create router: Timeout 300s waiting for workers to become healthy",
    # router 0.1.3+ (Rust), the worker URLs listed, with the log prefix sglang issue 4208 shows
    '[Router (Rust)] 2025-03-08 02:38:09 - ERROR - Timeout 600s waiting for workers ["http://0.0.0.0:31000", '
    '"http://0.0.0.0:31778"] to become healthy. Please set --router-worker-startup-timeout-secs '
    "(sglang_router.launch_server) or --worker-startup-timeout-secs (sglang_worker.router) to a larger value",
]


def test_a_router_that_gave_up_on_its_workers_at_start_up_is_a_cold_start(tmp_path: Path) -> None:
    for i, (line, seconds) in enumerate(zip(ROUTER_TIMEOUTS, (300, 600))):
        report = triage_files(tmp_path / str(i), {"router.log": line + "\n"})
        f = report.findings[0]
        assert (f.rule, f.category, f.evidence[0].line) == ("cold.engine-not-ready", "cold-start", 1)
        assert float(f.numbers["seconds"]) == seconds
        assert knob_names(f)[0] == "engine.startup_timeout"


KV_STARTUP_OVERSIZED = [
    # guoqingbao/xinfer issue 195 (vllm.rs, Rust)
    ("vllm-rs-med0  | 2026-01-20T15:24:43.340496Z ERROR vllm_rs::utils::kvcache_allocator: KVCache allocation failed: "
     "Insufficient GPU memory for KVCache allocation."),
    # NVIDIA/TensorRT-LLM issue 5872 (PyTorch executor, trtllm-serve 1.0.0rc)
    ("[07/08/2025-19:47:15] [TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: Executor creation failed due "
     "to insufficient GPU memory."),
]


def test_a_kv_cache_sized_past_memory_at_start_up_names_sequences_and_length(tmp_path: Path) -> None:
    for i, line in enumerate(KV_STARTUP_OVERSIZED):
        report = triage_files(tmp_path / str(i), {"server.log": line + "\n"})
        f = report.findings[0]
        assert (f.rule, f.category, f.severity) == ("serving.kv-cache-startup-oversized", "serving-oom-retraction", "error")
        assert f.evidence[0].line == 1
        assert knob_names(f)[:2] == ["inference.sglang_max_running_requests", "inference.max_context_length"]


def test_a_vllm_kv_shortfall_cut_after_its_length_is_still_read(tmp_path: Path) -> None:
    """A terminal that hard-wraps the paste leaves only the head of vLLM V1's message on the line (real-extra 903)."""
    line = ("(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq len (100000), "
            "(4.26 GiB KV cach")
    f = triage_files(tmp_path, {"vllm.log": line + "\ne is needed, which is larger than the available KV cache memory\n"}
                     ).findings[0]
    assert (f.rule, f.evidence[0].line) == ("serving.vllm-kv-capacity", 1)
    assert float(f.numbers["context_length"]) == 100000


def test_a_rust_engine_failing_on_the_drivers_out_of_memory_is_an_engine_oom(tmp_path: Path) -> None:
    """cudarc's error value under candle (vllm.rs, guoqingbao/xinfer issue 182, real-extra 906)."""
    report = triage_files(tmp_path, {"engine.log": 'Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")\n'})
    f = report.findings[0]
    assert (f.rule, f.category, f.evidence[0].line) == ("serving.engine-cuda-oom", "serving-oom-retraction", 1)


def test_tensorflows_retried_driver_allocation_is_not_the_specific_oom(tmp_path: Path) -> None:
    """TensorFlow logs the driver's name at INFO and retries smaller: the specific rules leave it alone."""
    line = ("2025-03-17 17:48:09.854267: I tensorflow/stream_executor/cuda/cuda_driver.cc:739] failed to allocate 3.77G "
            "(4052366592 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory")
    report = triage_files(tmp_path, {"engine.log": line + "\n"})
    assert not {f.rule for f in report.findings} & {"serving.engine-cuda-oom", "trainer.cuda-oom"}
