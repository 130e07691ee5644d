"""GitLab Code Quality JSON: one issue per live finding, unique fingerprints, GitLab severities."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from realcases import ROOT, report_of

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render

# GitLab's own schema for one Code Quality issue (tests/schemas/SOURCES.md)
SCHEMA = json.loads((ROOT / "tests" / "schemas" / "gitlab-codeclimate.json").read_text())


def issues(report) -> list[dict]:  # type: ignore[no-untyped-def]
    out = json.loads(render("gitlab", report, RenderOptions()))
    for issue in out:
        jsonschema.validate(issue, SCHEMA)
    return out


def test_the_schema_check_rejects_an_issue_without_a_fingerprint() -> None:
    (issue,) = issues(report_of("004"))
    del issue["fingerprint"]
    try:
        jsonschema.validate(issue, SCHEMA)
    except jsonschema.ValidationError as e:
        assert "'fingerprint' is a required property" in e.message
    else:
        raise AssertionError("GitLab's schema accepted an issue without a fingerprint")


def test_combined_run_has_unique_fingerprints_in_rank_order(combined: Path) -> None:  # noqa: F811
    report = analyze(Settings(paths=[str(combined)]))
    out = issues(report)
    assert len(out) == len(report.findings) == 20
    assert len({i["fingerprint"] for i in out}) == 20
    assert [i["check_name"] for i in out] == [f.rule for f in report.findings]
    assert {i["severity"] for i in out} == {"critical", "major", "info"}


def test_issue_fields_for_a_trainer_oom() -> None:
    (issue,) = issues(report_of("004"))
    assert issue["check_name"] == "trainer.cuda-oom"
    assert issue["severity"] == "critical"
    assert issue["location"] == {"path": "train.log", "lines": {"begin": 10}}
    assert issue["description"] == "Trainer ran out of GPU memory [trainer-oom, trainer.cuda-oom]"
    assert issue["fingerprint"] == report_of("004").findings[0].fingerprint


def test_known_findings_are_left_out(tmp_path: Path) -> None:
    from triage.report import baseline

    path = tmp_path / "b.json"
    path.write_text(baseline.dumps(report_of("004").findings))
    assert issues(report_of("004", baseline=path)) == []
