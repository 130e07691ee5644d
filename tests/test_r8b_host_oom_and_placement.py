"""Recognition round 8 (r8b): Ray's own OutOfMemoryError is host RAM, not a CUDA OOM; a start waiting for Ray to
place its actors is a cold start.

Ray prints `ray.exceptions.RayTaskError(OutOfMemoryError)` both around torch's CUDA OutOfMemoryError and around its
own memory monitor's kill (`ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on
memory`): the wrapper alone does not say which. Real logs: real-extra 775 (a verl driver console, 2026-04, killed by
Ray's memory monitor while loading a 7B actor and ref with CPU offload on a 62 GB host), 018 (EasyR1, the wrapper
around a real CUDA OOM in update_actor), Ray's documentation of the memory monitor (Ray 2.x, the older
`Worker exit type: SYSTEM_ERROR` wording), and three wordings of a placement wait: vLLM's ray_utils (gpustack issue
5509, real-extra 780), Ray's core worker (ray issue 21920) and its autoscaler (secretflow issue 192)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, triage_dir, triage_files

from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"
HOST_775 = EXTRA / "775-verl-sdpo-vl7b-init-model-ray-host-oom" / "input"
CUDA_018 = EXTRA / "018-easyr1-update-actor-raytaskerror-oom-tqdm-interleaved" / "input"

# Ray's memory-monitor documentation (doc/source/ray-core/scheduling/ray-oom-prevention.rst), as printed there.
RAY_DOCS_HOST_OOM = """\
    WARNING worker.py:1839 -- A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: b60ff970726d7cf526e74acc71310ecce51edb4c01000000 Worker ID: 39416ad98016ee6a63173856a9b4e4100625be22e6ee4192722388ba Node ID: 3a4b60759256926fd0e84a9ff596dab3d7be854134107ef21b0e0260 Worker IP address: 172.17.0.2 Worker port: 10004 Worker PID: 69160 Worker exit type: SYSTEM_ERROR Worker exit detail: Task was killed due to the node running low on memory.
    Memory on the node (IP: 172.17.0.2, ID: 3a4b60759256926fd0e84a9ff596dab3d7be854134107ef21b0e0260) where the task was running was 32.53GB / 33.28GB (0.977449), which exceeds the memory usage threshold of 0.969955. Ray killed this worker (ID: 39416ad98016ee6a63173856a9b4e4100625be22e6ee4192722388ba) because it was the most recently scheduled task; to see more information about memory usage on this node, use `ray logs raylet.out -ip 172.17.0.2`. To see the logs of the worker, use `ray logs worker-39416ad98016ee6a63173856a9b4e4100625be22e6ee4192722388ba*out -ip 172.17.0.2`.

    Traceback (most recent call last):
      File "simple.py", line 11, in <module>
        ray.get(tasks)
      File "/home/ray/github/rayclarng/ray/python/ray/_private/client_mode_hook.py", line 105, in wrapper
        return func(*args, **kwargs)
      File "/home/ray/github/rayclarng/ray/python/ray/_private/worker.py", line 2291, in get
        raise value
    ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
