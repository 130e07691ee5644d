"""Real excerpts of failure families the corpus lacks (fixtures/lines, sources in its SOURCES.md): the top
finding's rule, evidence line and extracted numbers, as fixtures/lines/expect.yaml gives them."""

from __future__ import annotations

import pytest
import yaml
from conftest import FIXTURES, top, triage_dir

LINES = FIXTURES / "lines"

# excerpt -> {rule, evidence: ["file:line"], numbers}: fixtures/lines/expect.yaml
EXPECTED = yaml.safe_load((LINES / "expect.yaml").read_text(encoding="utf-8"))


def test_every_excerpt_has_an_expectation() -> None:
    assert sorted(p.name for p in LINES.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_excerpt(name: str) -> None:
    exp = EXPECTED[name]
    f = top(triage_dir(LINES / name))
    assert (f.rule, [f"{f.evidence[0].file}:{f.evidence[0].line}"]) == (exp["rule"], exp["evidence"])
    for key, value in exp.get("numbers", {}).items():
        assert f.numbers[key] == value


def test_ray_dedup_count_is_the_finding_count() -> None:
    f = top(triage_dir(LINES / "slime-torch-memory-saver-trainer.log"))
    assert f.count == 18  # `[repeated 18x across cluster]`


def test_the_retraction_storm_also_shows_the_saturated_pool() -> None:
    rules = [f.rule for f in triage_dir(LINES / "sglang-kv-pool-full-retract.log").findings]
    assert rules == ["serving.kv-retraction", "serving.kv-pool-saturated"]
