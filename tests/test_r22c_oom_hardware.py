"""Recognition round 22 (r22c): out-of-memory across hardware and frameworks, trainer vs serving vs host RAM
(real-extra 2180-2194).

- Host RAM is not GPU memory: a DataLoader worker killed by SIGKILL (Megatron-LM at 90K tokens), the DeepSpeed
  launcher's "exits with return code = -9", Ray's memory monitor killing a vLLM worker are `other`, with no GPU knob.
- Device OOM in a training step on TPU (XLA "Attempting to reserve ... at the bottom of memory", PJRT "Error
  allocating device buffer"), Gaudi (PT_DEVMEM), ROCm (a notebook's bare "OutOfMemoryError: HIP out of memory") and
  CUDA under FSDP/ZeRO-3 is trainer-oom with the trainer's knobs.
- An engine's OOM while it builds its layers (vLLM worker on Ascend, QKVParallelLinear) means the weights do not fit:
  serving-oom-retraction naming the engine's memory share, not admission (serving.engine-oom-model-load).
- vLLM's sleep line in a colocated run ("Sleep mode freed 19.51 GiB memory, 26.31 GiB memory is still in use") is
  a device-wide measurement (the trainer's memory included): alone it is no finding, and the colocated case whose
  paste lost the trainer's OOM line (2187) stays a known miss.
- llama.cpp / TensorRT-LLM engines that cannot allocate their KV cache, compute buffers or engine are serving-side.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

TRAINER_KNOBS = {"trainer.micro_batch_size", "trainer.activation_recompute", "trainer.packing_max_tokens"}


# -- host RAM: other, never a GPU knob --------------------------------------------------------------------------------


@pytest.mark.parametrize("case, rule, file, line", [
    ("2180", "other.dataloader-worker-killed", "train.log", 13),
    ("2181", "other.killed-sigkill", "finetune.log", 2),
    ("2182", "other.killed-sigkill", "training.log", 2),
    ("2189", "other.host-oom", "server.log", 1),
])
def test_host_memory_kills_are_other_without_gpu_knobs(case: str, rule: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", rule)
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert knob_names(f) == []


# -- the training step ran out of device memory, whatever the device ------------------------------------------------


@pytest.mark.parametrize("case, file, line, needle", [
    ("2183", "train.log", 1, "Attempting to reserve 6.48G at the bottom of memory"),
    ("2184", "train.log", 1, "Attempting to reserve 10.51G at the bottom of memory"),
    ("2185", "train.log", 1, "Error allocating device buffer: Attempting to allocate 129.50M"),
    ("2188", "bench.log", 7, "MODULE:PT_DEVMEM Allocation failed for size::268435456"),
    ("2193", "notebook.log", 8, "OutOfMemoryError: HIP out of memory. Tried to allocate 224.00 MiB"),
    ("2194", "train.log", 3, "Tried to allocate 3.91 GiB"),
])
def test_device_oom_in_training_is_trainer_oom_on_every_accelerator(case: str, file: str, line: int, needle: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.cuda-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert needle in f.evidence[0].text
    assert TRAINER_KNOBS & set(knob_names(f))
    assert not {k for k in knob_names(f) if k.startswith("inference.")}


# -- the engine could not load its model: serving, but not an admission problem -------------------------------------


def test_engine_oom_while_building_layers_is_a_model_that_does_not_fit():
    f = top(triage_dir(extra_input("2186")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-oom-model-load")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm-serve.log", 9)
    # the weights' share per device (tensor parallelism), then the engine's share of the device; not admission
    assert knob_names(f) == ["inference.tensor_parallel_size", "inference.sglang_mem_fraction_static"]
    assert any("admission" in n for n in f.not_knobs)


def test_engine_oom_in_a_forward_is_still_the_admission_rule(tmp_path: Path):
    # the same OOM under the engine's forward (no loading frames above it) keeps the admission knobs
    prefix = "(VllmWorkerProcess pid=20487) ERROR 03-05 07:15:39 multiproc_worker_utils.py:240] "
    text = (prefix + '  File "/usr/local/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 1700, '
            'in execute_model\n'
            + prefix + "    hidden_or_intermediate_states = model_executable(\n"
            + prefix + "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total "
            "capacity; 57.10 GiB already allocated; 1.02 GiB free; 58.20 GiB reserved in total by PyTorch)\n")
    f = top(triage_files(tmp_path, {"vllm-serve.log": text}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


# -- colocated: vLLM's sleep line is a device-wide measurement, not the engine's residue ------------------------------


@pytest.mark.parametrize("line", [
    # real-extra 2187 (DeepSpeed GRPO + vLLM sleep): the engine freed nearly its whole 19.78 GiB budget
    "INFO 04-23 16:21:37 [worker.py:145] Sleep mode freed 19.51 GiB memory, 26.31 GiB memory is still in use.",
    # real-extra 801 (healthy TRL colocate run): 'still in use' holds the trainer's own memory
    "INFO 05-01 10:00:00 [worker.py:145] Sleep mode freed 51.57 GiB memory, 49.25 GiB memory is still in use.",
])
def test_a_sleep_line_alone_is_no_finding(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"train.log": line + "\n"})
    assert not [f for f in report.findings if f.severity in ("error", "warning")]


def test_the_colocated_case_without_its_oom_line_stays_a_known_miss():
    report = triage_dir(extra_input("2187"))
    assert not [f for f in report.findings if f.category == "trainer-oom"]


# -- engines outside SGLang/vLLM -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case, rule, file, line", [
    ("2190", "serving.kv-cache-startup-oversized", "llama.log", 8),
    ("2191", "serving.ggml-device-alloc-failed", "server.log", 8),
    ("2192", "serving.cuda-check-oom", "llgtrt.log", 2),
])
def test_other_engines_that_cannot_allocate_are_serving(case: str, rule: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("serving-oom-retraction", rule)
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert not TRAINER_KNOBS & set(knob_names(f))


def test_llamacpp_kv_cache_names_the_kv_pool():
    f = top(triage_dir(extra_input("2190")))
    assert "inference.sglang_max_total_tokens" in knob_names(f)


def test_trt_engine_that_could_not_be_deserialized_folds_into_its_oom():
    report = triage_dir(extra_input("2192"))
    f = top(report)
    assert f.rule == "serving.cuda-check-oom"
    assert 8 in {e.line for e in f.evidence}  # the tlc_init assertion is the same finding's
    assert "unclassified" not in {x.rule for x in report.findings}


def test_trt_deserialize_failure_alone_is_not_memory(tmp_path: Path):
    line = ("Error: tlc_init: [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. "
            "(/x/tensorrt_llm/runtime/tllmRuntime.cpp:135)\n")
    report = triage_files(tmp_path, {"server.log": line})
    assert not [f for f in report.findings if f.category == "serving-oom-retraction"]
