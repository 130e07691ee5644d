"""Recognition round 23 (r23j): reward and verifier paths inside RL frameworks (real-extra 2415-2423).

- An LLM judge whose reply cannot be used as rewards is the verifier's: OpenPipe ART's RULER printing an empty
  score list and swallowing the assertion that follows ("Swallowed exception: ", then "(no training occurred)", 2419)
  is verifier.judge-reply-swallowed, read only after the judge's own reply header (or its JSON parse error); the
  judges' explicit parse failures (TRL's "Invalid response from the judge model: '...'. Returning -1.", RULER's
  "Could not parse choice content as JSON", a fork's "Failed to parse/validate judge response") are
  verifier.judge-reply-unparseable.
- A bare "Swallowed exception:" with no judge reply before it is nothing.
- Healthy runs with alarming reward-path lines stay clean: verl's driver repeating sympy's "ANTLR runtime and
  generated code versions disagree" (2415) and ROLL's rule reward workers' "worker has not strategy" / "Current
  platform cpu does not have 'empty_cache' attribute." (2416).
- verl's default reward dispatcher with an empty data_source (AReaL's verl benchmark, the line quoted in prose, 2422)
  stays verifier.reward-not-implemented with its knob.
- RL Swarm's ragged reward tensor ("expected sequence of length 2 at dim 1", three versions: 2417, 2418, 2421) is a
  framework crash outside the six (other.fatal-exit on the ValueError line), not a verifier failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

# -- the judge answered, but its reply could not become rewards --------------------------------------------------------


def test_ruler_empty_scores_swallowed_is_the_judges() -> None:
    report = triage_dir(extra_input("2419"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.judge-reply-swallowed", "warning")
    assert [(e.file, e.line) for e in f.evidence][:2] == [("train.log", 3), ("train.log", 10)]
    assert "Swallowed exception" in f.evidence[0].text
    assert knob_names(f) == ["verifier.reward_function"]


def test_swallowed_exception_without_a_judge_reply_is_nothing(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": "Swallowed exception: boom\nstep 3 done\n"})
    assert "verifier.judge-reply-swallowed" not in by_rule(report)


def test_ruler_parse_error_before_a_swallowed_exception(tmp_path: Path) -> None:
    log = ("[RULER] Could not parse choice content as JSON: Expecting value: line 1 column 1 (char 0)\n"
           "[RULER] Raw choice content: I think trajectory 2 is best\n"
           " Swallowed exception: \n")
    report = triage_files(tmp_path, {"train.log": log})
    rules = by_rule(report)
    assert rules["verifier.judge-reply-unparseable"].evidence[0].line == 1
    assert rules["verifier.judge-reply-swallowed"].evidence[0].line == 3
    assert top(report).category == "verifier"


@pytest.mark.parametrize("line, group, value", [
    ("Invalid response from the judge model: 'The first response is better.'. Returning -1.", "reply",
     "The first response is better."),
    ("ValueError: Failed to parse/validate judge response: 1 validation error for Response", "why",
     "1 validation error for Response"),
])
def test_judge_reply_wordings(tmp_path: Path, line: str, group: str, value: str) -> None:
    report = triage_files(tmp_path, {"train.log": line + "\n"})
    f = by_rule(report)["verifier.judge-reply-unparseable"]
    assert f.category == "verifier"
    assert f.numbers[group] == value


# -- healthy runs with alarming reward-path lines -------------------------------------------------------------------


@pytest.mark.parametrize("case", ["2415", "2416"])
def test_reward_path_noise_is_no_finding(case: str) -> None:
    report = triage_dir(extra_input(case))
    assert not [f for f in report.findings if f.category in SIX]
    assert not [f for f in report.findings if f.severity in ("warning", "error", "critical")]


# -- a framework's ragged reward tensor is its own crash ----------------------------------------------------------


@pytest.mark.parametrize("case, line, got", [("2417", 14, "4"), ("2418", 11, "1"), ("2421", 11, "1")])
def test_rl_swarm_ragged_reward_tensor_is_other(case: str, line: int, got: str) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    ev = {(e.file, e.line): e.text for e in f.evidence}
    assert ev[("swarm.log", line)].endswith(f"expected sequence of length 2 at dim 1 (got {got})")
    assert not [g for g in report.findings if g.category in SIX]


# -- a reward function with no scorer for the data source -----------------------------------------------------------


def test_empty_data_source_in_quotes_is_reward_not_implemented() -> None:
    f = top(triage_dir(extra_input("2422")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.reward-not-implemented", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert knob_names(f)[0] == "verifier.reward_function"
