"""Whole public run logs (real-extra 910-918): ranking and noise over thousands of lines.

- A traceback is its own context: a trainer's exception whose frames never touch reward code is not a reward-function
  failure because the step rows printed above it hold a metric key `rewards/reward_fn` (911, TRL).
- torch elastic's report of the failed children (the agent's "failed (exitcode: -6) local_rank" line, the
  ChildFailedError table rows, the ChildFailedError line itself) and ProcessGroupNCCL's "Some NCCL operations have
  failed or timed out" after a watchdog timeout are the watchdog's consequences, not unexplained lines (914).
- The exceptions chained into a process's fatal one ("The above exception was the direct cause ...") are that one
  failure, not unexplained lines of their own (918).
- A start that was only slow is the root of the symptoms whose rules name cold-start, not of `any` failure: HTTP
  errors an engine answered after serving for half an hour are not evidence of its slow load; and once its engine
  said it was ready and served, a slow load read off the engine's own lines is information, as the startup checks
  judge it (921).
- Healthy complete runs (verl on Ray over two nodes, TRL, a vLLM-backed agent, vLLM servers started, used and
  stopped) end with information only (910, 912, 916, 919, 920); so does a vLLM server whose only shutdown marker is
  "[shutdown] API server: shutdown triggered" (365), and a torch_npu `[W...] Warning:` glued to the tqdm bar it
  interrupted is still a warning its program printed (608).
"""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, top, triage_dir, warnings_or_worse
from conftest import extra_input as case

from triage.model import Line
from triage.parsers.signals import is_warning_level
from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"






def test_a_trainer_exception_after_reward_metric_rows_is_the_process_end_not_a_reward_failure() -> None:
    report = triage_dir(case("911-"))
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("other.fatal-exit", "other", "error")
    assert (f.evidence[-1].file, f.evidence[-1].line) == ("gate2_rho0.70_seed44.log", 255)
    assert f.evidence[-1].text == "TypeError: Object of type bool_ is not JSON serializable"
    assert "verifier.reward-exception" not in by_rule(report)
    assert warnings_or_worse(report) == ["other.fatal-exit"]


def test_a_reward_function_traceback_is_still_a_reward_failure(tmp_path: Path) -> None:
    """The frames decide: a traceback through a reward function ends in verifier.reward-exception."""
    log = tmp_path / "train.log"
    log.write_text(
        "{'loss': '0.03', 'rewards/reward_fn': '0.25', 'reward': '0.25'}\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 40, in <module>\n'
        "    trainer.train()\n"
        '  File "/app/rewards.py", line 12, in reward_fn\n'
        "    return float(answer[\"value\"])\n"
        "KeyError: 'value'\n"
    )
    assert top(triage_dir(tmp_path)).rule == "verifier.reward-exception"


def test_torch_elastic_and_nccl_teardown_lines_fold_under_the_watchdog_timeout() -> None:
    report = triage_dir(case("914-"))
    f = top(report)
    assert f.rule == "other.nccl-watchdog-timeout"
    assert (f.evidence[0].file, f.evidence[0].line) == ("2gpu_pipeline.log", 166)
    assert f.numbers.get("op") == "_ALLGATHER_BASE" and f.numbers.get("timeout_ms") == 600000
    assert warnings_or_worse(report) == ["other.nccl-watchdog-timeout"]
    assert "unclassified" not in by_rule(report)


def test_exceptions_chained_into_the_fatal_one_are_not_unexplained() -> None:
    report = triage_dir(case("918-"))
    f = top(report)
    assert f.rule == "other.hub-unreachable"  # named since r15c (was the generic other.fatal-exit)
    assert f.evidence[-1].line == 73
    assert f.evidence[-1].text.startswith("OSError: We couldn't connect to 'https://huggingface.co'")
    assert [x.rule for x in report.findings] == ["other.hub-unreachable"]


def test_training_step_ooms_name_the_micro_batch_and_log_prob_knobs() -> None:
    for prefix, line, size in (("913-", 75, "2.82 GiB"), ("917-", None, "12.00 MiB")):
        f = top(triage_dir(case(prefix)))
        assert (f.rule, f.category) == ("trainer.cuda-oom", "trainer-oom")
        assert f"Tried to allocate {size}" in f.evidence[0].text
        if line is not None:
            assert f.evidence[0].line == line
        assert {"trainer.micro_batch_size", "miles.log_probs_chunk_size"} <= set(knob_names(f))


def test_vllm_preemptions_in_a_finished_generation_warn_and_name_the_memory_share() -> None:
    report = triage_dir(case("915-"))
    f = top(report)
    assert (f.rule, f.severity, f.count) == ("serving.vllm-preemption", "warning", 2)
    assert [e.line for e in f.evidence] == [52, 71]
    assert "inference.sglang_mem_fraction_static" in knob_names(f)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_healthy_complete_runs_end_with_information_only() -> None:
    for prefix in ("910-", "912-", "916-", "919-", "920-", "922-", "365-", "608-"):
        report = triage_dir(case(prefix))
        assert warnings_or_worse(report) == [], prefix
        assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_a_slow_start_that_served_is_information_and_absorbs_no_later_http_errors() -> None:
    report = triage_dir(case("921-"))
    f = by_rule(report)["cold.slow-weight-loading"]
    assert (f.severity, f.numbers.get("served_after_ready")) == ("info", True)
    assert [(e.file, e.line) for e in f.evidence] == [("vllm.log", 55), ("vllm.log", 90)]
    assert "symptoms" not in f.numbers
    assert not [x for x in report.findings if x.category == "cold-start" and x.severity != "info"]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_a_slow_load_that_never_served_still_warns() -> None:
    f = top(triage_dir(EXTRA / "016-sglang-deepseek-r1-bf16-32min-shard-loading" / "input"))
    assert (f.rule, f.severity) == ("cold.slow-weight-loading", "warning")


def test_a_failure_in_trls_reward_dispatch_is_a_reward_failure(tmp_path: Path) -> None:
    """TRL's GRPOTrainer._calculate_rewards gathers each reward function's columns and calls it: a KeyError there
    (a column the reward function wants that the batch lacks; the frame and message as a project's notes quote
    them, trl 0.2x) is the reward path's, whatever the user named the function."""
    (tmp_path / "train.log").write_text(
        "{'loss': 0.01, 'grad_norm': 0.2, 'rewards/check_answer/mean': 0.5, 'reward': 0.5, 'epoch': 0.1}\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train_grpo.py", line 88, in <module>\n'
        "    trainer.train()\n"
        '  File "/opt/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1186, in _calculate_rewards\n'
        "    reward_kwargs = {key: [example[key] for example in inputs] for key in keys}\n"
        "KeyError: 'inspect_scores'\n"
    )
    f = top(triage_dir(tmp_path))
    assert (f.rule, f.evidence[-1].text) == ("verifier.reward-exception", "KeyError: 'inspect_scores'")


def test_a_warning_glued_to_a_progress_bar_is_still_a_warning() -> None:
    bar = "Capturing batches (bs=36 avail_mem=17.38 GB):   0%|          | 0/6 [00:00<?, ?it/s]"
    warned = bar + ("[rank6]:[W1217 01:28:11.167051451 compiler_depend.ts:83] Warning: [Check][offset] Check input "
                    "storage_offset[%ld] = 0 failed, result is untrustworthy (function operator())")
    failed = bar + "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"
    assert is_warning_level(Line("sglang.log", 730, warned, warned))
    assert not is_warning_level(Line("sglang.log", 731, failed, failed))
