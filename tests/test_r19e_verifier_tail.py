"""Recognition round 19 (r19e): verifier timeouts in trial harnesses, graders that crash or never grade
(real-extra 1840-1846).

- Harbor / Terminal-Bench style harnesses name a grader that ran out of time by the exception alone
  (VerifierTimeoutError in a trial summary, in prose, in a CI summary, in exception.txt or a result JSON):
  verifier.trial-timeout, a warning however few (the trial has no reward at all) (1841, 1842; round 2 1846). Source
  text defining or catching the class is no run's log.
- A reward function scoring every batch the same value strictly between 0 and 1, in the train records and the
  trainer's eval records, while the total reward moves: verifier.reward-function-constant (1844: the
  open-r1-derived accuracy_reward's "neutral" 0.5 when the gold answer cannot be parsed). A function at 0 or 1, or
  one that varies once, is not flagged.
- Blind right, kept right: LiveCodeBench's execution "Time limit exceeded" (1840), a SymPy grader's traceback
  through grade_answer (1843), BenchFlow's "verifier timed out after 2400.0s" (1845).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files


def test_lcb_execution_timeout_is_the_verifier_timeout():
    f = top(triage_dir(extra_input("1840")))
    assert (f.category, f.rule) == ("verifier", "verifier.timeout-exception")
    assert [(e.file, e.line) for e in f.evidence] == [("ground_truth_judgement.log", 1)]
    assert knob_names(f)[0] == "verifier.timeout"


def test_harbor_trial_summaries_with_verifier_timeout():
    f = top(triage_dir(extra_input("1842")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.trial-timeout", "warning")
    assert [(e.file, e.line) for e in f.evidence][0] == ("trials.log", 2)
    assert f.count == 2
    assert knob_names(f)[0] == "verifier.timeout"


def test_verifier_timeout_error_named_in_prose():
    f = top(triage_dir(extra_input("1841")))
    assert (f.category, f.rule) == ("verifier", "verifier.trial-timeout")
    assert [(e.file, e.line) for e in f.evidence] == [("pier-run.log", 8)]


@pytest.mark.parametrize("line", [
    "VerifierTimeoutError: Verifier execution timed out after 360s",
    'exception.txt: harbor.trial.trial.VerifierTimeoutError: Verifier execution timed out after 1800.0 seconds',
    '{"exception_info": {"exception_type": "VerifierTimeoutError", "exception_message": "Verifier execution timed '
    'out after 600.0 seconds"}}',
    "task=torch-tensor-parallelism trial=3 reward=None exc=VerifierTimeoutError",
])
def test_other_verifier_timeout_error_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"job.log": line + "\n"}))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.trial-timeout", "warning")


def test_a_ci_summary_naming_one_verifier_timeout_beside_agent_timeouts():
    # round 2 (mux#1680): one VerifierTimeoutError failed the nightly job; before the harness rule became its own
    # warning, the info-level verifier.timeout finding lost to the unexplained "failed with:" line
    f = top(triage_dir(extra_input("1846")))
    assert (f.category, f.rule) == ("verifier", "verifier.trial-timeout")
    assert [(e.file, e.line) for e in f.evidence][0] == ("nightly-summary.md", 5)


def test_source_defining_the_class_is_not_a_timeout(tmp_path: Path):
    src = ("class VerifierError(RuntimeError):\n    pass\n\n\nclass VerifierTimeoutError(VerifierError):\n"
           '    """Raised when a verifier process exceeds its time limit."""\n')
    report = triage_files(tmp_path, {"errors.txt": src})
    assert all(f.rule not in ("verifier.timeout", "verifier.trial-timeout") for f in report.findings)


def test_harness_bench_benchflow_verifier_timeout():
    f = top(triage_dir(extra_input("1845")))
    assert (f.category, f.rule) == ("verifier", "verifier.timeout")
    assert ("rollout.log", 3) in [(e.file, e.line) for e in f.evidence]


def test_grader_crash_in_grade_answer_is_the_verifier():
    f = top(triage_dir(extra_input("1843")))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert [(e.file, e.line) for e in f.evidence] == [("evaluate_math500.log", 13)]
    assert knob_names(f)[0] == "verifier.reward_function"


def test_accuracy_reward_pinned_at_neutral_half():
    f = top(triage_dir(extra_input("1844")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.reward-function-constant", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 2), ("train.log", 3), ("train.log", 1)]
    assert (f.numbers["reward_function"], f.numbers["value"], f.numbers["records"]) == ("accuracy_reward", 0.5, 3)
    assert knob_names(f) == ["verifier.reward_function"]


def _trl(acc: float, fmt: float, total: float) -> str:
    return (f"{{'loss': 0.001, 'grad_norm': 1.5, 'rewards/accuracy_reward/mean': {acc}, "
            f"'rewards/format_reward/mean': {fmt}, 'reward': {total}, 'reward_std': 0.2, 'epoch': 0.1}}\n")


def test_constant_function_in_newer_trl_keys(tmp_path: Path):
    log = _trl(0.25, 0.1, 0.35) + _trl(0.25, 0.3, 0.55) + _trl(0.25, 0.6, 0.85)
    f = top(triage_files(tmp_path, {"train.log": log}))
    assert (f.rule, f.numbers["reward_function"], f.numbers["records"]) == (
        "verifier.reward-function-constant", "accuracy_reward", 3)


@pytest.mark.parametrize("values", [
    (1.0, 1.0, 1.0),  # pinned at a bound: a learned format or an easy task
    (0.0, 0.0, 0.0),  # a hard task while the format reward moves
    (0.5, 0.5, 0.625),  # one batch differs: the function reads the completions
])
def test_bounds_and_moving_functions_are_not_flagged(tmp_path: Path, values: tuple[float, float, float]):
    log = "".join(_trl(a, f, 0.3 + i / 10) for i, (a, f) in enumerate(zip(values, (0.1, 0.2, 0.3))))
    report = triage_files(tmp_path, {"train.log": log})
    assert all(f.rule != "verifier.reward-function-constant" for f in report.findings)


def test_two_records_are_not_enough(tmp_path: Path):
    report = triage_files(tmp_path, {"train.log": _trl(0.5, 0.1, 0.6) + _trl(0.5, 0.2, 0.7)})
    assert all(f.rule != "verifier.reward-function-constant" for f in report.findings)


@pytest.mark.parametrize("line", [
    "Warning: Failed to parse gold solution: The answer is nine",
    "Warning: Gold solution is None: None",
])
def test_gold_answers_the_grader_cannot_read(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.gold-unparseable")
