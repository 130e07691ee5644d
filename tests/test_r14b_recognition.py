"""Recognition round 14 (r14b): optimizer-state OOMs, Ray placement that cannot happen, rendezvous that never formed.

An OOM whose frames are an optimizer's step outside torch (fairseq optim/adam.py, real-extra 1118) or the optimizer
states being created before any step (DeepSpeed ZeRO-3 _create_fp32_partitions; torch DCP's _init_optim_state, which
OLMo-core's step-0 checkpoint hit, real-extra 1124, a reporter's excerpt with the frames under the OOM line) names the
optimizer-state placement. Ray's autoscaler saying no node type can hold a bundle (rllm issue 35, vllm issue 14111) is
the same start-up wait on resources as vLLM's placement-group wait. torch.distributed's TCPStore rendezvous timing out
(DistStoreError "M/K clients joined", DistNetworkError "client socket has timed out") is named as such: other."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_case, knob_names, triage_dir, triage_files


@pytest.mark.parametrize(("case", "line"), [
    ("1118-", 4),  # fairseq's own Adam step (optim/adam.py, exp_avg_sq.sqrt), torch 1.x wording
    ("1119-", 11),  # torch AdamW allocating exp_avg_sq lazily at the first step
    ("1124-", 1),  # torch DCP _init_optim_state -> optim.step, frames pasted under the OOM line
])
def test_an_oom_creating_or_stepping_optimizer_state_names_the_optimizer_placement(case: str, line: int) -> None:
    f = triage_dir(extra_case(case) / "input").findings[0]
    assert (f.rule, f.category) == ("trainer.oom-optimizer-step", "trainer-oom")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", line)
    assert knob_names(f)[0] == "trainer.optimizer_offload"


def test_deepspeed_zero3_creating_its_fp32_partitions_is_the_optimizer_state(tmp_path: Path) -> None:
    # the frames DeepSpeed 0.1x prints when ZeRO-3 builds the fp32 master partitions in deepspeed.initialize
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1474, in _configure_zero_optimizer\n'
        "    optimizer = DeepSpeedZeroOptimizer_Stage3(\n"
        '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py", line 310, in __init__\n'
        "    self._setup_for_real_optimizer()\n"
        '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py", line 384, in _setup_for_real_optimizer\n'
        "    self._create_fp32_partitions()\n"
        '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py", line 824, in _create_fp32_partitions\n'
        "    self.fp32_partitioned_groups_flat.append(self.fp16_partitioned_groups_flat[i].to(self.device).clone().float().detach())\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB (GPU 0; 23.69 GiB total capacity; "
        "20.61 GiB already allocated; 1.21 GiB free; 21.02 GiB reserved in total by PyTorch)\n")
    f = triage_files(tmp_path, {"train.log": text}).findings[0]
    assert (f.rule, f.evidence[0].line) == ("trainer.oom-optimizer-step", 10)
    assert knob_names(f)[0] == "trainer.optimizer_offload"


def test_a_forward_oom_followed_by_the_launchers_lines_is_not_the_optimizer_step(tmp_path: Path) -> None:
    # the lines that follow an OOM line count only when they are the optimizer's frames
    text = (
        '  File "/opt/conda/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py", line 312, in forward\n'
        "    attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
        "of which 2.01 GiB is free.\n"
        "[2024-06-01 16:22:20,125] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1982\n"
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 88, in <module>\n')
    f = triage_files(tmp_path, {"train.log": text}).findings[0]
    assert (f.rule, f.category) == ("trainer.cuda-oom", "trainer-oom")


@pytest.mark.parametrize(("case", "file", "line"), [
    ("1125-", "driver.log", 1),  # "(autoscaler +34s) Error: No available node types can fulfill resource request"
    ("1126-", "engine.log", 4),  # vLLM's "required GPUs exceeds" warning first, the autoscaler's error after it
    ("1116-", "engine.log", 1),
])
def test_ray_unable_to_place_the_bundles_is_a_start_up_wait_on_resources(case: str, file: str, line: int) -> None:
    f = triage_dir(extra_case(case) / "input").findings[0]
    assert (f.rule, f.category) == ("cold.ray-placement-wait", "cold-start")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert knob_names(f) == ["ray.placement_resources"]


@pytest.mark.parametrize(("case", "file", "line", "what"), [
    ("958-", "train_ppo_ray.log", 17, "clients"),  # DistStoreError "1/3 clients joined"
    ("1127-", "launcher.log", 3, "client"),  # DistNetworkError under torchrun's dynamic rendezvous
    ("1128-", "train.log", 10, "client"),  # TRL's weight-sync communicator to a vLLM server
    ("900-", "train.log", 1, "client"),  # c10d's own [E ... socket.cpp] line
])
def test_a_store_rendezvous_that_never_formed_is_named(case: str, file: str, line: int, what: str) -> None:
    f = triage_dir(extra_case(case) / "input").findings[0]
    assert (f.rule, f.category, f.severity) == ("other.store-rendezvous-timeout", "other", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.title == f"torch.distributed rendezvous did not form (TCPStore {what})"
    assert knob_names(f) == []


def test_a_peers_oom_outranks_the_rendezvous_timeout_it_caused(tmp_path: Path) -> None:
    files = {
        "rank0.log": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 79.10 GiB of which 1.01 GiB is free.\n",
        "rank1.log": "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients "
                     "joined.\n",
    }
    report = triage_files(tmp_path, files)
    assert report.findings[0].category == "trainer-oom"
    assert "other.store-rendezvous-timeout" in by_rule(report)
