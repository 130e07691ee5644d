"""Recognition round 14 (r14a): serving OOM and prompt budgets beyond SGLang/vLLM's own wordings, on fresh threads.

- A driver actor that relays a worker's exception (verl's TaskRunner / main_task re-printing a RayTaskError with the
  rollout worker's frames) does not make the error the driver's: the frames it re-printed decide the side, so an
  engine OOM relayed under `(TaskRunner pid=N)` is the engine's, not a trainer OOM.
- ggml (llama.cpp, llama-cpp-python, ollama's runner) reports a failed CUDA call as "CUDA error: out of memory" and
  the source it failed in (".../ggml-cuda.cu:445"): that line places the OOM in the inference engine (1115).
- Context-length refusals of more servers, with their numbers: llama.cpp's "request (N tokens) exceeds the available
  context size (M tokens)" (1104), tt-inference-server's "Prompt exceeds maximum input sequence length" (1105), and
  vLLM V1's "Sampled token IDs exceed the max model length" assertion (1101).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_case as case
from conftest import knob_names, top, triage_dir, triage_files

RELAYED_ENGINE_OOM = [
    "Traceback (most recent call last):",
    '  File "/workspace/verl/verl/trainer/ppo/ray_trainer.py", line 1032, in fit',
    "    gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)",
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_generate_sequences() (pid=276511, "
    "ip=10.0.0.1, actor_id=abc, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7f>)",
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", line 1001, in forward',
    "    return self.model.forward(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB "
    "of which 1.02 GiB is free.",
]


@pytest.mark.parametrize("actor", ["TaskRunner", "main_task"])
def test_an_engine_oom_relayed_under_the_drivers_prefix_is_the_engines(tmp_path: Path, actor: str) -> None:
    text = "".join(f"({actor} pid=275924) {x}\n" for x in RELAYED_ENGINE_OOM)
    report = triage_files(tmp_path, {"main_ppo.log": text})
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert (f.evidence[0].file, f.evidence[0].line, f.numbers["tried"]) == ("main_ppo.log", 7, 2.0)
    assert not [g for g in report.findings if g.category == "trainer-oom"]


def test_a_trainer_oom_relayed_under_the_drivers_prefix_stays_the_trainers(tmp_path: Path) -> None:
    lines = [*RELAYED_ENGINE_OOM[:3],
             "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_actor() (pid=276511)",
             '  File "/workspace/verl/verl/workers/actor/dp_actor.py", line 420, in update_policy',
             "    loss.backward()",
             RELAYED_ENGINE_OOM[-1]]
    text = "".join(f"(TaskRunner pid=275924) {x}\n" for x in lines)
    f = top(triage_files(tmp_path, {"main_ppo.log": text}))
    assert (f.category, f.rule, f.evidence[0].line) == ("trainer-oom", "trainer.cuda-oom", 7)


def test_a_worker_header_after_the_relayed_oom_belongs_to_the_next_traceback(tmp_path: Path) -> None:
    # the shape of shared corpus 006 (ToolRL on verl): the OOM ends a traceback of torch frames; Ray's "Unhandled
    # error ... ray::WorkerDict.actor_rollout_generate_sequences()" below it starts the next one
    lines = ['  File "/envs/toolrl/lib/python3.10/site-packages/torch/nn/functional.py", line 1888, in softmax',
             "    ret = input.softmax(dim)",
             RELAYED_ENGINE_OOM[-1],
             "Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): "
             "ray::WorkerDict.actor_rollout_generate_sequences() (pid=2396579, ip=10.242.3.193)"]
    text = "".join(f"(main_task pid=2396241) {x}\n" for x in lines)
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule, f.evidence[0].line) == ("trainer-oom", "trainer.cuda-oom", 3)


def test_a_drivers_own_error_without_worker_frames_stays_the_drivers(tmp_path: Path) -> None:
    text = "(TaskRunner pid=1) RuntimeError: CUDA error: out of memory\n"
    f = top(triage_files(tmp_path, {"main_ppo.log": text}))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.cuda-oom")


def test_ollamas_ggml_cuda_oom_is_the_inference_engines() -> None:
    report = triage_dir(case("1115-") / "input")
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == ("ollama.log", 3)
    ggml = [g for g in report.findings if g.rule == "serving.ggml-cuda-error-oom"]
    assert [(g.evidence[0].line, g.numbers["function"], g.numbers["device"]) for g in ggml] == [(5, "alloc", 2)]
    assert not [g for g in report.findings if g.category == "trainer-oom"]


def test_llama_cpp_pythons_pool_oom_is_the_engines_too(tmp_path: Path) -> None:
    # xorbitsai/inference issue 1036 (llama-cpp-python 0.2.x, yi-34b Q4_K_M on a 2080 Ti at n_ctx 4096)
    text = (
        "CUDA error: out of memory\n"
        "  current device: 0, in function ggml_cuda_pool_malloc_vmm at /tmp/pip-install-6hyi80yc/llama-cpp-python_"
        "b0764d5e446b4564a68e6eb9d349b9c3/vendor/llama.cpp/ggml-cuda.cu:7812\n"
        "  cuMemCreate(&handle, reserve_size, &prop, 0)\n"
        "GGML_ASSERT: /tmp/pip-install-6hyi80yc/llama-cpp-python_b0764d5e446b4564a68e6eb9d349b9c3/vendor/llama.cpp/"
        "ggml-cuda.cu:241: !\"CUDA error\"\n")
    report = triage_files(tmp_path, {"xinference.log": text})
    assert (top(report).category, top(report).evidence[0].line) == ("serving-oom-retraction", 1)
    assert [g.numbers["function"] for g in report.findings if g.rule == "serving.ggml-cuda-error-oom"] == [
        "ggml_cuda_pool_malloc_vmm"]


def test_a_ggml_cuda_error_that_is_not_memory_is_no_oom(tmp_path: Path) -> None:
    text = ("CUDA error: an illegal memory access was encountered\n"
            "  current device: 0, in function ggml_backend_cuda_synchronize at ggml/src/ggml-cuda/ggml-cuda.cu:2464\n")
    report = triage_files(tmp_path, {"llama-server.log": text})
    assert not [f for f in report.findings if f.category in ("serving-oom-retraction", "trainer-oom")]


@pytest.mark.parametrize(("prefix", "rule", "file", "line", "numbers"), [
    ("1104-", "prompt.llamacpp-context-exceeded", "xinference.log", 1, {"input_tokens": 33430, "context_length": 32768}),
    ("1105-", "prompt.context-length-exceeded", "client.log", 1, {"input_tokens": 52113, "context_length": 51200}),
    ("1101-", "prompt.context-length-exceeded", "engine.log", 6, {"total_tokens": 1281, "context_length": 1280}),
    ("1103-", "prompt.context-length-exceeded", "agent.log", 1,
     {"input_tokens": 65537, "response_tokens": 65536, "context_length": 131072}),
])
def test_more_servers_context_refusals_carry_their_numbers(prefix: str, rule: str, file: str, line: int,
                                                           numbers: dict) -> None:
    f = top(triage_dir(case(prefix) / "input"))
    assert (f.category, f.rule) == ("prompt-budget", rule)
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert {k: f.numbers[k] for k in numbers} == numbers
    assert "inference.max_context_length" in knob_names(f)


def test_trt_llms_prompt_over_max_seq_len_is_a_prompt_budget(tmp_path: Path) -> None:
    text = "RuntimeError: prompt_token_ids length (40000) is greater than max_seq_len (32768)\n"
    f = top(triage_files(tmp_path, {"trtllm.log": text}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert (f.numbers["input_tokens"], f.numbers["context_length"]) == (40000, 32768)


def test_sglang_jax_decode_oom_names_the_running_requests() -> None:
    f = top(triage_dir(case("1100-") / "input"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.decode-alloc-failed")
    assert (f.evidence[0].file, f.evidence[0].line) == ("server.log", 2)
    assert knob_names(f)[0] == "inference.sglang_max_running_requests"
