"""Cap hits on one isolated step of a long run are information; on several steps, or in a short paste, a warning.

real-extra 990 (a healthy TRL GRPO run, 40 metric dicts): completions/clipped_ratio is 0.2 on one record and at most
0.125 on the others. real-extra 993 (verl ReTool): the clip ratio climbs to 0.18-0.21 over the last steps, reaching
0.2 on three records of 99. real-extra 709 (the same repository's run, 30 records over)."""

from __future__ import annotations

from conftest import by_rule, triage_dir
from conftest import extra_input as case


def test_one_record_at_the_threshold_of_forty_is_information() -> None:
    report = triage_dir(case("990-"))
    found = by_rule(report)["gen.cap-hit-rate"]
    assert found.severity == "info"
    assert (found.numbers["steps_over"], found.numbers["records"]) == (1, 40)
    assert found.numbers["max"] == 0.2
    assert (found.evidence[0].file, found.evidence[0].line) == ("rho0.10_seed42.log", 221)
    assert "on 1 of 40 records" in found.title
    assert not [f for f in report.findings if f.severity in ("warning", "error")]


def test_cap_hits_on_several_steps_stay_a_warning() -> None:
    climbing = by_rule(triage_dir(case("993-")))["gen.cap-hit-rate"]
    assert (climbing.severity, climbing.numbers["steps_over"]) == ("warning", 3)
    persistent = by_rule(triage_dir(case("709-")))["gen.cap-hit-rate"]
    assert (persistent.severity, persistent.numbers["steps_over"]) == ("warning", 30)
