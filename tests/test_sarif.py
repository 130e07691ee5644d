"""SARIF 2.1.0: schema-valid on real cases; rule ids, relative URIs, start lines, line-free fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from realcases import copy_case, report_of

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render

# shared/ lies beside the clone in CI and two levels up from a worktree under wt/
_HERE = Path(__file__).resolve()
SCHEMA_PATH = next((p for p in (_HERE.parents[2] / "shared", _HERE.parents[3] / "shared", Path("/work/shared"))
                    if (p / "schemas" / "sarif-schema-2.1.0.json").is_file()), Path("shared")) / "schemas" / "sarif-schema-2.1.0.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text())


FORMATS = jsonschema.FormatChecker()  # uri, uri-reference (rfc3986-validator), date-time


def sarif(report, **kw) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(render("sarif", report, RenderOptions(**kw)))


def valid(doc: dict) -> None:  # type: ignore[type-arg]
    jsonschema.validate(doc, SCHEMA, format_checker=FORMATS)


@pytest.mark.parametrize("name", ["004", "016", "025", "036", "052", "063"])
def test_sarif_is_valid_against_the_2_1_0_schema(name: str) -> None:
    valid(sarif(report_of(name)))


def test_combined_run_is_valid_and_has_one_result_per_finding(combined: Path) -> None:
    report = analyze(Settings(paths=[str(combined)]))
    doc = sarif(report)
    valid(doc)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]]
    assert "036-sglang-swa-full-token-usage-1-queue-growing/sglang-engine-0.log" in uris
    results = doc["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == [f.rule for f in report.findings]
    rule_ids = [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in results)


def test_trainer_oom_result_points_at_the_oom_line() -> None:
    doc = sarif(report_of("004"))
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "trainer.cuda-oom"
    assert result["level"] == "error"
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "train.log", "uriBaseId": "RUNROOT"}
    assert list(doc["runs"][0]["originalUriBaseIds"]) == ["RUNROOT"]
    assert result["partialFingerprints"] == {"triage/v1": result["partialFingerprints"]["primaryLocationLineHash"],
                                             "primaryLocationLineHash": report_of("004").findings[0].fingerprint}
    assert "automationDetails" not in doc["runs"][0]  # set only by --sarif-category
    assert loc["region"]["startLine"] == 10
    assert "Tried to allocate 29.39 GiB" in loc["region"]["snippet"]["text"]
    rule = doc["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["shortDescription"]["text"] == "Trainer ran out of GPU memory"
    assert "trainer.micro_batch_size" in rule["help"]["text"]
    assert "will not help: more inference GPUs" in rule["help"]["text"]


def test_warning_level_and_category_property() -> None:
    (result,) = sarif(report_of("036"))["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("serving.kv-pool-saturated", "warning")
    assert result["properties"]["category"] == "serving-oom-retraction"


def test_fingerprint_survives_shifted_line_numbers(tmp_path: Path) -> None:
    run = copy_case("004", tmp_path / "run")
    before = sarif(analyze(Settings(paths=[str(run)])))["runs"][0]["results"][0]
    log = run / "train.log"
    log.write_bytes(b"\n\n\nextra launcher line\n" + log.read_bytes())
    after = sarif(analyze(Settings(paths=[str(run)])))["runs"][0]["results"][0]
    assert after["locations"][0]["physicalLocation"]["region"]["startLine"] == 14
    assert after["partialFingerprints"] == before["partialFingerprints"]


def test_the_schema_check_rejects_a_wrong_level() -> None:
    doc = sarif(report_of("004"))
    doc["runs"][0]["results"][0]["level"] = "info"  # SARIF says note
    with pytest.raises(jsonschema.ValidationError):
        valid(doc)


def test_the_format_check_rejects_a_uri_with_a_space() -> None:
    doc = sarif(report_of("004"))
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "train log.txt"
    jsonschema.validate(doc, SCHEMA)  # without format checking the schema alone accepts it
    with pytest.raises(jsonschema.ValidationError, match="uri-reference"):
        valid(doc)


def test_category_gives_each_upload_its_own_automation_id() -> None:
    nightly = sarif(report_of("004"), sarif_category="nightly")
    engine = sarif(report_of("004"), sarif_category="engine-logs/")
    valid(nightly)
    assert nightly["runs"][0]["automationDetails"] == {"id": "nightly/"}
    assert engine["runs"][0]["automationDetails"] == {"id": "engine-logs/"}


def test_baselined_finding_carries_an_external_suppression(tmp_path: Path) -> None:
    from triage.report import baseline

    report = report_of("004")
    path = tmp_path / "b.json"
    data = json.loads(baseline.dumps(report.findings))
    data["entries"][0]["reason"] = "known OOM, INC-12"
    path.write_text(json.dumps(data))
    doc = sarif(report_of("004", baseline=path))
    valid(doc)
    (result,) = doc["runs"][0]["results"]
    assert result["suppressions"] == [{"kind": "external", "status": "accepted", "justification": "known OOM, INC-12"}]


def test_rule_help_markdown_keeps_log_values_as_text() -> None:
    from markdown_it import MarkdownIt

    from triage.model import Evidence, Finding, Knob, Report

    f = Finding(rule="trainer.cuda-oom", category="trainer-oom", severity="error", title="OOM",
                evidence=[Evidence("train.log", 3, "x")], fingerprint="ab",
                knobs=[Knob("trainer.micro_batch_size", ["--micro-batch-size"], "<img src=x onerror=alert(1)>",
                            "run.yaml:2")],
                not_knobs=["**more GPUs**"], explain="See [here](https://evil.example) <b>now</b>")
    doc = sarif(Report(version="0", root=".", findings=[f]))
    valid(doc)
    html = MarkdownIt("commonmark").render(doc["runs"][0]["tool"]["driver"]["rules"][0]["help"]["markdown"])
    assert "<code>&lt;img src=x onerror=alert(1)&gt;</code>" in html and "<img" not in html
    assert "<a " not in html and "<b>" not in html and "<strong>more GPUs</strong>" not in html
    assert "<strong>Inspect:</strong> <code>trainer.micro_batch_size</code>" in html