"""

PLACEMENT_WAITS = [
    # gpustack issue 5509 (vLLM over Ray, 2026)
    "(EngineCore pid=84) INFO 06-07 18:13:55 [ray_utils.py:464] Waiting for creating a placement group of specs for "
    "150 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` and `ray list nodes` to see if you have "
    "enough resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP environment "
    "variable specified in each node if you are running on a multi-node.",
    # ray issue 21920 (Ray 1.9 core worker)
    "2022-01-26 01:00:53,234    WARNING worker.py:1245 -- The actor or task with ID "
    "ffffffffffffffffef9a401d7616b4423d86795701000000 cannot be scheduled right now. You can ignore this message if "
    "this Ray cluster is expected to auto-scale or if you specified a runtime_env for this actor or task, which may "
    "take time to install.  Otherwise, this is likely due to all cluster resources being claimed by actors. To "
    "resolve the issue, consider creating fewer actors or increasing the resources available to this Ray cluster.",
    # secretflow issue 192 (Ray autoscaler)
    "(scheduler +38s) Warning: The following resource request cannot be scheduled right now: {'CPU': 1.0, "
    "'alice': 1.0}. This is likely due to all cluster resources being claimed by actors. Consider creating fewer "
    "actors or adding more nodes to this Ray cluster.",
]


def _exit(report) -> int:
    return scan_exit(report.findings, "error", complete=report.coverage_complete)


def test_a_ray_wrapped_host_oom_is_host_ram_not_a_trainer_oom() -> None:
    report = triage_dir(HOST_775)
    top = report.findings[0]
    assert top.rule == "other.host-oom"
    assert top.evidence[0].file == "driver.log" and top.evidence[0].line == 377
    assert top.evidence[0].text.startswith("ray.exceptions.OutOfMemoryError: Task was killed due to the node")
    assert not [f for f in report.findings if f.category in ("trainer-oom", "serving-oom-retraction")]
    assert _exit(report) == 1


def test_the_wrapper_around_a_cuda_oom_stays_a_trainer_oom() -> None:
    report = triage_dir(CUDA_018)
    top = report.findings[0]
    assert (top.rule, top.category) == ("trainer.ray-wrapped-oom", "trainer-oom")
    assert "trainer.micro_batch_size" in knob_names(top)


def test_rays_documented_memory_monitor_kill_is_host_oom(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"driver.log": RAY_DOCS_HOST_OOM})
    found = by_rule(report)
    assert "other.host-oom" in found
    assert report.findings[0].category == "other"
    assert not [f for f in report.findings if f.category == "trainer-oom"]


def test_a_wrapped_host_kill_near_the_wrapper_does_not_read_as_cuda(tmp_path: Path) -> None:
    # the same Ray wrapper line as a CUDA OOM's, followed by Ray's own host-RAM exception (real-extra 775's lines)
    lines = (HOST_775 / "driver.log").read_text(encoding="utf-8").splitlines()[363:377]
    report = triage_files(tmp_path, {"driver.log": "\n".join(lines) + "\n"})
    assert report.findings[0].rule == "other.host-oom"
    assert "trainer.ray-wrapped-oom" not in by_rule(report)


def test_every_wording_of_a_placement_wait_is_a_cold_start_warning(tmp_path: Path) -> None:
    for i, line in enumerate(PLACEMENT_WAITS):
        report = triage_files(tmp_path / str(i), {"engine.log": line + "\n"})
        f = by_rule(report)["cold.ray-placement-wait"]
        assert (f.category, f.severity) == ("cold-start", "warning")
        assert knob_names(f) == ["ray.placement_resources"]
        assert f.evidence[0].line == 1
        assert _exit(report) == 0  # a wait alone does not gate: an autoscaling cluster may still place it


def test_the_vllm_wait_carries_its_seconds(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"engine.log": PLACEMENT_WAITS[0] + "\n"})
    assert by_rule(report)["cold.ray-placement-wait"].numbers.get("seconds") in (150, 150.0, "150")


# Ray worker processes that never register (SkyRL issue 224, real-extra 781, Ray 2.4x with the paste's Markdown
# escapes; ray issue 8890, the older raylet wording).
WORKER_START_HANGS = [
    "(AsyncVLLMInferenceEngine pid=2727011) (raylet) \\[2025-08-29 23:29:23,731 E 2711113 2711113] (raylet) "
    "worker\\_pool.cc:586: Some workers of the worker process(2768694) have not registered within the timeout. The "
    "process is still alive, probably it's hanging during start. \\[repeated 4x across cluster]",
    "(pid=raylet) I0807 17:00:41.816340 71814 71814 worker_pool.cc:265] Some workers of the worker process(76770) "
    "have not registered to raylet within timeout.",
]


def test_worker_processes_that_never_register_are_a_hung_start(tmp_path: Path) -> None:
    for i, line in enumerate(WORKER_START_HANGS):
        report = triage_files(tmp_path / str(i), {"driver.log": line + "\n"})
        f = report.findings[0]
        assert (f.rule, f.category, f.severity) == ("cold.ray-worker-start-hang", "cold-start", "warning")
        assert knob_names(f) == ["ray.worker_startup"]
        assert f.evidence[0].line == 1
