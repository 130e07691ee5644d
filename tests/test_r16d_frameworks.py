"""Recognition round 16 (r16d): verl, EasyR1, TRL wordings of the six categories and their neighbours.

- Dynamic sampling that gave up (verl's DAPO "num_gen_batches=10 >= max_num_gen_batches=10. Generated too many",
  EasyR1's "num_try_make_batch=20 >= max_try_make_batch=20", NeMo-RL's "Dynamic sampling has reached the maximum
  allowable number of batches"): the groups all scored alike batch after batch, so the rewards carry no signal:
  verifier.dynamic-sampling-exhausted (real-extra 1550, verl issue 1108).
- verl's dynamic batch size refusing a sequence longer than the per-GPU token budget ("max_token_len must be greater
  than the sequence length"): a configuration check, not an OOM: other.dynamic-bsz-budget-below-sequence, knob
  ppo_max_token_len_per_gpu (real-extra 1551).
- Ray's top-memory-users table pasted alone ("PID  MEM(GB)  COMMAND"): the memory monitor's kill report, host RAM
  (other.host-oom, real-extra 1552; 1553 the raylet's summary at a checkpoint save, blind right).
- An OOM that nothing else places, followed within five lines by SGLang's "Received sigquit from a child process" (its
  scheduler died), is the engine's, also under verl's colocated WorkerDict prefix (sides.yaml `trailing:`; real-extra
  1554, verl issue 1208); a traceback's own trainer frame still decides first.
- Blind right, kept right: TRL's completions/clipped_ratio 1 with every reward 0 is the response cap (1555).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files

SIGQUIT = "[2025-04-23 19:23:11] Received sigquit from a child process. It usually means the child failed.\n"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.84 GiB. GPU 1 has a total capacity of 94.50 GiB "
       "of which 4.33 GiB is free.\n")


def test_dapo_dynamic_sampling_that_gave_up_is_a_reward_without_signal():
    f = top(triage_dir(extra_input("1550")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.dynamic-sampling-exhausted", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 6)]
    assert (f.numbers["batches"], f.numbers["max_batches"]) == (10, 10)
    assert knob_names(f) == ["verifier.reward_function"]
    assert any("max_num_gen_batches" in k for k in f.not_knobs)


@pytest.mark.parametrize("line, batches", [
    ("num_try_make_batch=20 >= max_try_make_batch=20. Generated too many. Please check your data.", 20),
    ("ValueError: num_gen_batches=10 > max_num_gen_batches=10. Generated too many. Please check your data.", 10),
    ("ValueError: num_gen_batches=5 >= max_num_gen_batches=5. Generated too many. Please check if your data are too "
     "difficult. You could also try set max_num_gen_batches=0 to enable endless trials.", 5),
])
def test_every_frameworks_wording_of_the_exhausted_sampling(tmp_path: Path, line: str, batches: int):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.rule, f.numbers["batches"]) == ("verifier.dynamic-sampling-exhausted", batches)


def test_nemo_rls_wording_names_the_cap(tmp_path: Path):
    line = ("ValueError: Dynamic sampling has reached the maximum allowable number of batches (8). Consider evaluating "
            "the complexity of your data\n")
    f = top(triage_files(tmp_path, {"train.log": line}))
    assert (f.rule, f.numbers["max_batches"]) == ("verifier.dynamic-sampling-exhausted", 8)


def test_sampling_that_goes_on_is_no_failure(tmp_path: Path):
    lines = "num_prompt_in_batch=97 < prompt_bsz=128\nnum_gen_batches=3. Keep generating...\n"
    report = triage_files(tmp_path, {"train.log": lines})
    assert not [f for f in report.findings if f.rule == "verifier.dynamic-sampling-exhausted"]


def test_a_sequence_longer_than_the_per_gpu_token_budget_is_a_configuration_check():
    f = top(triage_dir(extra_input("1551")))
    assert (f.category, f.rule, f.severity) == ("other", "other.dynamic-bsz-budget-below-sequence", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert (f.numbers["max_token_len"], f.numbers["seq_len"]) == (16384, 40960)
    assert knob_names(f) == ["trainer.packing_max_tokens"]


def test_the_older_effective_length_wording_reads_the_tensor(tmp_path: Path):
    line = ("AssertionError: max_token_len must be greater than the sequence length. Got max_token_len=3072 and "
            "max_seq_len=tensor(4608)\n")
    f = top(triage_files(tmp_path, {"train.log": line}))
    assert (f.rule, f.numbers["seq_len"]) == ("other.dynamic-bsz-budget-below-sequence", 4608)


def test_rays_top_memory_users_table_alone_is_a_host_oom():
    f = top(triage_dir(extra_input("1552")))
    assert (f.category, f.rule) == ("other", "other.host-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert knob_names(f) == []


@pytest.mark.parametrize("header", ["PID\tMEM(GB)\tCOMMAND", "Top 10 memory users: PID  MEM(GB) COMMAND"])
def test_the_tables_other_renderings(tmp_path: Path, header: str):
    f = top(triage_files(tmp_path, {"ray.log": header + "\n4100606\t56.57\tray::WorkerDict.actor_rollout_generate_sequences\n"}))
    assert (f.rule, f.evidence[0].line) == ("other.host-oom", 1)


def test_tops_header_is_no_kill(tmp_path: Path):
    report = triage_files(tmp_path, {"top.txt": "  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"})
    assert not [f for f in report.findings if f.rule == "other.host-oom"]


def test_the_raylets_kill_summary_at_a_checkpoint_save_stays_a_host_oom():
    f = top(triage_dir(extra_input("1553")))
    assert (f.category, f.rule) == ("other", "other.host-oom")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 4)]
    assert f.numbers["killed"] == 2


def test_an_oom_before_sglangs_sigquit_under_verls_workerdict_is_the_engines():
    f = top(triage_dir(extra_input("1554")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-cuda-oom")
    assert [(e.file, e.line) for e in f.evidence][0] == ("train.log", 1)
    assert f.numbers["side"] == "engine"
    assert f.numbers["tried"] == pytest.approx(3.84, abs=1e-3)


def test_a_sigquit_more_than_five_lines_after_places_nothing(tmp_path: Path):
    f = top(triage_files(tmp_path, {"paste.txt": "(WorkerDict pid=281552) " + OOM + "\n" * 6 + SIGQUIT}))
    assert (f.rule, f.numbers["side"]) == ("trainer.cuda-oom", "unknown")


def test_a_trainer_frame_above_the_oom_outweighs_a_later_sigquit(tmp_path: Path):
    tb = ("Traceback (most recent call last):\n"
          '  File "/verl/verl/workers/actor/dp_actor.py", line 266, in _forward_micro_batch\n'
          "    entropy = verl_F.entropy_from_logits(logits)\n" + OOM + SIGQUIT)
    f = top(triage_files(tmp_path, {"train.log": tb}))
    assert (f.rule, f.numbers["side"]) == ("trainer.cuda-oom", "trainer")


def test_trls_clipped_ratio_one_with_zero_rewards_is_the_response_cap():
    f = top(triage_dir(extra_input("1555")))
    assert (f.category, f.rule) == ("generation-tail", "gen.cap-hit-rate")
    assert [(e.file, e.line) for e in f.evidence] == [("metrics.txt", 1)]
    assert "inference.max_response_length" in knob_names(f)
