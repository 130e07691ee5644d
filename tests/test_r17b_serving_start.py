"""Recognition round 17 (r17b): serving OOM at engine start, KV pools too small, retraction, cold start (real-extra
1620-1631, blind 8/12 by category).

- vLLM's sampler (and pooler) warm-up OOM, "CUDA out of memory occurred when warming up sampler with 1024 dummy
  requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` ...", is the engine's own wording: pasted
  alone and hard-wrapped (llm-d issue 787, real-extra 1620) it was a trainer OOM; now serving.vllm-warmup-oom, knobs the
  admission ceiling and the memory fraction.
- A vLLM traceback cut where the engine calls its KV sizing check (`check_enough_kv_cache_memory(...)` under
  get_kv_cache_config, V0 `raise_if_cache_size_invalid(` under initialize_cache; vllm issue 20726, real-extra 1624):
  the check raises only when the pool does not fit, so serving.vllm-kv-check-cut (the caller's frame) and
  serving.vllm-kv-check-raised (the check's own frame) name the KV pool; the full message still wins when present.
- PyTorch's allocator warning "memory allocation failed with OOM on device N ..." printed by an engine and followed by
  the engine's crash (SGLang "Scheduler hit an exception", sglang issue 38202 through a Kubernetes log viewer,
  real-extra 1629): serving.engine-allocator-oom-crash instead of a bare engine crash.
- vLLM's "TimeoutError: RPC call to sample_tokens timed out." after a kernel compiled on a live request ("CuTeDSL JIT
  compilation during inference", MiaAI-Lab issue 65, real-extra 1631): cold.jit-outlasted-rpc-deadline; the timeout
  alone is a hung worker (other.engine-rpc-timeout), the JIT warning alone an info.
- Blind right, kept right: V1 "KV cache is needed" (1621), V0 max seq len over the pool without a prefix (1622), XPU
  "No available memory ... See https://docs" (1623), vLLM 0.2 graph-capture "untimeError: CUDA error: out of memory"
  (1625), SGLang's health check (1626, other), DeepSeek-V4 OOM in the scheduler's start-up (1627), a retraction with
  an "[ATTN_CP0 TP0]" prefix (1628), a bare Ascend NPU OOM line (1630).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

WARMUP = ("RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try "
          "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n")


def test_sampler_warmup_oom_pasted_alone_and_wrapped_is_the_engines():
    f = top(triage_dir(extra_input("1620")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-warmup-oom", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("decode-pod.log", 1)]
    assert (f.numbers["warmup"], f.numbers["dummy_requests"]) == ("sampler", 1024)
    assert knob_names(f) == ["inference.sglang_max_running_requests", "inference.sglang_mem_fraction_static"]


@pytest.mark.parametrize("line, warmup, n", [
    (WARMUP, "sampler", 1024),
    # the pooler of an embedding or reward model (gpu_model_runner._dummy_pooler_run)
    ("RuntimeError: CUDA out of memory occurred when warming up pooler (task='embed') with 256 dummy requests. "
     "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n", "pooler", 256),
    # V0's pooling runner, no task in the words
    ("RuntimeError: CUDA out of memory occurred when warming up pooler with 64 dummy requests. Please try lowering "
     "`max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n", "pooler", 64),
])
def test_every_warmup_wording_names_admission(tmp_path: Path, line: str, warmup: str, n: int):
    f = top(triage_files(tmp_path, {"serve.log": line}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-warmup-oom")
    assert (f.numbers["warmup"], f.numbers["dummy_requests"]) == (warmup, n)
    assert knob_names(f)[0] == "inference.sglang_max_running_requests"


def test_the_warmup_announcement_is_no_failure(tmp_path: Path):
    report = triage_files(tmp_path, {"serve.log": "INFO 03-16 06:12:30 [gpu_model_runner.py:1440] Warming up sampler "
                                                  "with 1024 dummy requests\n"})
    assert not [f for f in report.findings if f.category == "serving-oom-retraction"]


def test_traceback_cut_at_the_kv_check_call_names_the_pool():
    f = top(triage_dir(extra_input("1624")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-kv-check-cut", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm-docker.log", 9)]
    assert f.numbers["caller"] == "get_kv_cache_config"
    assert knob_names(f)[:2] == ["inference.sglang_mem_fraction_static", "inference.max_context_length"]


V0_CUT = (
    "ERROR 04-17 15:10:09 [engine.py:448] Traceback (most recent call last):\n"
    'ERROR 04-17 15:10:09 [engine.py:448]   File "/opt/conda/lib/python3.11/site-packages/vllm/worker/worker.py", '
    "line 291, in initialize_cache\n"
    "ERROR 04-17 15:10:09 [engine.py:448]     raise_if_cache_size_invalid(\n"
)
V1_FRAME = (
    "(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708] Traceback (most recent call last):\n"
    '(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708]   File "/opt/conda/envs/vllm_env/lib/python3.13/'
    'site-packages/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory\n'
)


@pytest.mark.parametrize("text, rule", [
    (V0_CUT, "serving.vllm-kv-check-cut"),  # V0 (gpustack issue 1800's frames, cut after the call)
    (V1_FRAME, "serving.vllm-kv-check-raised"),  # V1 0.11 (vllm issue 27508's frame, cut after it)
])
def test_kv_check_family_across_versions(tmp_path: Path, text: str, rule: str):
    f = top(triage_files(tmp_path, {"vllm.log": text}))
    assert (f.category, f.rule) == ("serving-oom-retraction", rule)


def test_the_full_message_still_outranks_the_frame(tmp_path: Path):
    text = V1_FRAME + ("(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708] ValueError: No available memory "
                       "for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n")
    assert top(triage_files(tmp_path, {"vllm.log": text})).rule == "serving.vllm-kv-capacity"


def test_a_frame_of_the_caller_without_the_check_call_is_not_the_pool(tmp_path: Path):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 943, in '
        "get_kv_cache_config\n"
        "    assert len(kv_cache_spec) > 0\n"
        "AssertionError\n"
    )
    report = triage_files(tmp_path, {"vllm.log": text})
    assert not [f for f in report.findings if f.rule.startswith("serving.vllm-kv-check")]


def test_engine_allocator_oom_then_scheduler_crash_through_a_log_viewer():
    f = top(triage_dir(extra_input("1629")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.engine-allocator-oom-crash", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("decode-worker-0.log", 1)
    assert (f.numbers["gpu"], f.numbers["tried_bytes"]) == (1, 4334813184)
    assert knob_names(f)[0] == "inference.sglang_mem_fraction_static"
    assert "other.engine-crash" in f.numbers["symptoms"]


ALLOC_WARN = ("[rank0]:[W906 15:02:06.204334026 CUDACachingAllocator.cpp:3934] memory allocation failed with OOM on "
              "device 0 while trying to allocate 1000341504 bytes (free: 916848640, total: 25243287552).\n")


def test_vllm_engine_core_allocator_oom_at_start(tmp_path: Path):
    text = ("(EngineCore_DP0 pid=563) " + ALLOC_WARN
            + "(EngineCore_DP0 pid=563) ERROR 08-03 17:46:16 [core.py:1330] EngineCore failed to start.\n")
    f = top(triage_files(tmp_path, {"vllm.log": text}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-allocator-oom-crash")


def test_the_trainers_allocator_warning_stays_the_trainers(tmp_path: Path):
    text = (ALLOC_WARN + "Traceback (most recent call last):\n"
            '  File "/opt/megatron/megatron/core/pipeline_parallel/schedules.py", line 412, in backward_step\n'
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 954.00 MiB. GPU 0 has a total capacity of "
            "23.51 GiB of which 402.38 MiB is free.\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert f.category == "trainer-oom"


def test_jit_on_a_live_request_that_outlasted_the_rpc_deadline():
    f = top(triage_dir(extra_input("1631")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.jit-outlasted-rpc-deadline", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm-container.log", 2)]
    assert f.numbers["rpc"] == "sample_tokens"
    assert knob_names(f) == ["compile.cache"]


def test_the_rpc_timeout_alone_is_a_hung_worker(tmp_path: Path):
    text = ("(EngineCore_DP0 pid=32080) ERROR 03-08 17:31:28 [core.py:1102] TimeoutError: RPC call to execute_model "
            "timed out.\n")
    f = top(triage_files(tmp_path, {"vllm.log": text}))
    assert (f.category, f.rule, f.numbers["rpc"]) == ("other", "other.engine-rpc-timeout", "execute_model")


def test_a_jit_warning_alone_is_an_info(tmp_path: Path):
    text = ("(Worker_TP0 pid=95) WARNING 09-02 21:06:21 [jit_monitor.py:129] TileLang JIT compilation during inference: "
            "mhc_pre_big_fuse_with_norm_tilelang. This causes a latency spike.\n")
    report = triage_files(tmp_path, {"vllm.log": text})
    f = next(f for f in report.findings if f.rule == "cold.jit-during-inference")
    assert (f.category, f.severity, f.numbers["kernel"]) == ("cold-start", "info", "mhc_pre_big_fuse_with_norm_tilelang")


@pytest.mark.parametrize("case, rule", [
    ("1621", "serving.vllm-kv-capacity"),
    ("1622", "serving.vllm-kv-capacity"),
    ("1623", "serving.vllm-kv-capacity"),
    ("1625", "serving.engine-cuda-oom"),
    ("1626", "other.engine-health-check-failed"),
    ("1627", "serving.engine-cuda-oom"),
    ("1628", "serving.kv-retraction"),
    ("1630", "serving.engine-cuda-oom"),
])
def test_blind_right_cases_stay_right(case: str, rule: str):
    assert top(triage_dir(extra_input(case))).rule == rule


def test_numbers_of_the_pool_and_the_oom():
    f = top(triage_dir(extra_input("1622")))
    assert (f.numbers["context_length"], f.numbers["pool_tokens"]) == (29000, 23648)
    f = top(triage_dir(extra_input("1627")))
    assert (f.numbers["capacity"], f.numbers["process_in_use"]) == (95.07, 94.77)
    assert knob_names(top(triage_dir(extra_input("1625"))))[0] == "inference.sglang_mem_fraction_static"
