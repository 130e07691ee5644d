"""Every real case of the development corpus (fixtures/real, copied from ../shared/corpus): the top finding's
rule, category, evidence file:line, the numbers it extracted, and a knob from the case's expected list. What
each case must give is data beside it: `top_finding:` in its expect.yaml (the corpus's own `evidence:` holds
texts, not places)."""

from __future__ import annotations

import pytest
import yaml
from conftest import REAL, top, triage_dir
from domain import SIX

from triage.model import SEVERITY_RANK

CASES = sorted(p.name for p in REAL.iterdir() if (p / "expect.yaml").is_file())


def _expect(case: str) -> dict:
    return yaml.safe_load((REAL / case / "expect.yaml").read_text())


# case -> its expect.yaml `top_finding:` (rule id, evidence ["file:line"], numbers {name: value})
EXPECTED = {case: exp["top_finding"] for case in CASES if "top_finding" in (exp := _expect(case))}


def test_every_case_has_an_expectation() -> None:
    healthy = {c for c in CASES if _expect(c)["category"] == "none"}
    assert set(CASES) - healthy == set(EXPECTED)
    assert all(set(e) <= {"rule", "evidence", "numbers"} and len(e["evidence"]) == 1 for e in EXPECTED.values())


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_top_finding(case: str) -> None:
    exp = _expect(case)
    report = triage_dir(REAL / case / "input")
    f = top(report)
    rule, (where,), numbers = exp["top_finding"]["rule"], exp["top_finding"]["evidence"], exp["top_finding"].get(
        "numbers", {})
    assert f.rule == rule
    if exp["category"] == "other":
        assert f.category not in SIX
    else:
        assert f.category == exp["category"]
    assert f"{f.evidence[0].file}:{f.evidence[0].line}" == where
    for key, value in numbers.items():
        assert f.numbers[key] == pytest.approx(value) if isinstance(value, float) else f.numbers[key] == value
    if exp["category"] in SIX:
        names = {k.name for k in f.knobs}
        assert names & set(exp["knobs"]), f"none of {sorted(names)} in {exp['knobs']}"
        texts = [e.text for e in f.evidence]
        assert any(s in t for s in exp["evidence"] for t in texts)


@pytest.mark.parametrize("case", [c for c in CASES if _expect(c)["category"] == "none"])
def test_healthy_runs_raise_nothing_in_the_six(case: str) -> None:
    report = triage_dir(REAL / case / "input")
    serious = [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert serious == []
