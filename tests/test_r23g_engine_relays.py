"""Recognition round 23 (r23g): vLLM's KV-cache start-up failures as RL frameworks and worker wrappers relay them
(real-extra 2370-2376).

- vLLM V0's worker wrapper line "Error executing method initialize_cache. This might cause deadlock in distributed
  execution." (and the multiprocessing form "Exception in worker VllmWorkerProcess while processing method
  initialize_cache: ...") is the engine failing to size or fill its KV cache at start-up:
  serving.vllm-initialize-cache-failed, serving-oom-retraction, even when the paste stops before the exception
  (OpenRLHF's LLMRayActor relay behind a container timestamp, 2370). The exception, when there, still leads
  (serving.vllm-kv-capacity on the multiprocessing relay, 2376; serving.vllm-kv-check-cut on the frame, 2375).
- The same wrapper around V1's 'determine_available_memory' (the profiling run) and 'initialize_from_config' is not
  claimed: a torch.compile failure or a layer-name KeyError fails there too (SkyRL issue 87, a kimi_k2 serve).
- Ray's "The original cause of the RayTaskError (<class 'X'>) isn't serializable ... Overwriting the cause to a
  RayError" names the worker's real failure: other.ray-cause-not-serializable with the class (2371, SkyRL's vLLM
  engine, BackendCompilerFailed), a symptom of any other root (1774's process end keeps the lead).
- Blind-right cases pinned: verl's WorkerDict run whose vLLM V1 engine finds no memory for cache blocks behind a
  Hydra re-raise (2373), and NeMo RL's async gym workers' repeated "fields were present in the request but
  ignored: {'strict'}" warnings, noise of a working rollout (2372).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse
from domain import SIX

# -- vLLM V0's initialize_cache relayed -----------------------------------------------------------------------------


def test_openrlhf_llmrayactor_initialize_cache_is_the_kv_cache_setup() -> None:
    f = top(triage_dir(extra_input("2370")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-initialize-cache-failed", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 2)
    assert "Error executing method initialize_cache" in f.evidence[0].text
    assert {"inference.sglang_mem_fraction_static", "inference.max_context_length"} <= set(knob_names(f))
    assert f.numbers["side"] == "engine"


def test_the_exception_itself_still_leads_the_relay() -> None:
    f = top(triage_dir(extra_input("2376")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")
    assert (f.numbers["context_length"], f.numbers["pool_tokens"]) == (131072, 86432)
    assert [(e.file, e.line) for e in f.evidence][:2] == [("serve.log", 1), ("serve.log", 3)]
    assert "inference.max_context_length" in knob_names(f)


def test_the_kv_check_frame_leads_over_the_wrapper_line() -> None:
    f = top(triage_dir(extra_input("2375")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-check-cut")
    assert f.numbers["caller"] == "initialize_cache"
    assert (f.evidence[0].file, f.evidence[0].line) == ("serve.log", 5)


@pytest.mark.parametrize("line", [
    "ERROR 04-28 15:55:45 worker_base.py:157] Error executing method initialize_cache. This might cause deadlock in "
    "distributed execution.\n",
    "(VllmWorkerProcess pid=7) ERROR 01-12 08:36:38 multiproc_worker_utils.py:233] Exception in worker "
    "VllmWorkerProcess while processing method initialize_cache: CUDA out of memory., Traceback (most recent call last):\n",
])
def test_initialize_cache_wrappers_alone(tmp_path: Path, line: str) -> None:
    r = triage_files(tmp_path, {"engine.log": line})
    assert "serving.vllm-initialize-cache-failed" in by_rule(r)
    assert top(r).category == "serving-oom-retraction"


@pytest.mark.parametrize("method", ["determine_available_memory", "initialize_from_config", "start_worker_execution_loop"])
def test_other_worker_methods_are_not_the_kv_cache(tmp_path: Path, method: str) -> None:
    line = (f"(RayWorkerWrapper pid=21291) ERROR 07-15 03:02:32 [worker_base.py:622] Error executing method "
            f"'{method}'. This might cause deadlock in distributed execution.\n")
    r = triage_files(tmp_path, {"engine.log": line})
    assert "serving.vllm-initialize-cache-failed" not in by_rule(r)
    assert not [f for f in r.findings if f.category in SIX]


# -- Ray naming the class it could not pickle ------------------------------------------------------------------------


def test_skyrl_engine_compile_failure_named_by_ray() -> None:
    report = triage_dir(extra_input("2371"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.ray-cause-not-serializable", "error")
    assert f.numbers["exc"] == "torch._dynamo.exc.BackendCompilerFailed"
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert not f.knobs
    assert not [g for g in report.findings if g.category in SIX]


def test_a_process_end_keeps_the_lead_over_the_ray_note() -> None:
    f = top(triage_dir(extra_input("1774")))
    assert f.rule == "other.fatal-exit"
    assert "other.ray-cause-not-serializable" in f.numbers["symptoms"]


def test_an_oom_class_is_left_to_the_memory_rules(tmp_path: Path) -> None:
    line = ("(LLMRayActor pid=1) The original cause of the RayTaskError (<class 'torch.OutOfMemoryError'>) isn't "
            "serializable: cannot pickle 'frame' object. Overwriting the cause to a RayError.\n")
    assert "other.ray-cause-not-serializable" not in by_rule(triage_files(tmp_path, {"train.log": line}))


# -- blind-right cases ----------------------------------------------------------------------------------------------


def test_verl_workerdict_vllm_v1_no_cache_blocks_behind_hydra() -> None:
    report = triage_dir(extra_input("2373"))
    f = top(report)
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 14)
    assert "inference.sglang_mem_fraction_static" in knob_names(f)
    assert "serving.vllm-kv-check-raised" in by_rule(report)


def test_nemo_rl_strict_field_warnings_are_noise() -> None:
    report = triage_dir(extra_input("2372"))
    assert warnings_or_worse(report) == []
