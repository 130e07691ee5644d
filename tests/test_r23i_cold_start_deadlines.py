"""Recognition round 23 (r23i): cold starts and start-up deadlines across frameworks (real-extra 2400-2409).

- vllm-omni's AsyncOmniEngine giving up on its orchestrator ("TimeoutError: Orchestrator did not become ready within
  600s", vllm-omni 0.19) is a readiness deadline like the engines' (cold.engine-not-ready, seconds 600, knob
  engine.startup_timeout; 2401), not an unexplained process end.
- vllm-omni 0.14's orchestrator noting that its stage-init wait ran out ("[Orchestrator] Initialization timeout: 0/1
  stages ready", then the ERROR "Troubleshooting Steps" block) is information (cold.omni-stage-wait-expired): its
  maintainers say the stage goes on loading and serves (2400: a first download, the request done 21 minutes later).
  Its numbered hint "1) Verify GPU/device assignment ..." is not the reward path.
- Ray Serve's "replicas that have taken more than 30s to be scheduled" is a placement wait (cold.ray-placement-wait,
  knob ray.placement_resources; 2403 a GPU-less cluster, plus ray-llm 143's JSON form), not a launcher's health poll;
  "taken more than 30s to initialize" (placed, constructor slow) is not.
- vLLM's placement-group wait in GPUStack 2.1's words ("Waiting for creating a group of placement of specs for 310
  seconds", and "a group placement of specs") is the same wait as vLLM's "a placement group of specs" (2406).
- A start-up that waits, where the engine had died of its KV cache: vllm-rbln's "Not enough memory for 24 blocks of
  KV cache" is serving.vllm-kv-capacity (knob inference.sglang_max_total_tokens: --num-gpu-blocks-override), above
  the API server's "Waiting for 1 local, 0 remote core engine proc(s) to start" that only the startup probe ended
  (2408).
- Blind-right cases pinned: OpenRLHF's unschedulable {GPU, CPU} request (2407, cold.ray-placement-wait),
  ollama's fixed 5-minute load deadline on a 413 GiB model (2405, cold.startup-not-ready), and a Ray Serve LLM
  replica that warned "taken more than 30s to initialize" and then served (2409: healthy).
- Known misses (tests/test_real_extra.py): 2402 (the Hub read-timeout line that explains the readiness timeout is cut
  in the paste) and 2404 (llama-swap's one DEBUG line does not say why it stopped the upstream).
"""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse
from domain import SIX

# -- vllm-omni's orchestrator deadline ------------------------------------------------------------------------------


