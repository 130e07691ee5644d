"""Recognition round 19 (r19d): complete public run logs (real-extra 1820-1825), blind 5/6 by category.

- vLLM prints the Hub download of a first start on its own line (`Time spent downloading weights for M: S seconds`,
  weight_utils.py, 0.6 -> 2026) and counts it again inside `Model loading took X GiB and Y seconds`: the weight-load
  phase is the load less the download, the download a phase of its own. A 9.7 s load after an 844 s download is not
  slow storage (1821, missed blind as cold-start); a 347 s load after a 2,389 s download still is (651).
- The same exception that ended a process, printed again by another process or wrapper (each LLMRayActor's engine,
  Ray's TaskRunner copy), folds into the process-end finding instead of standing as an unexplained warning beside
  it (r19a's weak spot: 1766, 1774; also 776).
- Blind right, kept right: a verl TPU port's critic update out of HBM at XLA compile (1820), a second `vllm serve`
  on a host with no GPU while the first one served (1822), an SGLang start copied at CUDA-graph capture (1823) and
  two hand-written GRPO/PPO runs on a Mac (1824, 1825).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse

START = "(EngineCore_DP0 pid=7) INFO 01-01 21:15:21 [gpu_model_runner.py:3562] Starting to load model M...\n"


def download(seconds: str) -> str:
    return (f"(EngineCore_DP0 pid=7) INFO 01-01 21:29:26 [weight_utils.py:487] Time spent downloading weights for "
            f"Qwen/Qwen2.5-14B-Instruct-AWQ: {seconds} seconds\n")


def model_loading(seconds: str) -> str:
    return (f"(EngineCore_DP0 pid=7) INFO 01-01 21:29:35 [gpu_model_runner.py:3659] Model loading took 9.3795 GiB "
            f"memory and {seconds} seconds\n")


def test_first_start_download_is_not_a_slow_load():
    r = triage_dir(extra_input("1821"))
    assert warnings_or_worse(r) == []
    f = by_rule(r)["cold.startup-phases"]
    phases = f.numbers["startup_phases"]
    assert (phases["download"], phases["weight_load"]) == (844.44, 9.67)
    assert ("vllm.log", 18) in [(e.file, e.line) for e in f.evidence]


def test_download_then_slow_load_is_still_slow():
    r = triage_dir(extra_input("651"))
    f = by_rule(r)["cold.startup-load-slow"]
    assert f.severity == "warning" and f.numbers["seconds"] == 347.08
    assert top(r).category == "serving-oom-retraction"


@pytest.mark.parametrize(("down", "load", "slow"), [
    ("508.576789", "520.112233", None),  # vLLM 0.8 V0 wording of the same pair (a 1.5B model)
    ("60.5", "400.75", 340.25),
    ("0.581658", "200.0", 199.42),
])
def test_load_less_download(tmp_path: Path, down: str, load: str, slow: float | None):
    r = triage_files(tmp_path, {"vllm.log": START + download(down) + model_loading(load)})
    f = by_rule(r).get("cold.startup-load-slow")
    assert (f.numbers["seconds"] if f else None) == slow


def test_a_download_after_the_load_takes_nothing_from_it(tmp_path: Path):
    r = triage_files(tmp_path, {"vllm.log": START + model_loading("400.0") + download("300.0")})
    assert by_rule(r)["cold.startup-load-slow"].numbers["seconds"] == 400.0


def test_the_loaders_own_time_is_left_alone(tmp_path: Path):
    weights = "(EngineCore_DP0 pid=7) INFO 01-01 21:29:35 [default_loader.py:308] Loading weights took 250.50 seconds\n"
    r = triage_files(tmp_path, {"vllm.log": START + download("300.0") + weights})
    assert by_rule(r)["cold.startup-load-slow"].numbers["seconds"] == 250.5


@pytest.mark.parametrize(("case", "copies"), [("1766", 2), ("1774", 1), ("776", 1)])
def test_copies_of_the_ending_exception_fold_into_the_process_end(case: str, copies: int):
    r = triage_dir(extra_input(case))
    f = top(r)
    assert (f.rule, f.severity) == ("other.fatal-exit", "error")
    assert f.numbers["same_exception_lines"] == copies
    assert warnings_or_worse(r) == ["other.fatal-exit"]
    assert not any(g.rule == "unclassified" and g.numbers["template"].startswith(f.numbers["exception"])
                   for g in r.findings)


def test_another_exception_stays_apart(tmp_path: Path):
    log = ("(Worker pid=2) ValueError: bad shard index 7\n"
           "Traceback (most recent call last):\n"
           '  File "/app/run.py", line 3, in <module>\n'
           "    main()\n"
           "ZeroDivisionError: division by zero\n")
    r = triage_files(tmp_path, {"train.log": log})
    rules = [f.rule for f in r.findings]
    assert "other.fatal-exit" in rules
    assert any(f.rule == "unclassified" and f.numbers["template"].startswith("ValueError") for f in r.findings)


def test_two_processes_printing_one_exception_make_one_finding(tmp_path: Path):
    log = ("(LLMRayActor pid=11) AssertionError: Streaming VLLM version must be greater than 0.8.5\n"
           "(LLMRayActor pid=12) AssertionError: Streaming VLLM version must be greater than 0.8.5\n"
           "Traceback (most recent call last):\n"
           '  File "/app/train.py", line 9, in <module>\n'
           "    ray.get(refs)\n"
           "AssertionError: Streaming VLLM version must be greater than 0.8.5\n")
    r = triage_files(tmp_path, {"driver.err": log})
    assert warnings_or_worse(r) == ["other.fatal-exit"]
    assert top(r).numbers["same_exception_lines"] == 2


def test_tpu_critic_update_out_of_hbm_is_the_trainer():
    f = top(triage_dir(extra_input("1820")))
    assert (f.category, f.rule, f.severity) == ("trainer-oom", "trainer.cuda-oom", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("verl_no_vllm_full_seqlen.log", 5119)]
    assert "trainer.micro_batch_size" in knob_names(f)


def test_second_vllm_serve_without_a_gpu_is_outside_the_six():
    r = triage_dir(extra_input("1822"))
    f = top(r)
    assert f.category in ("other", "unclassified") and "Failed to infer device type" in f.evidence[0].text
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm.log", 33)


@pytest.mark.parametrize("case", ["1823", "1824", "1825"])
def test_healthy_or_copied_mid_run(case: str):
    assert warnings_or_worse(triage_dir(extra_input(case))) == []
