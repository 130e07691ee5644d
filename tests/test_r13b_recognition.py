"""Recognition round 13 (r13b): trainer OOM wordings and start-up waits that ended a run.

Ray Data's actor pool that did not start in time (vLLM engines still loading inside the map actors: ray issue 47183,
real-extra 1022; the newer Ray wording from ActorPoolMapOperator.start). NCCL's own allocations failing, with the CUDA
error number NCCL 2.21 prints ("Cuda failure 2 'out of memory'", then "Failed to CUDA calloc async N bytes";
Megatron-LM issue 1509, real-extra 1020): a trainer OOM, not an NCCL fault; so are ROCm's "HIP error: out of memory"
and Gaudi's "MODULE:PT_DEVMEM Allocation failed". DeepSpeed's launcher reporting a rank
killed by SIGKILL ("exits with return code = -9"; dolly issue 166, real-extra 1030): the host's OOM killer. An OOM
whose innermost frames allocate the optimizer's states (DeepSpeed ZeRO initialize_optimizer_states / stage_1_and_2
step; real-extra 1021, 1031) names the optimizer-state placement first."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_case, knob_names, triage_dir, triage_files


def test_ray_data_giving_up_on_its_loading_engine_actors_is_a_cold_start() -> None:
    f = triage_dir(extra_case("1022-") / "input").findings[0]
    assert (f.rule, f.category, f.severity) == ("cold.ray-actor-pool-start-timeout", "cold-start", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("driver.log", 5)
    assert knob_names(f) == ["engine.startup_timeout", "ray.placement_resources"]


def test_the_newer_ray_data_wording_is_the_same_start_up_timeout(tmp_path: Path) -> None:
    # the message ActorPoolMapOperator.start raises (ray/data/_internal/execution/operators/actor_pool_map_operator.py)
    line = ("ray.exceptions.GetTimeoutError: Timed out while starting actors. This may mean that the cluster does not "
            "have enough resources for the requested actor pool.\n")
    f = triage_files(tmp_path, {"driver.log": line}).findings[0]
    assert (f.rule, f.category) == ("cold.ray-actor-pool-start-timeout", "cold-start")
    assert (f.evidence[0].file, f.evidence[0].line) == ("driver.log", 1)


def test_a_get_timeout_outside_ray_data_is_no_start_up(tmp_path: Path) -> None:
    # the inner exception of real-extra 1022 alone: a ray.get with a timeout, no actor pool starting around it
    text = "".join((extra_case("1022-") / "input" / "driver.log").read_text().splitlines(keepends=True)[:5])
    report = triage_files(tmp_path, {"driver.log": text})
    assert "cold.ray-actor-pool-start-timeout" not in by_rule(report)
    assert all(f.category != "cold-start" for f in report.findings)


def test_nccl_failing_to_allocate_its_buffers_is_the_trainer_oom_not_an_nccl_fault() -> None:
    report = triage_dir(extra_case("1020-") / "input")
    assert [f.rule for f in report.findings] == ["trainer.cuda-oom"]
    f = report.findings[0]
    assert f.count == 5  # two "Cuda failure 2" lines, two "Failed to CUDA calloc async" lines, cuBLAS's
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert "NCCL WARN Cuda failure 2 'out of memory'" in f.evidence[0].text


@pytest.mark.parametrize("lines", [
    # RCCL / NCCL before the error number (a Kimi-K2 colocated run's notes, code index)
    ["include/alloc.h:316 NCCL WARN Cuda failure 'out of memory'",
     "include/alloc.h:324 NCCL WARN Failed to CUDA calloc 10485760 bytes"],
    ["TENCENT64:47604:53083 [0] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'"],
    # PyTorch on ROCm: the hipified raw-allocation check (quoted in ROCm training and vLLM boot scripts)
    ['  File "train.py", line 87, in train_step', "    loss = model(input_ids, labels=labels)",
     "RuntimeError: HIP error: out of memory"],
    # Intel Gaudi's PyTorch bridge (HabanaAI vllm-fork docs: the model does not fit the cards)
    ["RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::939524096 (896)MB"],
])
def test_accelerator_allocation_failures_in_other_words_are_a_gpu_oom(tmp_path: Path, lines: list[str]) -> None:
    report = triage_files(tmp_path, {"trainer.log": "\n".join(lines) + "\n"})
    assert report.findings[0].category == "trainer-oom"
    assert "other.nccl-error" not in by_rule(report)


def test_the_deepspeed_launchers_sigkill_is_the_host_oom_killer() -> None:
    f = triage_dir(extra_case("1030-") / "input").findings[0]
    assert (f.rule, f.category, f.severity) == ("other.killed-sigkill", "other", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert knob_names(f) == []


def test_the_deepspeed_launchers_other_return_codes_are_a_failed_job(tmp_path: Path) -> None:
    line = ("[2023-07-04 17:31:27,755] [ERROR] [launch.py:321:sigkill_handler] ['/home/pc/miniconda3/envs/Transformers/"
            "bin/python3.11', '-u', 'bloom-inference-scripts/bloom-ds-zero-inference.py', '--local_rank=0'] exits with "
            "return code = 1\n")
    found = by_rule(triage_files(tmp_path, {"train.log": line}))
    assert "other.killed-sigkill" not in found
    assert found["other.job-failed"].numbers["code"] == 1


@pytest.mark.parametrize("case, line", [
    ("1021-", 30),  # apex fused_adam allocating exp_avg inside ZeRO-2's initialize_optimizer_states
    ("1031-", 3),   # ZeRO-2's stage_1_and_2.py step() building the fp32 gradient partition
])
def test_an_oom_allocating_optimizer_state_names_the_optimizer_placement(case: str, line: int) -> None:
    f = triage_dir(extra_case(case) / "input").findings[0]
    assert (f.rule, f.category) == ("trainer.oom-optimizer-step", "trainer-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", line)
    assert knob_names(f)[0] == "trainer.optimizer_offload"
