"""Recognition round 18 (r18c): trainer OOM phases, reward workers, rollout prompt widths and failures outside the
six (real-extra 1740-1748).

- A rollout batch whose prompts do not stack ("Sizes of tensors must match except in dimension 0. Expected size N but
  got size M"), next to verl's batching frames (DataProto.concat through tensordict, the agent loop's _postprocess):
  one prompt wider than the padded prompt budget, prompt.rollout-batch-width-mismatch (1745, and 335 that missed
  since s12). The same torch.cat error elsewhere stays unexplained.
- A reward worker that died on the call collecting its scores (RayTaskError(WorkerCrashedError|ActorDiedError) of
  OpenRLHF's RemoteRewardModel, verl's RewardLoopWorker or reward-model group): verifier.reward-worker-died (1741).
- A trainer OOM while the model is built or loaded (init_model, checkpoint conversion at setup, shard loading):
  trainer.oom-model-init, whose knobs are sharding/offload and what else holds the GPU, not sample length (1740).
- Blind right, kept right: a backward OOM message wrapped over three lines (1746), a shortened optimizer-state OOM
  (1747), a pytest "E   "-prefixed cross-entropy OOM (1748), Ray's memory monitor (1742), a checkpoint write failure
  (1743) and a flash-attn ABI mismatch under a Ray prefix (1744), the last three `other`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

WIDTH = ("RuntimeError: Sizes of tensors must match except in dimension 0. Expected size 2048 but got size 2106 for "
         "tensor number 2 in the list.\n")


def test_agent_loop_prompt_width_is_a_prompt_over_its_budget():
    f = top(triage_dir(extra_input("1745")))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.rollout-batch-width-mismatch", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 7)]
    assert (f.numbers["expected"], f.numbers["got"], f.numbers["index"]) == (4096, 4128, 32)
    assert "miles.rollout_max_prompt_len" in knob_names(f)


def test_dataproto_concat_width_through_tensordict_is_a_prompt_over_its_budget():
    f = top(triage_dir(extra_input("335")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.rollout-batch-width-mismatch")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 6)]
    assert (f.numbers["expected"], f.numbers["got"]) == (2048, 2106)


@pytest.mark.parametrize("frames", [
    '  File "verl/protocol.py", line 941, in concat\n',
    '  File "verl/experimental/agent_loop/agent_loop.py", line 949, in generate_sequences\n',
])
def test_other_batching_frames_decide_alike(tmp_path: Path, frames: str):
    f = top(triage_files(tmp_path, {"train.log": "Traceback (most recent call last):\n" + frames + WIDTH}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.rollout-batch-width-mismatch")


def test_the_same_shape_error_elsewhere_is_not_a_prompt_budget(tmp_path: Path):
    log = ("Traceback (most recent call last):\n"
           '  File "/workspace/model.py", line 12, in merge\n'
           "    x = torch.cat(parts, dim=0)\n" + WIDTH)
    assert top(triage_files(tmp_path, {"train.log": log})).category != "prompt-budget"


def test_a_narrow_tensor_is_not_a_prompt_row(tmp_path: Path):
    log = ('Traceback (most recent call last):\n  File "verl/protocol.py", line 941, in concat\n'
           "RuntimeError: Sizes of tensors must match except in dimension 0. Expected size 7 but got size 8 for tensor "
           "number 2 in the list.\n")
    assert top(triage_files(tmp_path, {"train.log": log})).category != "prompt-budget"


def test_openrlhf_reward_worker_crash_is_the_verifiers():
    f = top(triage_dir(extra_input("1741")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.reward-worker-died", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("train.log", 21)
    assert f.numbers["worker"] == "RemoteRewardModel.get_rewards"
    assert f.numbers["error"] == "WorkerCrashedError"
    assert set(knob_names(f)) >= {"verifier.reward_function", "verifier.timeout"}


@pytest.mark.parametrize("header", [
    "ray.exceptions.RayTaskError(ActorDiedError): ray::RewardLoopWorker.compute_score() (pid=4121, ip=10.0.0.3)",
    "ray.exceptions.RayTaskError(ActorDiedError): ray::WorkerDict.rm_compute_rm_score() (pid=3301, ip=10.0.0.5)",
    "ray.exceptions.RayTaskError(WorkerCrashedError): ray::remote_rm_fn_ray() (pid=92259, ip=10.0.0.7)",
])
def test_other_reward_workers_dying(tmp_path: Path, header: str):
    f = top(triage_files(tmp_path, {"train.log": header + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-worker-died")


def test_rays_bare_actor_died_names_the_reward_actor_on_its_class_line(tmp_path: Path):
    log = ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
           "\tclass_name: RewardLoopWorker\n\tactor_id: d9cc467228965f31cb6dbc9301000000\n\tpid: 20174\n")
    f = top(triage_files(tmp_path, {"train.log": log}))
    assert (f.category, f.rule, f.numbers["worker"]) == ("verifier", "verifier.reward-worker-died", "RewardLoopWorker")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 2)


def test_a_reward_class_line_without_a_dead_actor_is_nothing(tmp_path: Path):
    log = "actors:\n\tclass_name: RewardLoopWorker\n\tstate: ALIVE\n"
    assert all(f.rule != "verifier.reward-worker-died" for f in triage_files(tmp_path, {"train.log": log}).findings)


def test_a_rollout_worker_dying_is_not_the_verifiers(tmp_path: Path):
    log = ("ray.exceptions.RayTaskError(ActorDiedError): ray::WorkerDict.actor_rollout_generate_sequences() "
           "(pid=9238, ip=10.0.0.1)\n")
    assert top(triage_files(tmp_path, {"train.log": log})).category != "verifier"


def test_nemo_rl_oom_at_setup_names_sharding_not_sample_length():
    f = top(triage_dir(extra_input("1740")))
    assert (f.category, f.rule, f.severity) == ("trainer-oom", "trainer.oom-model-init", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("grpo.log", 21)]
    names = knob_names(f)
    assert {"trainer.optimizer_offload", "PYTORCH_CUDA_ALLOC_CONF"} <= set(names)
    assert "miles.log_probs_chunk_size" not in names and "trainer.packing_max_tokens" not in names


@pytest.mark.parametrize("case", ["879", "395"])
def test_earlier_init_ooms_take_the_init_rule(case: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-model-init")


def test_a_forward_oom_keeps_its_sample_knobs(tmp_path: Path):
    log = ("Traceback (most recent call last):\n"
           '  File "verl/workers/actor/dp_actor.py", line 266, in _forward_micro_batch\n'
           "    logits = self.actor_module(input_ids)\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB. GPU 0 has a total capacity of "
           "79.11 GiB of which 8.85 GiB is free.\n")
    f = top(triage_files(tmp_path, {"train.log": log}))
    assert f.category == "trainer-oom" and f.rule != "trainer.oom-model-init"


@pytest.mark.parametrize("case,rule,file,line", [
    ("1746", "trainer.cuda-oom", "benchmark.log", 3),
    ("1747", "trainer.cuda-oom", "train.log", 2),
    ("1748", "trainer.cuda-oom", "pytest.log", 16),
])
def test_blind_right_trainer_ooms(case: str, rule: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("trainer-oom", rule)
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)


@pytest.mark.parametrize("case,rule", [
    ("1742", "other.host-oom"),
    ("1743", "other.checkpoint-write-failed"),
    ("1744", "other.import-error"),
])
def test_blind_right_failures_outside_the_six(case: str, rule: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", rule)


def test_rllib_weight_broadcast_over_the_object_store_is_not_a_trainer_oom():
    f = top(triage_dir(extra_input("1750")))
    assert (f.category, f.rule) == ("other", "other.object-store-full")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 14)
