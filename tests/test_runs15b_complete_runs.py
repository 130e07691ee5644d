"""Complete public run logs, round 2 (real-extra 1380-1388): whole verl OPD console logs, SGLang Ascend nightly
performance logs and a TRL GRPO log with its vllm-serve server, read as a whole.

Two mechanisms are tested on their own inputs besides the cases: cap hits on a minority of records of a run whose
ratio moves in steps of 1/N for a handful of completions are information when the pooled share stays under the
threshold (and stay a warning for a large batch), and vLLM's 'Auto-initialization of reasoning token IDs failed'
start-up line is information."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, triage_dir, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"


def _case(number: str) -> Path:
    (found,) = [p for p in EXTRA.iterdir() if p.name.startswith(f"{number}-")]
    return found / "input"


def _warnings_in_six(report) -> list:  # type: ignore[no-untyped-def]
    return [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]


@pytest.mark.parametrize(("number", "line", "slowest", "count"), [
    ("1385", 208, 8096.0, 10),  # 4% of responses at the cap on every step
])
def test_verl_opd_steps_wait_on_their_longest_generation(number: str, line: int, slowest: float, count: int) -> None:
    report = triage_dir(_case(number))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("gen.slowest-sample-tail", "generation-tail", "warning")
    assert (top.evidence[0].file, top.evidence[0].line) == ("output.log", line)
    assert top.numbers["slowest_response_length"] == top.numbers["max_response_length"] == slowest
    assert top.numbers["slowest_seconds"] >= 1.8 * top.numbers["mean_seconds"]
    assert top.count == count
    assert "inference.max_response_length" in {k.name for k in top.knobs}
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


@pytest.mark.parametrize("number", ["1380", "1381", "1382", "1383", "1384"])
def test_verl_opd_runs_with_almost_no_capped_responses_have_only_the_ordinary_batch_tail(number: str) -> None:
    # clip_ratio averages 0.1-1% over the run (gen.slowest-sample-tail's min_clip_ratio 1.5%): the slowest sample
    # being the step's longest response is the normal shape of a batch, not a tail that holds the rollout
    report = triage_dir(_case(number))
    assert "gen.slowest-sample-tail" not in {f.rule for f in report.findings}
    assert not _warnings_in_six(report)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_grpo_cap_hits_of_one_or_two_of_four_completions_on_two_of_five_steps_are_information() -> None:
    report = triage_dir(_case("1388"))
    (cap,) = [f for f in report.findings if f.rule == "gen.cap-hit-rate"]
    assert cap.severity == "info"
    assert [(e.file, e.line) for e in cap.evidence] == [("train_GRPO.log", 122), ("train_GRPO.log", 124)]
    assert (cap.numbers["records"], cap.numbers["pooled_share"], cap.numbers["ratio_step"]) == (5, 0.15, "1/4")
    assert (cap.numbers["max"], cap.numbers["steps_over"]) == (0.5, 2)
    assert not _warnings_in_six(report)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def _trl_rows(ratios: list[float]) -> str:
    return "\n".join(
        f"{{'loss': 0.0, 'grad_norm': 0.2, 'completions/mean_length': 900.0, 'completions/max_length': 1846.0, "
        f"'completions/clipped_ratio': {r}, 'reward': 0.1, 'epoch': 0.{i}}}" for i, r in enumerate(ratios)) + "\n"


@pytest.mark.parametrize(("ratios", "severity"), [
    ([0.0, 0.0, 0.5, 0.0, 0.25], "info"),           # 4 completions a step: 3 of 20 capped, 15% pooled
    ([0.0, 0.0, 0.5, 0.0, 0.25, 0.0, 0.0], "info"),
    ([0.0, 0.0, 0.3125, 0.0, 0.2578], "warning"),   # a large batch: 80 and 66 of 256 capped are many responses
    ([0.5, 0.25, 0.5, 0.0, 0.25], "warning"),       # over the threshold on most steps
    ([0.0, 0.5, 0.25], "warning"),                  # too few records to pool
])
def test_cap_hits_are_pooled_only_for_a_handful_of_completions_on_a_minority_of_steps(
        tmp_path: Path, ratios: list[float], severity: str) -> None:
    report = triage_files(tmp_path, {"train.log": _trl_rows(ratios)})
    (cap,) = [f for f in report.findings if f.rule == "gen.cap-hit-rate"]
    assert cap.severity == severity


@pytest.mark.parametrize("number", ["1386", "1387"])
def test_ascend_nightly_perf_runs_that_passed_raise_nothing(number: str) -> None:
    report = triage_dir(_case(number))
    assert not _warnings_in_six(report)
    assert all(SEVERITY_RANK[f.severity] > SEVERITY_RANK["warning"] for f in report.findings)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_a_reasoning_parser_without_delimiters_is_information(tmp_path: Path) -> None:
    """vLLM (config/vllm.py) prints it when the parser exposes no reasoning_start_str/reasoning_end_str: gpt-oss's
    token-id parser and DeepSeek V3's per-request parser do so on healthy servers."""
    line = ("(APIServer pid=1) WARNING 06-21 07:16:53 [vllm.py:1396] Auto-initialization of reasoning token IDs "
            "failed. Please check whether your reasoning parser has implemented the `reasoning_start_str` and "
            "`reasoning_end_str`.\n")
    report = triage_files(tmp_path, {"vllm.log": line})
    (f,) = [f for f in report.findings if f.rule == "other.reasoning-parser-no-delimiters"]
    assert (f.severity, f.evidence[0].line) == ("info", 1)
    assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]


@pytest.mark.parametrize(("number", "lineno", "line"), [
    ("1394", 1783, "AssertionError: 14.65 not less than or equal to 8"),
    ("1395", 534, "AssertionError: 445.51 not greater than or equal to 496.3225806451613"),
])
def test_a_nightly_threshold_failure_is_its_assertion_and_unittests_heading_is_not_unexplained(
        number: str, lineno: int, line: str) -> None:
    report = triage_dir(_case(number))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("other.fatal-exit", "other", "error")
    assert (top.evidence[-1].line, top.evidence[-1].text) == (lineno, line)
    assert not [f for f in report.findings if f.category == "unclassified"]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


@pytest.mark.parametrize(("heading", "unexplained"), [
    ("ERROR: test_qwen3_32b (__main__.TestQwen3_32B.test_qwen3_32b)", False),   # Python 3.11+
    ("FAIL: test_accuracy (test_gsm8k.TestGSM8K)", False),                       # Python <= 3.10
    ("ERROR [0.412s]: test_throughput (__main__.TestPerf.test_throughput)", False),  # xmlrunner
    ("ERROR: the rollout worker lost its engine (rank 3)", True),
])
def test_unittests_summary_heading_titles_the_traceback_under_it(
        tmp_path: Path, heading: str, unexplained: bool) -> None:
    text = ("=" * 70 + "\n" + heading + "\n" + "-" * 70 + "\n" + "Traceback (most recent call last):\n"
            '  File "/w/test_perf.py", line 12, in test_throughput\n    self.assertGreaterEqual(a, b)\n'
            "AssertionError: 96.76 not greater than or equal to 108.9\n\n" + "-" * 70 + "\nRan 1 test in 361.556s\n\n"
            "FAILED (errors=1)\n")
    report = triage_files(tmp_path, {"test.log": text})
    assert report.findings[0].evidence[-1].text == "AssertionError: 96.76 not greater than or equal to 108.9"
    assert bool([f for f in report.findings if f.category == "unclassified"]) is unexplained
