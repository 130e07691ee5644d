"""Round 7: a policy that collapsed early onto one-token answers is a collapse, not a response tail (real-extra 714:
verl ReTool on Qwen3-4B, ~1,760-token responses for a few steps, then one token for 250 steps with
critic/score/mean -1.0 and entropy near zero); the response-cap findings of real runs whose responses do reach
their cap are unchanged (710: TRL GRPO at 256 tokens, 709: verl at 8,096)."""

from __future__ import annotations

from conftest import FIXTURES, by_rule, triage_dir

from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"
COLLAPSE = EXTRA / "714-verl-retool-qwen3-4b-responses-collapse-to-one-token" / "input"


def test_an_early_collapse_that_lasts_is_found_and_leads() -> None:
    report = triage_dir(COLLAPSE)
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("health.policy-collapse", "other", "warning")
    assert [(e.file, e.line) for e in top.evidence] == [("files/output.log", 619), ("files/output.log", 630)]
    assert "response_length/mean 1751.03 -> 1" in top.numbers["arithmetic"]
    assert top.numbers["reward"] == -1.0
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_one_token_responses_are_not_responses_at_the_cap() -> None:
    """The step's longest response (1 token) is no cap when the run's responses reached 8,096."""
    assert "gen.mean-length-at-cap" not in by_rule(triage_dir(COLLAPSE))


def test_responses_that_reach_the_runs_longest_are_still_at_the_cap() -> None:
    trl = by_rule(triage_dir(EXTRA / "710-trl-grpo-vlm-qwen25vl-completions-clipped-at-256" / "input"))
    assert trl["gen.mean-length-at-cap"].numbers["response_cap"] == 256.0
    assert trl["gen.cap-hit-rate"].severity == "warning"
    verl = triage_dir(EXTRA / "709-verl-retool-qwen25-3b-response-length-growth-cap-hits" / "input").findings
    assert verl[0].rule == "gen.cap-hit-rate"