def test_omni_orchestrator_not_ready_is_a_startup_deadline() -> None:
    f = top(triage_dir(extra_input("2401")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.engine-not-ready", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("text_to_image.log", 6)
    assert f.numbers["seconds"] == 600
    assert knob_names(f)[0] == "engine.startup_timeout"


def test_omni_stage_wait_note_with_a_later_success_is_healthy() -> None:
    report = triage_dir(extra_input("2400"))
    assert warnings_or_worse(report) == []
    f = by_rule(report)["cold.omni-stage-wait-expired"]
    assert (f.category, f.severity) == ("cold-start", "info")
    assert (f.evidence[0].file, f.evidence[0].line) == ("omni.log", 1)
    assert (f.numbers["ready"], f.numbers["total"]) == (0, 1)
    assert f.count == 6  # the WARNING, the block's header and its four numbered hints
    assert "vocabulary.reward-path-error" not in by_rule(report)
    assert "unclassified" not in by_rule(report)


def test_omni_stage_wait_note_does_not_hide_a_failed_stage(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"omni.log": (
        "WARNING 01-23 02:09:33 [omni.py:326] [Orchestrator] Initialization timeout: 0/1 stages ready. Missing stages: [0]\n"
        "ERROR 01-23 02:09:33 [omni.py:340] [Orchestrator] Stage initialization failed. Troubleshooting Steps:\n"
        "TimeoutError: Orchestrator did not become ready within 600s\n")})
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.engine-not-ready", "error")
    assert f.evidence[0].line == 3


# -- Ray placement waits in more words -------------------------------------------------------------------------------


def test_serve_replica_not_scheduled_is_a_placement_wait() -> None:
    report = triage_dir(extra_input("2403"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.ray-placement-wait", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("serve.log", 1)
    assert f.numbers["seconds"] == 30
    assert knob_names(f) == ["ray.placement_resources"]


def test_serve_replica_not_scheduled_json_form(tmp_path: Path) -> None:
    line = ('{"levelname": "WARNING", "asctime": "2024-03-24 03:17:59,398", "component_name": "controller", '
            '"component_id": "1684", "message": "deployment_state.py:2152 - Deployment \'VLLMDeployment:amazon--LightGPT\' '
            'in application \'ray-llm\' 1 replicas that have taken more than 30s to be scheduled. This may be due to '
            'waiting for the cluster to auto-scale or for a runtime environment to be installed. Resources required for '
            'each replica: [{\\"CPU\\": 1.0, \\"accelerator_type_a10\\": 0.01}], total resources available: {}. Use '
            '`ray status` for more details."}\n')
    f = top(triage_files(tmp_path, {"serve.log": line}))
    assert (f.rule, knob_names(f)) == ("cold.ray-placement-wait", ["ray.placement_resources"])


def test_serve_replica_slow_to_initialize_is_not_a_placement_wait(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"serve.log": (
        "(ServeController pid=61919) WARNING 2026-08-14 11:57:34,580 controller 61919 -- Deployment "
        "'LLMServer:qwen-0_5b' in application 'default' has 1 replicas that have taken more than 30s to initialize.\n")})
    assert "cold.ray-placement-wait" not in by_rule(report)


def test_gpustack_group_of_placement_wording_is_a_placement_wait() -> None:
    report = triage_dir(extra_input("2406"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.ray-placement-wait", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("engine.log", 1), ("engine.log", 3)]
    assert f.count == 3  # both wordings of the same build ("group of placement", "group placement")
    assert knob_names(f) == ["ray.placement_resources"]
    assert not [g for g in report.findings if g.category in SIX and g.category != "cold-start"]


# -- blind-right ---------------------------------------------------------------------------------------------------


def test_ollama_load_deadline_on_a_671b_model_is_a_cold_start() -> None:
    f = top(triage_dir(extra_input("2405")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-not-ready", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("ollama.log", 5)
    assert knob_names(f)[0] == "engine.startup_timeout"


def test_openrlhf_unschedulable_request_is_a_placement_wait() -> None:
    f = top(triage_dir(extra_input("2407")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.ray-placement-wait", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("ray_job.log", 1)
    assert knob_names(f) == ["ray.placement_resources"]


def test_omni_016_stage_timeout_warning_block_is_claimed_too() -> None:
    """vllm-omni 0.16 words the block as a warning that says to ignore it (PR 1505, real-extra 2162): the cold compile
    stays the finding, the block is the information rule's, nothing is unexplained."""
    report = triage_dir(extra_input("2162"))
    assert top(report).rule == "cold.startup-compile-slow"
    f = by_rule(report)["cold.omni-stage-wait-expired"]
    assert [(e.file, e.line) for e in f.evidence] == [("vllm-omni-serve.log", 7), ("vllm-omni-serve.log", 9)]
    assert f.count == 3
    assert "unclassified" not in by_rule(report)


def test_engine_kv_blocks_out_of_memory_outranks_the_frontends_wait() -> None:
    report = triage_dir(extra_input("2408"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-kv-capacity", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("serve.log", 4)
    assert f.numbers["pool_blocks"] == 24
    assert "inference.sglang_max_total_tokens" in knob_names(f)
    assert not [g for g in report.findings if g.category == "cold-start" and g.severity != "info"]


def test_serve_replica_slow_init_that_then_serves_is_healthy() -> None:
    report = triage_dir(extra_input("2409"))
    assert warnings_or_worse(report) == []
    assert "cold.ray-placement-wait" not in by_rule(report)
