"""Recognition round 20 (r20e): complete public run logs from sources round 20a did not use (real-extra 1960-1961).

- A vLLM 0.10.2 V0-engine server (MiniCPM-V-4.5, tensor parallel 2) that answered its requests and was stopped an
  hour later: the V0 engine's signal handler raises KeyboardInterrupt("MQLLMEngine terminated") inside a
  SpawnProcess traceback while the launcher warns that its port is still held. That is the operator's stop, not a
  crash: no warning or error, and the traceback alone reads as an orderly shutdown (1960).
- A hand-written GRPO trainer's finished 200 steps with loss=0.000000 on every step and mostly zero reward, then its
  vLLM evaluation: a weak model, not a failed run; no finding at all (1961).
Both were right blind (2/2); nothing in the library changed for them.
"""

from __future__ import annotations

from pathlib import Path

from conftest import extra_input, triage_dir, triage_files, warnings_or_worse


def test_v0_server_stopped_after_serving_has_no_warning():
    report = triage_dir(extra_input("1960"))
    assert warnings_or_worse(report) == []
    rules = [f.rule for f in report.findings]
    assert "cold.startup-phases" in rules
    # the teardown traceback is not reported as an unexplained error
    assert not any("MQLLMEngine" in e.text for f in report.findings for e in f.evidence if f.rule == "unclassified")


def test_mqllmengine_terminated_traceback_reads_as_the_stop(tmp_path: Path):
    text = (extra_input("1960") / "vllm.log").read_text(encoding="utf-8")
    tail = text[text.index("INFO 05-10 16:27:55 [multiproc_worker_utils.py:133]"):]
    report = triage_files(tmp_path, {"vllm.log": tail})
    assert warnings_or_worse(report) == []
    f = report.findings[0]
    assert (f.category, f.rule, f.severity) == ("other", "other.orderly-shutdown", "info")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm.log", 22)]
    assert "MQLLMEngine terminated" in f.evidence[0].text


def test_finished_grpo_with_zero_loss_and_low_reward_is_quiet():
    report = triage_dir(extra_input("1961"))
    assert report.findings == []
