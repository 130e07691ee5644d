"""Recognition round 18 (r18b): serving OOM, engine start and sleep/wake failures (real-extra 1720-1731).

- SGLang's load barrier, "TP rank N could finish the model loading, but there are other ranks that didn't finish
  loading" (0.4.4 -> 2026): a rank too slow for the barrier's fixed wait, a cold start (cold.load-barrier-unfinished,
  real-extra 1728); when the barrier says a peer died instead, the peer is the story (other.monitored-barrier-failed).
- vLLM's sleep-mode allocator failing a driver call that is not out of memory ("CUDA Error: invalid argument at
  .../cumem_allocator.cpp:119"): other.vllm-cumem-allocator-error, above the torch "out of memory" with 66 GiB free
  that follows it (real-extra 1729); its out-of-memory line stays serving.vllm-cumem-oom.
- SGLang 2026's start failure "Rank 0 scheduler died during initialization (exit code: N)", and its shortened quote,
  are the engine-start failure (other.engine-start-failed, real-extra 1725).
- CPython's own fatal errors ("Fatal Python error: none_dealloc: ...") are a crash of their own
  (other.python-fatal-error, real-extra 1730), not an unexplained line.
- verl 0.4-0.5's AsyncSglangServer and NeMo-RL's SGLangGenerationWorker are engine actors: an OOM they raise at wake-up
  or weight update is the engine's memory.
- A wake-up OOM seen only from the trainer's side: verl's HTTP adapter timing out on resume_memory_occupation ("Async
  request to resume_memory_occupation timed out (attempt N)", then "Failed to complete async request to
  resume_memory_occupation after N attempts") is the engine failing to re-map its memory (serving.wake-up-request-*),
  folded into the engine's own OOM line when that is in the run (real-extra 104).
- Round 2 (scored with these fixes): torch_memory_saver 0.0.9's "cudaError error: 1 (invalid argument) ... func=pause"
  when slime offloads the trainer after step 1 (real-extra 1732) is the allocator's driver error, not an OOM.
- Blind right, kept right: capture failures that are not OOM (1720 DeepEP's dispatch assertion, 1721 an empty reason
  under torch compile), engine OOMs at start and on the first requests under vLLM V1 prefixes, a Python-logging relay
  and a padded terminal wrap (1722-1727).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

OOM_TAIL = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.02 GiB is free.\n")


def test_sglang_load_barrier_is_a_slow_start():
    f = top(triage_dir(extra_input("1728")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.load-barrier-unfinished", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("server.log", 1)]
    assert f.numbers["rank"] == "X"
    assert {"engine.startup_timeout", "engine.load_format"} <= set(knob_names(f))


def test_load_barrier_with_its_traceback_outranks_the_generic_crash(tmp_path: Path):
    # ktransformers issue 1666 (sglang fork, 2025-12): the barrier's ValueError closes the scheduler's traceback
    text = (
        "[2025-12-04 07:44:24 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2712, in '
        "run_scheduler_process\n"
        "    scheduler = Scheduler(\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner.py", line 849, in '
        "load_model\n"
        "    raise ValueError(\n"
        "ValueError: TP rank 2 could finish the model loading, but there are other ranks that didn't finish loading. "
        "It is likely due to unexpected failures (e.g., OOM) or a slow node.\n")
    f = top(triage_files(tmp_path, {"server.log": text}))
    assert (f.category, f.rule) == ("cold-start", "cold.load-barrier-unfinished")
    assert f.numbers["rank"] == 2


def test_load_barrier_after_a_peer_died_is_the_peer(tmp_path: Path):
    # the same barrier when Gloo reports a peer's error (sglang issue 5602): the peer is gone, not slow
    text = (
        "[rank3]:[E421 04:13:43.426633564 ProcessGroupGloo.cpp:143] Rank 3 successfully reached monitoredBarrier, but "
        "received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
        "ValueError: TP rank 3 could finish the model loading, but there are other ranks that didn't finish loading. "
        "It is likely due to unexpected failures (e.g., OOM) or a slow node.\n")
    f = top(triage_files(tmp_path, {"server.log": text}))
    assert (f.category, f.rule) == ("other", "other.monitored-barrier-failed")


def test_load_barrier_yields_to_the_oom_that_stopped_a_rank(tmp_path: Path):
    text = ("[2025-12-04 07:40:01 TP1] " + OOM_TAIL +
            "ValueError: TP rank 2 could finish the model loading, but there are other ranks that didn't finish "
            "loading. It is likely due to unexpected failures (e.g., OOM) or a slow node.\n")
    f = top(triage_files(tmp_path, {"server.log": text}))
    assert f.category == "serving-oom-retraction"


def test_cumem_invalid_argument_outranks_the_oom_with_the_device_free():
    f = top(triage_dir(extra_input("1729")))
    assert (f.category, f.rule) == ("other", "other.vllm-cumem-allocator-error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert (f.numbers["err"], f.numbers["line"]) == ("invalid argument", 119)


def test_cumem_out_of_memory_still_wins_over_the_invalid_arguments_after_it(tmp_path: Path):
    # vllm PR 12981's sequence: the mapping fails for memory, the calls after it on the half-made mapping fail too
    text = ("CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56\n"
            "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:57\n"
            "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:64\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-cumem-oom")


def test_sglang_scheduler_died_quote_is_an_engine_start_failure():
    f = top(triage_dir(extra_input("1725")))
    assert (f.category, f.rule) == ("other", "other.engine-start-failed")
    assert [(e.file, e.line) for e in f.evidence] == [("head-node.log", 3)]
    assert f.numbers["code"] == -9


@pytest.mark.parametrize("line", [
    "RuntimeError: Rank 0 scheduler died during initialization (exit code: -3)",
    "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9).",
])
def test_sglang_2026_scheduler_died_lines(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"server.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.engine-start-failed")


def test_python_fatal_error_is_a_crash_not_an_unexplained_line():
    f = top(triage_dir(extra_input("1730")))
    assert (f.category, f.rule) == ("other", "other.python-fatal-error")
    assert f.numbers["what"] == "none_dealloc"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 6)]


@pytest.mark.parametrize("header", [
    # verl 0.4-0.5's SGLang async rollout server actor
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::AsyncSglangServer.wake_up() (pid=41222, ip=10.0.0.5)",
    # NeMo-RL's SGLang generation worker
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::SGLangGenerationWorker.generate() (pid=1, ip=10.0.0.1)",
])
def test_sglang_engine_actors_place_a_wrapped_oom_on_the_engine(tmp_path: Path, header: str):
    f = top(triage_files(tmp_path, {"train.log": header + "\n"}))
    assert (f.category, f.rule, f.numbers["side"]) == ("serving-oom-retraction", "serving.ray-wrapped-oom", "engine")


@pytest.mark.parametrize("prefix", ["(AsyncSglangServer pid=41222) ", "(SGLangGenerationWorker pid=3321, ip=10.0.0.2) "])
def test_their_prefix_places_a_bare_oom_on_the_engine(tmp_path: Path, prefix: str):
    f = top(triage_files(tmp_path, {"train.log": prefix + OOM_TAIL}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")


@pytest.mark.parametrize("case,rule", [
    ("1720", "other.graph-capture-failed"),
    ("1721", "other.graph-capture-failed"),
])
def test_capture_failures_that_are_not_oom_stay_other(case: str, rule: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", rule)


@pytest.mark.parametrize("case,file,line,tried", [
    ("1722", "vllm-serve.log", 7, "1.02 GiB"),
    ("1723", "cpu_offload.log", 14, "192.00 MiB"),
    ("1724", "server.log", 2, "24.00 MiB"),
    ("1726", "olmocr-pipeline.log", 6, "160.00 MiB"),
    ("1727", "sglang.log", 1, "4.93 GiB"),
])
def test_engine_ooms_name_the_memory_fraction(case: str, file: str, line: int, tried: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert [(e.file, e.line) for e in f.evidence][:1] == [(file, line)]
    assert tried in f.evidence[0].text
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


def test_memory_saver_pause_invalid_argument_is_not_an_oom():
    f = top(triage_dir(extra_input("1732")))
    assert (f.category, f.rule) == ("other", "other.memory-saver-driver-error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 3)]
    assert f.numbers["func"] == "pause"


def _worker_lines_of_104() -> str:
    # the trainer worker's own lines of real-extra 104 (sglang issue 14092), without the engine's
    text = (extra_input("104-verl") / "rollout.log").read_text()
    return "".join(line for line in text.splitlines(keepends=True) if line.startswith("(WorkerDict"))


def test_wake_up_timeouts_alone_place_the_engines_memory(tmp_path: Path):
    lines = _worker_lines_of_104()
    assert lines.count("Async request to resume_memory_occupation timed out") == 3
    f = top(triage_files(tmp_path, {"rollout.log": lines}))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.wake-up-request-timeout", "warning")
    assert knob_names(f) == ["inference.sglang_mem_fraction_static"]


def test_wake_up_timeouts_fold_into_the_engines_own_oom():
    f = top(triage_dir(extra_input("104-verl")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.memory-saver-resume-oom")


def test_wake_up_given_up_is_an_error(tmp_path: Path):
    text = "RuntimeError: Failed to complete async request to resume_memory_occupation after 3 attempts\n"
    f = top(triage_files(tmp_path, {"rollout.log": text}))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.wake-up-request-failed", "error")
    assert f.numbers["attempts"] == 3
