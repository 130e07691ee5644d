"""Recognition round 17 (r17a): complete public run logs, blind first (real-extra 1600-1610, 10/11 blind).

- A verl agent-loop GRPO run that finished its six steps (VedioSifter train_run log, 2026-04) was warned of a
  generation tail and reported as a port clash:
  * gen.slowest-sample-tail fired on 1-5 capped answers in 128-response batches (0-3.9% a step, 1.95% on average):
    the check now also needs one step with at least 5% of the responses at the cap (`min_peak_clip_ratio`);
  * NCCL 2.24+'s RAS thread prints "ras/client_support.cc:<n> NCCL WARN Call to bind failed: Address already in use"
    in every process after the first on a node (its fixed client port, localhost:28028) and goes on: information
    (other.nccl-ras-client-port), no longer other.port-in-use nor other.nccl-error;
  * torch's "DataLoader worker (pid N) is killed by signal: Killed. " (with its trailing space, as torch prints it)
    went unexplained: other.dataloader-worker-killed now matches torch's own wording, and is information when the
    file went on recording steps after it (new rule field `if_went_on`): here the workers died with the job.
- The samples verl's SFT dataset prints when it cannot render them ("{'content': ..., 'role': 'assistant'}") held
  "Verification failed" and raised a verifier warning: a line that starts with a chat message is data
  (vocabulary.reward-path-error, real-extra 1603).
- Blind right, kept right: TRL GRPO sweeps whose every completion runs to the 512-token cap (1604, 1605) are a
  generation tail; TRL/accelerate's fp32 upcast of the logits in the log-prob pass is a trainer OOM (1608, 1609);
  healthy runs (1602, 1606, 1607, 1610) raise nothing in the six.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

from triage.library.rules import Rule, load_library
from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit


def _rule(rid: str) -> Rule:
    rule = load_library().rule(rid)
    assert rule is not None
    return rule


def _six_warnings(report) -> list[str]:  # type: ignore[no-untyped-def]
    return [f.rule for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


# --- real-extra 1600: a verl run that finished, its teardown and its NCCL noise ---------------------------------

def test_a_finished_verl_run_with_a_few_capped_answers_is_not_a_generation_tail():
    report = triage_dir(extra_input("1600"))
    assert not _six_warnings(report)
    assert "gen.slowest-sample-tail" not in {f.rule for f in report.findings}
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_the_dataloader_workers_killed_after_the_last_step_are_information():
    report = triage_dir(extra_input("1600"))
    (f,) = [f for f in report.findings if f.rule == "other.dataloader-worker-killed"]
    assert f.severity == "info"
    assert [(e.file, e.line) for e in f.evidence] == [("train_run_20260421_065709.log", 2326)]
    assert f.numbers["signal"] == "Killed"
    assert "did not stop" in f.numbers["went_on"]
    assert not [u for u in report.findings if u.rule == "unclassified" and "DataLoader" in u.title]


def test_nccls_ras_port_taken_by_a_sibling_process_is_information():
    report = triage_dir(extra_input("1600"))
    rules = {f.rule for f in report.findings}
    assert "other.port-in-use" not in rules and "other.nccl-error" not in rules
    (f,) = [f for f in report.findings if f.rule == "other.nccl-ras-client-port"]
    assert f.severity == "info" and f.count == 2
    assert [(e.file, e.line) for e in f.evidence] == [("train_run_20260421_065709.log", 794),
                                                       ("train_run_20260421_065709.log", 819)]


@pytest.mark.parametrize("line", [
    "[2026-04-21 06:57:46] ZjuServer145:529525:535668 [0] ras/client_support.cc:160 NCCL WARN Call to bind failed: "
    "Address already in use",
    "[2025-08-22 17:44:36] A800:6801:6839 [1] ras/client_support.cc:159 NCCL WARN Call to bind failed: Address already "
    "in use",
    "ubuntu2:321049:321049 [0] ras/client_support.cc:181 NCCL WARN Call to bind failed: Address already in use",
])
def test_every_version_of_the_ras_bind_line_is_the_ras_rule_alone(line: str):
    assert _rule("other.nccl-ras-client-port").search(line)
    assert not _rule("other.port-in-use").search(line)
    assert not _rule("other.nccl-error").search(line)


@pytest.mark.parametrize("line, rule", [
    # a launch port in use and NCCL's own socket failures keep their rules
    ("RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, "
     "code: -98, name: EADDRINUSE, message: address already in use.", "other.port-in-use"),
    ("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
     "other.port-in-use"),
    ("node1:412:530 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43211> failed : Software "
     "caused connection abort", "other.nccl-error"),
])
def test_other_bind_and_nccl_failures_keep_their_rules(line: str, rule: str):
    assert _rule(rule).search(line)
    assert not _rule("other.nccl-ras-client-port").search(line)


# --- torch's DataLoader worker message, as torch prints it ------------------------------------------------------

@pytest.mark.parametrize("line, signal", [
    ("(TaskRunner pid=525716) RuntimeError: DataLoader worker (pid 563735) is killed by signal: Killed. ", "Killed"),
    ("RuntimeError: DataLoader worker (pid 6303) is killed by signal: Aborted. ", "Aborted"),
    ("RuntimeError: DataLoader worker (pid 2204) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit.", "Bus error"),
    ("RuntimeError: DataLoader worker (pid 83641) is killed by signal: Unknown signal: 0", "Unknown signal: 0"),
    ("RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.", "Killed"),
])
def test_torchs_dataloader_wording_names_the_signal(line: str, signal: str):
    m = _rule("other.dataloader-worker-killed").search(line)
    assert m is not None and m.group("signal") == signal


STEP = ("step:{n} - actor/entropy:0.25 - response_length/mean:668.0 - response_length/max:2048.0 - "
        "response_length/clip_ratio:0.0 - timing_s/gen:58.0 - timing_s/step:178.5\n")
KILLED = ("Traceback (most recent call last):\n"
          '  File "/usr/lib/python3.11/site-packages/torch/utils/data/_utils/signal_handling.py", line 73, in handler\n'
          "    _error_if_any_worker_fails()\n"
          "RuntimeError: DataLoader worker (pid 563735) is killed by signal: Killed. \n")


def test_a_worker_killed_before_more_steps_is_information(tmp_path: Path):
    text = STEP.format(n=1) + KILLED + STEP.format(n=2) + STEP.format(n=3)
    (f,) = [f for f in triage_files(tmp_path, {"train.log": text}).findings
            if f.rule == "other.dataloader-worker-killed"]
    assert f.severity == "info"


def test_a_worker_killed_at_the_end_of_the_log_still_ends_the_run(tmp_path: Path):
    text = STEP.format(n=1) + STEP.format(n=2) + KILLED
    report = triage_files(tmp_path, {"train.log": text})
    f = top(report)
    assert (f.rule, f.severity) == ("other.dataloader-worker-killed", "error")
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


# --- gen.slowest-sample-tail: one step must put one response in twenty at the cap -------------------------------

TAIL_STEP = ("step:{n} - response_length/mean:668.5 - response_length/max:2048.0 - response_length/clip_ratio:{clip} - "
             "timing_s/agent_loop/generate_sequences/max:57.4 - timing_s/agent_loop/generate_sequences/mean:26.3 - "
             "timing_s/agent_loop/slowest/response_length:2048 - timing_s/gen:58.0 - timing_s/step:178.5\n")


@pytest.mark.parametrize("clips, fires", [
    ((0.03125, 0.0078125, 0.0234375, 0.015625, 0.0390625, 0.0), False),  # real-extra 1600: 1.95% average, 3.9% peak
    ((0.03125, 0.0078125, 0.0234375, 0.015625, 0.0625, 0.0), True),  # one step with 6.25% at the cap
    ((0.0, 0.0, 0.0, 0.0, 0.0625, 0.0), False),  # a peak, but 1% on average (min_clip_ratio)
])
def test_the_slowest_sample_tail_needs_a_step_with_one_answer_in_twenty_at_the_cap(tmp_path: Path, clips, fires):
    text = "".join(TAIL_STEP.format(n=i + 1, clip=c) for i, c in enumerate(clips))
    rules = {f.rule for f in triage_files(tmp_path, {"output.log": text}).findings}
    assert ("gen.slowest-sample-tail" in rules) is fires


# --- blind right, kept right -------------------------------------------------------------------------------------

@pytest.mark.parametrize("number, file, records", [
    ("1604", "rho1.00_seed43.log", 36),  # entropy 0.15 -> 7: text that never ends
    ("1605", "adabalance_seed42.log", 25),  # entropy flat at 0.1: a loop
])
def test_trl_sweeps_whose_completions_all_run_to_the_cap_are_a_generation_tail(number: str, file: str, records: int):
    report = triage_dir(extra_input(number))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.cap-hit-rate", "warning")
    assert f.evidence[0].file == file and "'completions/clipped_ratio': 1.0" in f.evidence[0].text
    assert (f.numbers["max"], f.numbers["response_cap"], f.count) == (1.0, 512.0, records)
    assert "inference.max_response_length" in knob_names(f)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


@pytest.mark.parametrize("number, file, line, tried, gpu", [
    ("1608", "w6_G3_rho1.00_seed44.log", 75, 2.82, 0),  # the reference log-probs' fp32 upcast, step 14
    ("1609", "grpo_v2.log", 115, 6.68, 3),  # TRL's _get_per_token_logps under torchrun, rank 3, first step
])
def test_the_log_prob_passes_fp32_logits_oom_is_the_trainers(number: str, file: str, line: int, tried: float, gpu: int):
    report = triage_dir(extra_input(number))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("trainer-oom", "trainer.cuda-oom", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert (f.numbers["tried"], f.numbers["gpu"]) == (tried, gpu)
    assert {"trainer.micro_batch_size", "miles.log_probs_chunk_size"} <= set(knob_names(f))
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_an_engine_that_died_hours_after_its_scorer_succeeded_is_no_serving_oom():
    report = triage_dir(extra_input("1601"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.engine-crash")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm_server.log", 173)
    assert not _six_warnings(report)


def test_an_sft_tokenizer_without_a_chat_template_is_other():
    report = triage_dir(extra_input("1603"))
    f = top(report)
    assert (f.category, f.rule, f.count) == ("other", "other.chat-template-error", 51)
    assert (f.evidence[0].file, f.evidence[0].line) == ("fsdp_sft_trainer.log", 1)
    # the samples it printed hold "let me verify" and a tool's "Verification failed": data, not the reward path
    assert not _six_warnings(report)
    assert "vocabulary.reward-path-error" not in {x.rule for x in report.findings}


@pytest.mark.parametrize("line", [
    " {'content': 'Wait, let me verify:\\nassert lhs == rhs, f\"Verification failed for n={n}\"', 'role': 'assistant'}",
    "Messages: [{'content': 'Compute the reward of ...', 'role': 'user'}",
    ' {"role": "tool", "content": "Verification failed: grader says 0"}',
])
def test_a_chat_message_printed_as_data_is_not_the_reward_path(line: str):
    assert not _rule("vocabulary.reward-path-error").search(line)


def test_a_reward_error_line_that_quotes_messages_is_still_the_reward_path():
    line = "ERROR: judge request failed for [{'content': 'q', 'role': 'user'}]: 429 Too Many Requests"
    assert _rule("vocabulary.reward-path-error").search(line)


@pytest.mark.parametrize("number", ["1602", "1606", "1607", "1610"])
def test_healthy_complete_runs_raise_nothing_in_the_six(number: str):
    report = triage_dir(extra_input(number))
    assert not _six_warnings(report)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0
