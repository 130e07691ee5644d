"""Recognition round 17 (r17c): trainer OOM, prompt budgets and weight sync in RL trainers (real-extra 1640-1647).

- A Ray-wrapped OOM is placed by the actor the header names: the vLLM engine actors of OpenRLHF (its first `LLMActor`,
  kept by Open-Reasoner-Zero), SkyRL (`AsyncVLLMInferenceEngine`) and NeMo-RL (`VllmGenerationWorker`) are engines,
  so `RayTaskError(OutOfMemoryError): ray::LLMActor.backload_to_gpu()` is the engine's memory at wake-up
  (serving.ray-wrapped-oom, real-extra 1643), not a trainer OOM; so are verl 0.6's rollout server actors
  (vLLMHttpServer, SGLangHttpServer, TRTLLMHttpServer and the ...ForPartial variants). A trainer actor of the same
  frameworks stays the trainer's.
- Ray's collective (NCCL) group that carries weights to the engines and never formed ("Unable to meet other
  processes at the rendezvous store", "Unable to get the NCCLUniqueID from the store"): other.ray-collective-rendezvous
  (real-extra 1647).
- Blind right, kept right: rLLM's "initial prompt length N already exceeded max_prompt_length M" (1640), verl's actor
  backward OOM under two Ray headers (1641), TRL/rl-swarm's backward OOM (1642), a Ray worker gone with the OOM killer
  among its possible causes (1644, not a GPU OOM), a shortened and a hard-wrapped OOM message (1645, 1646).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

OOM_TAIL = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.47 GiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.25 GiB is free.\n")


def test_orz_engine_backload_oom_is_the_engines_memory():
    f = top(triage_dir(extra_input("1643")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.ray-wrapped-oom", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 20)]
    assert f.numbers["actor"] == "LLMActor.backload_to_gpu"
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


@pytest.mark.parametrize("header", [
    # OpenRLHF 0.2-0.5 / Open-Reasoner-Zero
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::LLMActor.backload_to_gpu() (pid=11992, ip=10.148.9.90)",
    # NeMo-RL's vLLM generation workers
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::VllmGenerationWorker.generate() (pid=1, ip=10.0.0.1)",
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::VllmAsyncGenerationWorker.generate_async() (pid=1)",
    # SkyRL's vLLM engine
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::AsyncVLLMInferenceEngine.wake_up() (pid=953485)",
    # verl 0.6 ->'s rollout server actors
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::vLLMHttpServer.wake_up() (pid=1, ip=10.0.0.1)",
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::SGLangHttpServerForPartial.generate() (pid=1)",
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::TRTLLMHttpServer.generate() (pid=1)",
])
def test_engine_actors_of_other_rl_frameworks_place_a_wrapped_oom_on_the_engine(tmp_path: Path, header: str):
    f = top(triage_files(tmp_path, {"train.log": header + "\n"}))
    assert (f.category, f.rule, f.numbers["side"]) == ("serving-oom-retraction", "serving.ray-wrapped-oom", "engine")


@pytest.mark.parametrize("prefix", ["(LLMActor pid=11992, ip=10.148.9.90) ", "(VllmGenerationWorker pid=2671339) ",
                                    "(AsyncVLLMInferenceEngine pid=953485) ", "(vLLMHttpServer pid=1234) ",
                                    "(SGLangHttpServerForPartial pid=1234) "])
def test_their_log_prefix_places_a_bare_oom_on_the_engine(tmp_path: Path, prefix: str):
    f = top(triage_files(tmp_path, {"train.log": prefix + OOM_TAIL}))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")


@pytest.mark.parametrize("line", [
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::DTensorPolicyWorkerV2.get_logprobs() (pid=2671339, ip=1.2.3.4)",
    "(ActorModelRayActor pid=1733478) " + OOM_TAIL.strip(),
])
def test_the_trainer_actors_of_the_same_frameworks_stay_the_trainers(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert f.category == "trainer-oom"


def test_ray_collective_group_that_never_met_is_a_setup_failure():
    f = top(triage_dir(extra_input("1647")))
    assert (f.category, f.rule, f.severity) == ("other", "other.ray-collective-rendezvous", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert f.knobs == []


@pytest.mark.parametrize("line, timeout", [
    ("RuntimeError: Unable to get the NCCLUniqueID from the store.", None),
    ("RuntimeError: Unable to get the NCCLUniqueID from the store within 180 seconds.", 180),
    ("RuntimeError: Unable to meet other processes at the rendezvous store. If you are using P2P communication, "
     "please check if tensors are put in the correct GPU. ", None),
])
def test_every_wording_of_the_collective_rendezvous(tmp_path: Path, line: str, timeout: int | None):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert f.rule == "other.ray-collective-rendezvous"
    assert f.numbers.get("timeout_s") == timeout


def test_the_debug_retry_of_the_rendezvous_is_no_failure(tmp_path: Path):
    report = triage_files(tmp_path, {"train.log": "Failed to meet at the store 'g@nccl'.Trying again...\n"
                                                  "Successful rendezvous!\n"})
    assert not [f for f in report.findings if f.rule == "other.ray-collective-rendezvous"]


def test_rllm_initial_prompt_over_its_limit():
    f = top(triage_dir(extra_input("1640")))
    assert (f.category, f.rule) == ("prompt-budget", "vocabulary.prompt-over-budget")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert "miles.rollout_max_prompt_len" in knob_names(f)


def test_verl_actor_backward_oom_under_two_ray_headers():
    f = top(triage_dir(extra_input("1641")))
    assert (f.category, f.rule, f.severity) == ("trainer-oom", "trainer.oom-backward", "error")
    assert ("train.log", 37) in [(e.file, e.line) for e in f.evidence]
    assert knob_names(f)[0] == "trainer.activation_recompute"


@pytest.mark.parametrize("case, rule, line", [
    ("1642", "trainer.cuda-oom", 2),   # rl-swarm's backward OOM, two lines pasted
    ("1645", "trainer.cuda-oom", 1),   # the message shortened by its author
])
def test_trainer_oom_lines_as_pasted(case: str, rule: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("trainer-oom", rule)
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", line)]


def test_hard_wrapped_oom_message_is_read_from_its_first_line():
    f = top(triage_dir(extra_input("1646")))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.cuda-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("slurm.err", 1)]
    assert "trainer.micro_batch_size" in knob_names(f)


def test_worker_gone_with_the_oom_killer_among_its_causes_is_no_gpu_oom():
    report = triage_dir(extra_input("1644"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.actor-died")
    assert not [g for g in report.findings if g.category in ("trainer-oom", "serving-oom-retraction")]
