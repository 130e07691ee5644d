"""Recognition round 20 (r20f): weight sync between trainer and engine, engine crashes and start-up inside the RL
frameworks earlier rounds used least (real-extra 1980-1991).

- The engine's own refusal of the weights a trainer sent is health.weight-update-failed (other, error): SGLang's
  "Failed to update parameter online: ... partially updated" under slime (1988 on Ascend, 1989 with expert-TP shards;
  blind 1989 was prompt-budget by vocabulary for its "exceeds dimension size", 1988 unclassified), its scheduler's
  "Cache flush failed after updating weights" when AReaL pushed weights while requests ran (1987), and a paste cut
  inside the engine-side update frames (1991, blind no finding; also verl's update_weights_from_ipc in 362 and
  OpenRLHF's update_weight in 110). Access-log lines of successful updates, a flush that only waited, and a
  trainer-side bucket helper are not failures.
- Blind right, kept right: mid-run c10d waitForInput timeouts of TRL's and ms-swift's vLLM server weight-sync group
  (1980, 1981, other.store-rendezvous-timeout, whose explain now covers a connection that had formed), a pynccl
  "unhandled cuda error" in trl vllm-serve's collective_rpc (1982), a gloo send timeout behind a monitored barrier
  (1983), SkyRL's vLLM EngineCore fatal error (1984), a V1 engine core that never initialised (1985), and prime-rl's
  orchestrator polling a starting server (1986, info only).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, top, triage_dir, triage_files, warnings_or_worse


def test_areal_cache_flush_failed_after_weight_update():
    f = top(triage_dir(extra_input("1987")))
    assert (f.category, f.rule, f.severity) == ("other", "health.weight-update-failed", "error")
    assert ("areal.log", 11) in [(e.file, e.line) for e in f.evidence]
    assert "other.engine-crash" in f.numbers.get("symptoms", [])


def test_slime_npu_moe_failed_to_update_parameter_online():
    f = top(triage_dir(extra_input("1988")))
    assert (f.category, f.rule, f.severity) == ("other", "health.weight-update-failed", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 6)]
    assert f.numbers["reason"].startswith("start out of range")


def test_etp_shard_refused_is_not_a_prompt_over_budget():
    f = top(triage_dir(extra_input("1989")))
    assert (f.category, f.rule) == ("other", "health.weight-update-failed")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert f.numbers["reason"] == "start (256) + length (256) exceeds dimension size (256).."


def test_engine_update_frames_of_a_cut_paste():
    f = top(triage_dir(extra_input("1991")))
    assert (f.category, f.rule, f.severity) == ("other", "health.weight-update-failed", "error")
    assert f.numbers["method"] == "update_weights_from_tensor"
    assert [(e.file, e.line) for e in f.evidence][0] == ("train.log", 1)


@pytest.mark.parametrize("prefix,method", [("362-", "update_weights_from_ipc"), ("110-", "update_weight")])
def test_vllm_worker_update_frames_in_earlier_cases(prefix: str, method: str):
    f = top(triage_dir(extra_input(prefix)))
    assert (f.category, f.rule) == ("other", "health.weight-update-failed")
    assert f.numbers["method"] == method


def test_successful_updates_and_a_waiting_flush_are_not_failures(tmp_path: Path):
    text = (
        '(SGLangEngine pid=1493437) [2026-05-21 16:07:40] INFO:     7.150.10.22:41174 - "POST '
        '/update_weights_from_distributed HTTP/1.1" 200 OK\n'
        "[2026-06-27 23:11:20] Cache not flushed because there are pending requests. #queue-req: 0, #running-req: 7\n"
        "[2026-01-13 06:21:45 TP2] Cache flushed successfully!\n"
        "Succeeded to update parameter online.\n"
    )
    report = triage_files(tmp_path, {"sglang.log": text})
    assert "health.weight-update-failed" not in {f.rule for f in report.findings}


def test_a_ctrl_c_inside_a_weight_update_is_not_a_failed_update(tmp_path: Path):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py", line 159, in update_weights_from_tensor\n'
        "    success, message = self.model_runner.update_weights_from_tensor(\n"
        "KeyboardInterrupt\n"
    )
    report = triage_files(tmp_path, {"sglang.log": text})
    assert "health.weight-update-failed" not in {f.rule for f in report.findings}


@pytest.mark.parametrize("prefix,rule", [
    ("1980", "other.store-rendezvous-timeout"),
    ("1981", "other.store-rendezvous-timeout"),
    ("1982", "other.nccl-error"),
    ("1983", "other.monitored-barrier-failed"),
    ("1984", "other.engine-crash"),
    ("1985", "other.engine-start-failed"),
])
def test_blind_right_weight_sync_and_engine_cases(prefix: str, rule: str):
    f = top(triage_dir(extra_input(prefix)))
    assert (f.category, f.rule, f.severity) == ("other", rule, "error")


def test_mid_run_wait_for_input_is_explained_as_a_formed_connection():
    f = top(triage_dir(extra_input("1980")))
    assert [(e.file, e.line) for e in f.evidence] == [("trainer.log", 2)]
    assert f.numbers["ms"] == 300000
    assert "weight-sync group" in f.explain


def test_prime_rl_orchestrator_waiting_for_a_starting_server_is_info():
    report = triage_dir(extra_input("1986"))
    assert warnings_or_worse(report) == []
