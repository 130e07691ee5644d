"""Recognition round 20 (r20d): trainer OOM, host OOM, the reward path and failures outside the six
(real-extra 1940-1949, and the known gaps 1027, 1802, 1033).

- Ray 2.5x's memory monitor lists the workers it considered or killed, one "(Task: ..." / "(Actor(<id>): job ID=..,
  lease ID=.., task name=.., pid=.., actual memory used=N GB, worker ID=..)" entry each, after "Ray killed N
  worker(s) based on the killing policy": host RAM, other.host-oom (1948, verl-omni on Ascend). The driver's
  RayTaskError(OutOfMemoryError) beside such a listing is Ray's own OutOfMemoryError, not a CUDA OOM.
- A GRPO trainer with no reward source at all (ms-swift "You must specify reward_funcs or reward_model", 1949) and
  verl's custom reward function file or function not found: verifier.reward-not-implemented.
- A CUDA OOM while a ZeRO-3 / FSDP trainer gathers a layer's sharded parameters for its own forward or backward:
  trainer.oom-param-gather, whose first knob is the new trainer.param_gather_window (stage3_prefetch_bucket_size,
  stage3_max_live_parameters; FSDP limit_all_gathers) (1027, 1802).
- One verl/rllm step line is enough for the all-zero reward warning when it counts a large batch of prompts none of
  whose samples scored (batch/solve_none >= 64, solve_all 0, reward max 0) (1033).
- Blind right, kept right: Ray's classic host-OOM kill (1940), ms-swift's KeyError 'grpo' from the CLI route table
  and the Web-UI's loss table (1941, 1942, by the process-end fallback), NCCL's watchdog with a viewer's line numbers
  (1943), Intel XPU's UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY in a training worker (1944), EasyR1 GRPO's CUDA OOM (1945),
  a rollout's Ray-wrapped OOM quoted with "> " (1946), ENOSPC at a MILES checkpoint in review prose (1947).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

# -- host RAM: Ray's memory monitor ---------------------------------------------------------------------------------

def test_ray_lease_listing_beside_a_wrapped_oom_is_host_memory():
    f = top(triage_dir(extra_input("1948")))
    assert (f.category, f.rule) == ("other", "other.host-oom")
    assert [(e.file, e.line) for e in f.evidence][0] == ("driver.log", 1)
    assert f.numbers["worker_gb"] == 10.27


@pytest.mark.parametrize("line", [
    "  Ray killed 2 worker(s) based on the killing policy",
    "  Selected to kill: (Task: job ID=01000000, lease ID=0600000001000000ffffffffffffffff, task name=hungry_hippo, "
    "required resources={CPU: 1}, pid=3310152, actual memory used=0.67GB, worker ID=3e3d8f80b70d48b643d79ed2292b5d4f)",
    "  [(Task: ... task name=ReadArrowJSON->SplitBlocks(7), pid=478, actual memory used=12.17GB, ...)]",
])
def test_ray_memory_monitor_kill_entries(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"driver.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.host-oom")


def test_a_wrapped_oom_with_no_host_kill_nearby_stays_the_trainer_s(tmp_path: Path):
    text = ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_ref_update_actor() "
            "(pid=1, ip=10.0.0.1)\n")
    f = top(triage_files(tmp_path, {"driver.log": text}))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.ray-wrapped-oom")


def test_driver_taskrunner_killed_by_ray_at_1520_of_1600_gb():
    f = top(triage_dir(extra_input("1940")))
    assert (f.category, f.rule) == ("other", "other.host-oom")
    assert [(e.file, e.line) for e in f.evidence][0] == ("train.log", 1)


# -- the reward path: no reward source ------------------------------------------------------------------------------

def test_grpo_trainer_without_any_reward_source():
    f = top(triage_dir(extra_input("1949")))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-not-implemented")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 3)]
    assert knob_names(f)[0] == "verifier.reward_function"


@pytest.mark.parametrize("line, name", [
    ("FileNotFoundError: Reward function file 'rewards/my_reward.py' not found.", None),
    ("AttributeError: Reward function 'compute_score' not found in '/workspace/reward.py'.", "compute_score"),
    ("[rank0]: ValueError: You must specify reward_funcs or reward_model", None),
])
def test_custom_reward_function_not_found(tmp_path: Path, line: str, name: str | None):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-not-implemented")
    if name:
        assert f.numbers["reward_function"] == name


def test_roll_reward_worker_class_that_does_not_import():
    # round 2 (ROLL issue 201): the failed import is logged, then the pipeline dies on worker_cls.__name__
    f = top(triage_dir(extra_input("1950")))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-not-implemented")
    assert [(e.file, e.line) for e in f.evidence][0] == ("driver.log", 1)
    assert f.numbers["reward_function"] == "roll.pipeline.rlvr.rewards.general_val_rule_reward_worker.GeneralRuleRewardWorker"


def test_a_non_reward_worker_class_that_does_not_import_is_not_the_reward_path():
    # round 2 (ROLL issue 275): worker_cls None from an environment worker's broken dependency
    f = top(triage_dir(extra_input("1951")))
    assert f.category not in SIX and f.rule != "verifier.reward-not-implemented"


def test_the_loaded_reward_function_message_is_quiet(tmp_path: Path):
    report = triage_files(tmp_path, {"train.log": "using customized reward function 'compute_score' from "
                                                  "'/workspace/reward.py'\n"})
    assert "verifier.reward-not-implemented" not in {f.rule for f in report.findings}


# -- trainer OOM: ZeRO-3 / FSDP parameter gathers -------------------------------------------------------------------

@pytest.mark.parametrize("case", ["1027", "1802"])
def test_zero3_parameter_gather_oom(case: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-param-gather")
    assert knob_names(f)[:3] == ["trainer.param_gather_window", "trainer.micro_batch_size",
                                 "trainer.activation_recompute"]


def test_fsdp_unshard_oom(tmp_path: Path):
    text = ('  File "/usr/lib/python3.11/site-packages/torch/distributed/fsdp/_runtime_utils.py", line 300, in _unshard\n'
            "    handle.unshard()\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.36 GiB. GPU 0 has a total capacity of "
            "23.65 GiB of which 1.36 GiB is free.\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-param-gather")


def test_a_gather_for_generation_stays_the_weight_sync(tmp_path: Path):
    text = ('  File "/usr/lib/python3.11/site-packages/deepspeed/runtime/zero/partition_parameters.py", line 1200, '
            "in _allgather_params_coalesced\n"
            '  File "/usr/lib/python3.11/site-packages/deepspeed/runtime/zero/partitioned_param_coordinator.py", '
            "line 424, in __all_gather_params\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.19 GiB of which 1.00 GiB is free.\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-weight-sync")


# -- rewards: one record of a large batch that scored nothing -------------------------------------------------------

def test_one_step_line_with_128_unsolved_prompts_and_max_zero():
    f = top(triage_dir(extra_input("1033")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.rewards-degenerate", "warning")
    assert f.numbers["arithmetic"].endswith(
        "batch/solve_none = 128 with a reward max of 0: none of the step's 128 prompts got a nonzero score from any "
        "sample")
    assert knob_names(f)[0] == "verifier.reward_function"


@pytest.mark.parametrize("fields", [
    # a small batch with nothing solved: one step is not yet a pattern
    "batch/solve_none:16.000 - batch/solve_all:0.000 - critic/score/mean:0.000 - critic/score/max:0.000",
    # most prompts unsolved but one sample scored
    "batch/solve_none:127.000 - batch/solve_all:0.000 - critic/score/mean:0.002 - critic/score/max:1.000",
])
def test_one_step_line_that_is_not_a_dead_verifier(tmp_path: Path, fields: str):
    report = triage_files(tmp_path, {"train.log": f"(main_task pid=1) step:4 - {fields} - actor/grad_norm:0.005\n"})
    assert "verifier.rewards-degenerate" not in {f.rule for f in report.findings}


# -- blind right, kept right ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("case, category, rule", [
    ("1941", "other", "other.fatal-exit"),
    ("1942", "other", "other.fatal-exit"),
    ("1943", "other", "other.nccl-watchdog-followup"),
    ("1944", "trainer-oom", "trainer.cuda-oom"),
    ("1945", "trainer-oom", "trainer.cuda-oom"),
    ("1946", "serving-oom-retraction", "serving.ray-wrapped-oom"),
    ("1947", "other", "other.disk-full"),
])
def test_blind_right_cases(case: str, category: str, rule: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == (category, rule)
