"""Recognition round 22 (r22b): verifier and cold-start, the two categories with the least material
(real-extra 2160-2170).

- A code reward that runs the policy's program from a temp file reports subprocess's TimeoutExpired ("Command
  '[...]' timed out after 12 seconds", rllm DeepCoder): verifier.timeout; a tool's subprocess timeout is not (2161).
- Ray Serve's readiness lines ("Application 'default' is ready at http://...", "Deployed app 'x' successfully",
  "Deployed Serve app successfully") end the replica-initialization waits: a slow but healthy start (Gaudi HPU,
  Llama-2-70B over 8 DeepSpeed workers, six 30 s warnings) is no failure (2166); one with no ready line stays a
  cold start (2167).
- Prime sandboxes' failures (routing catalog unavailable, placement, provisioning not RUNNING within N s,
  SandboxNotRunningError) are verifier.sandbox-api-error; their CommandTimeoutError is verifier.timeout (2168).
- Agent Lightning's "Warning: Reward is None for rollout ..." is verifier.rewards-none (2169).
- vLLM V1's data-parallel placement shortfall on Ray ("Not enough resources to allocate 2 placement groups") is
  cold.ray-resources-short with the Ray placement knob, not a generic fatal exit (2170).
- The blind right answers stay right: AReaL's math_verify ValueError (2160), vLLM-Omni's compile-slowed stage start
  (2162), vLLM's 11412 s LoRA graph capture (2163), NeMo-RL's healthy setup summaries (2164).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

from triage.model import SEVERITY_RANK


def _warnings(report) -> list[str]:
    return [f.rule for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]


# -- verifier ---------------------------------------------------------------------------------------------------------


def test_math_verify_gold_without_targets_is_a_reward_exception():
    f = top(triage_dir(extra_input("2160")))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert (f.evidence[0].file, f.evidence[0].line) == ("pytest-reward.log", 7)
    assert "verifier.reward_function" in knob_names(f)


def test_local_code_execution_timeout_is_the_verifiers():
    f = top(triage_dir(extra_input("2161")))
    assert (f.category, f.rule) == ("verifier", "verifier.timeout")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert f.numbers["seconds"] == 12
    assert knob_names(f)[0] == "verifier.timeout"


@pytest.mark.parametrize("line", [
    "subprocess.TimeoutExpired: Command '['python3', '/tmp/tmpa1b2c3/solution.py']' timed out after 10 seconds",
    "Command '['bash', '-c', ' python3 /tmp/tmpq9x1']' timed out after 6 seconds",
])
def test_subprocess_timeout_of_a_generated_program(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"reward.log": line + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.timeout")


@pytest.mark.parametrize("line", [
    "subprocess.TimeoutExpired: Command '['nvidia-smi', '--query-gpu=memory.used', '--format=csv']' timed out after 5 seconds",
    "subprocess.TimeoutExpired: Command '['git', 'fetch', 'origin']' timed out after 60 seconds",
])
def test_subprocess_timeout_of_a_tool_is_not_the_verifiers(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"train.log": line + "\n"})
    assert "verifier.timeout" not in {f.rule for f in report.findings}


def test_prime_sandbox_failures_are_sandbox_api_errors():
    report = triage_dir(extra_input("2168"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.sandbox-api-error", "warning")
    assert sorted(e.line for e in f.evidence) == [1, 4]
    assert "vocabulary.reward-path-error" not in {x.rule for x in report.findings}
    assert "verifier.timeout" in knob_names(f)


def test_prime_sandbox_not_running_and_command_timeout(tmp_path: Path):
    report = triage_files(tmp_path, {"env.log": (
        "prime_sandboxes.exceptions.SandboxNotRunningError: Sandbox k3x9v2 is not running (status=ERROR)\n"
        "prime_sandboxes.exceptions.CommandTimeoutError: Command 'python /workspace/run_tests.py' timed out after "
        "30s in sandbox k3x9v2\n")})
    rules = {f.rule for f in report.findings}
    assert {"verifier.sandbox-api-error", "verifier.timeout"} <= rules
    assert all(f.category == "verifier" for f in report.findings)


def test_agent_lightning_reward_is_none():
    f = top(triage_dir(extra_input("2169")))
    assert (f.category, f.rule) == ("verifier", "verifier.rewards-none")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert knob_names(f) == ["verifier.reward_function"]


def test_agent_lightning_reward_is_none_every_rollout_warns(tmp_path: Path):
    text = "".join(f"Warning: Reward is None for rollout ro-{i:04d}, will be auto-set to 0.0.\n" for i in range(5))
    f = top(triage_files(tmp_path, {"daemon.log": text}))
    assert (f.rule, f.severity) == ("verifier.rewards-none", "warning")
    # the daemon's other warning is no missing reward
    report = triage_files(tmp_path / "t", {"daemon.log": "Warning: Triplet is None for rollout ro-0001.\n"})
    assert "verifier.rewards-none" not in {x.rule for x in report.findings}


# -- cold-start, both directions --------------------------------------------------------------------------------------


def test_compile_slowed_stage_start_is_cold_start_not_an_error():
    f = top(triage_dir(extra_input("2162")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-compile-slow", "warning")
    assert f.evidence[0].line == 4
    assert knob_names(f)[:2] == ["compile.cache", "engine.startup_timeout"]


def test_lora_graph_capture_hours_is_cold_start():
    f = top(triage_dir(extra_input("2163")))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-capture-slow")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm-serve.log", 2)
    assert knob_names(f)[0] == "inference.sglang_cuda_graph_max_bs_decode"


def test_healthy_slow_setups_report_nothing():
    assert _warnings(triage_dir(extra_input("2164"))) == []


def test_ray_serve_replica_that_became_ready_is_no_failure():
    report = triage_dir(extra_input("2166"))
    assert _warnings(report) == []
    assert "cold.startup-wait-unanswered" not in {f.rule for f in report.findings}


@pytest.mark.parametrize("ready", [
    "INFO 2025-11-17 18:49:25,635 serve 19827 -- Application 'default' is ready at http://127.0.0.1:8000/.",
    "INFO 2024-11-12 23:37:34,418 serve 594 api.py:502 - Deployed app 'default' successfully.",
    "2023-04-10 15:57:36,840\tSUCC scripts.py:398 -- Deployed Serve app successfully.",
])
def test_ray_serve_ready_lines_end_the_wait(tmp_path: Path, ready: str):
    waits = "".join(
        f"(ServeController pid=1666) WARNING 2025-11-17 18:{46 + i // 2}:{22 + 30 * (i % 2):02d},471 controller 1666 -- "
        "Deployment 'M' in application 'default' has 1 replicas that have taken more than 30s to initialize.\n"
        for i in range(6))
    with_ready = triage_files(tmp_path / "a", {"serve.log": waits + ready + "\n"})
    assert "cold.startup-wait-unanswered" not in {f.rule for f in with_ready.findings}
    without = triage_files(tmp_path / "b", {"serve.log": waits})
    assert top(without).rule == "cold.startup-wait-unanswered"


def test_ray_serve_replica_stuck_in_jit_is_cold_start():
    f = top(triage_dir(extra_input("2167")))
    assert f.category == "cold-start"
    assert f.evidence[0].line == 6
    assert "engine.startup_timeout" in knob_names(f)


def test_vllm_dp_placement_shortfall_is_ray_resources_short():
    f = top(triage_dir(extra_input("2170")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.ray-resources-short", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("serve-controller.log", 93)
    assert (f.numbers["desired"], f.numbers["available"]) == (2, 1)
    assert knob_names(f) == ["ray.placement_resources"]


def test_cold_flashinfer_ready_wait_stays_an_engine_start_failure():
    # known miss: the one line also ends starts whose engine core died (tests/test_real_extra.py KNOWN_MISSES)
    f = top(triage_dir(extra_input("2165")))
    assert (f.category, f.rule) == ("other", "other.engine-start-failed")
