"""Recognition round 23 (r23c): trainer OOM at the phases of an RL step, and runs that never start
(real-extra 2290-2305).

- A CUDA IPC handle refused its pidfd call ("pidfd_getfd: Operation not permitted", "pidfd_open:Operation not
  permitted") is other.cuda-ipc-pidfd-denied, knob PYTORCH_CUDA_ALLOC_CONF (expandable segments): NeMo-RL's vLLM
  refit (2293), ROLL's vLLM worker rebuilding the weight bucket (2303); not a memory shortage, and a Rust service's
  own "(os error 1)" stays out.
- The shell's "Killed" glued to the end of a tqdm bar ("...2.59s/it]Killed") is other.killed-sigkill, like a
  "Killed" on its own line (LLaMA-Factory loading a 13B checkpoint into 40 GB of host RAM, 2296).
- An OOM under torch's nn/modules/module.py `_apply` / `convert` frames (model.to(device)) or DeepSpeed's
  `_configure_distributed_model` is trainer.oom-model-init, before any sample (Qwen-72B-Int4 on 8 V100s, 2299);
  accelerate's `convert_to_fp32` of a TRL step's logits is no model placement (1070 stays trainer.cuda-oom).
- Blind-right cases pinned on their rules: verl's first weight update OOM next to another job's process (2290,
  trainer.oom-weight-sync), slime's Megatron update_weights() OOM seen from the driver (2304), a rank-prefixed
  torch OOM whose thread settles on the batch size (2298), start-up deadlines of slime's vLLM backend and Unsloth
  Studio (2301, 2302: cold.startup-not-ready), host-RAM kills (2295 shell "Killed", 2297 Ray's memory monitor) and a
  Ray worker's SYSTEM_ERROR death (2292) that stay other.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

# -- CUDA IPC refused its pidfd call ------------------------------------------------------------------------------


@pytest.mark.parametrize("case, call", [("2293", "getfd"), ("2303", "open")])
def test_pidfd_refusal_is_a_cuda_ipc_permission_failure(case: str, call: str) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.cuda-ipc-pidfd-denied", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert f.numbers["call"] == call
    assert knob_names(f) == ["PYTORCH_CUDA_ALLOC_CONF"]
    assert not [g for g in report.findings if g.category in SIX]


def test_pidfd_refusal_under_a_ray_prefix(tmp_path: Path) -> None:
    # RLinf's same-GPU actor -> rollout weight sync on AutoDL, the rollout's receive thread
    text = ("(RolloutWorker pid=8812) Exception in thread recv:\n"
            "(RolloutWorker pid=8812) RuntimeError: pidfd_getfd: Operation not permitted\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.rule, f.evidence[0].line) == ("other.cuda-ipc-pidfd-denied", 2)


def test_a_rust_services_own_pidfd_error_is_not_cuda_ipc(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"envd.log": "bind failed: pidfd_getfd: Operation not permitted (os error 1)\n"})
    assert "other.cuda-ipc-pidfd-denied" not in by_rule(report)


# -- the shell's Killed after a progress bar ----------------------------------------------------------------------


def test_killed_glued_to_a_checkpoint_progress_bar_is_a_sigkill() -> None:
    report = triage_dir(extra_input("2296"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.killed-sigkill")
    assert (f.evidence[0].file, f.evidence[0].line) == ("chat.log", 3)
    assert not f.knobs
    assert not [g for g in report.findings if g.category in SIX]


@pytest.mark.parametrize("line, killed", [
    ("3it [05:29, 105.48s/it]Killed", True),
    ("Train:   2%|▏         | 40/2290 [01:41<93:10,  2.50s/it]Killed", True),
    ("Loading checkpoint shards: 100%|██████████| 4/4 [00:10<00:00,  2.69s/it]Killed 2 stale workers", False),
])
def test_progress_bar_then_killed(tmp_path: Path, line: str, killed: bool) -> None:
    report = triage_files(tmp_path, {"run.log": "starting\n" + line + "\n"})
    assert ("other.killed-sigkill" in by_rule(report)) is killed


# -- OOM while placing the model on the device ---------------------------------------------------------------------


def test_oom_under_module_apply_convert_is_model_init() -> None:
    f = top(triage_dir(extra_input("2299")))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-model-init")
    assert (f.evidence[0].file, f.evidence[0].line) == ("finetune.log", 13)
    assert (f.numbers["gpu"], f.numbers["capacity"], f.numbers["allocated"]) == (1, 31.75, 30.97)
    assert "trainer.optimizer_offload" in knob_names(f)
    assert "trainer.packing_max_tokens" not in knob_names(f)


DEEPSPEED_PLACEMENT = """\
[rank3]:   File "/usr/local/lib/python3.12/site-packages/deepspeed/runtime/engine.py", line 1359, in _configure_distributed_model
[rank3]:     self.module.to(self.device)
[rank3]:   File "/usr/local/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1369, in to
[rank3]:     return self._apply(convert)
[rank3]:   File "/usr/local/lib/python3.12/site-packages/torch/nn/modules/module.py", line 955, in _apply
[rank3]:     param_applied = fn(param)
[rank3]:   File "/usr/local/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1355, in convert
[rank3]:     return t.to(
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of \
39.49 GiB of which 119.38 MiB is free. Including non-PyTorch memory, this process has 8.38 GiB memory in use.
"""


def test_deepspeed_module_placement_oom_is_model_init(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"train.log": DEEPSPEED_PLACEMENT}))
    assert (f.rule, f.evidence[0].line) == ("trainer.oom-model-init", 9)


def test_accelerate_convert_to_fp32_is_no_model_placement() -> None:
    assert top(triage_dir(extra_input("1070"))).rule == "trainer.cuda-oom"


# -- blind-right cases ---------------------------------------------------------------------------------------------


def test_verl_first_weight_update_oom_next_to_another_jobs_process() -> None:
    report = triage_dir(extra_input("2290"))
    f = top(report)
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-weight-sync")
    assert (f.evidence[0].file, f.evidence[0].line) == ("phase6d-gdpo-warmup.log", 11)
    assert f.numbers["tried"] == pytest.approx(742 / 1024, abs=1e-3)
    assert "trainer.weight_gather_batches" in knob_names(f)


def test_slime_megatron_update_weights_oom_seen_from_the_driver() -> None:
    f = top(triage_dir(extra_input("2304")))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.ray-wrapped-oom-weight-sync")
    assert (f.evidence[0].file, f.evidence[0].line) == ("training.log", 1)
    assert f.numbers["actor"] == "MegatronTrainRayActor.update_weights"


def test_rank_prefixed_torch_oom_names_the_batch() -> None:
    f = top(triage_dir(extra_input("2298")))
    assert (f.rule, f.evidence[0].line) == ("trainer.cuda-oom", 1)
    assert (f.numbers["gpu"], f.numbers["capacity"]) == (0, 23.69)
    assert "trainer.micro_batch_size" in knob_names(f)


@pytest.mark.parametrize("case, file, line, deadline", [
    ("2301", "train.log", 1, None),
    ("2302", "studio.log", 2, 30.0),
])
def test_start_up_deadlines_are_cold_start(case: str, file: str, line: int, deadline: float | None) -> None:
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-not-ready")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers.get("deadline") == deadline
    assert knob_names(f)[0] == "engine.startup_timeout"


@pytest.mark.parametrize("case, rule", [
    ("2292", "other.actor-died"),
    ("2295", "other.killed-sigkill"),
    ("2297", "other.host-oom"),
])
def test_host_side_deaths_stay_other(case: str, rule: str) -> None:
    report = triage_dir(extra_input(case))
    assert (top(report).category, top(report).rule) == ("other", rule)
    assert not [g for g in report.findings if g.category == "trainer-oom"]
