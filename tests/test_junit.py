"""JUnit XML: one testsuite; one testcase per finding (classname `triage.<category>`), a passing `no findings`
testcase for each empty category; failed at the gate, skipped when baselined; valid against Jenkins' JUnit XSD."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from domain import CATEGORIES
from realcases import ROOT, report_of

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render

XSD = xmlschema.XMLSchema(str(ROOT / "tests" / "schemas" / "junit-10.xsd"))


def junit_text(report, fail_on: str = "error") -> str:  # type: ignore[no-untyped-def]
    text = render("junit", report, RenderOptions(fail_on=fail_on))
    XSD.validate(text)
    return text


def junit(report, fail_on: str = "error") -> ET.Element:  # type: ignore[no-untyped-def]
    return ET.fromstring(junit_text(report, fail_on))


def cases(root: ET.Element) -> list[tuple[str, str, str]]:
    """(classname, name, outcome) per testcase."""
    def outcome(c: ET.Element) -> str:
        return next((out for tag, out in (("failure", "failed"), ("skipped", "skipped")) if c.find(tag) is not None),
                    "passed")
    return [(c.get("classname", ""), c.get("name", ""), outcome(c)) for c in root.iter("testcase")]


def failed(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name"): c.find("failure") for c in root.iter("testcase") if c.find("failure") is not None}


def test_a_clean_run_has_one_passing_testcase_per_category() -> None:
    root = junit(report_of("016"))
    (suite,) = root.findall("testsuite")
    assert cases(root) == [(f"triage.{c}", "no findings", "passed") for c in CATEGORIES]
    assert len(CATEGORIES) == 8 and {"other", "unclassified"} <= set(CATEGORIES)
    assert suite.get("tests") == "8" and suite.get("failures") == "0" and suite.get("skipped") == "0"


def test_trainer_oom_fails_its_own_testcase_with_evidence_and_knobs() -> None:
    root = junit(report_of("004"))
    assert ("triage.trainer-oom", "trainer.cuda-oom in train.log", "failed") in cases(root)
    assert [c for c in cases(root) if c[2] != "passed"] == [("triage.trainer-oom", "trainer.cuda-oom in train.log", "failed")]
    failure = failed(root)["trainer.cuda-oom in train.log"]
    text = failure.text or ""
    assert failure.get("type") == "trainer.cuda-oom"
    assert failure.get("message") == ("error at or above --fail-on error: Trainer ran out of GPU memory "
                                      "[trainer-oom, trainer.cuda-oom]")
    assert "train.log:10  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 29.39 GiB" in text
    assert "inspect: trainer.packing_max_tokens" in text
    assert root.find("testsuite").get("failures") == "1"  # type: ignore[union-attr]
    assert root.find("testsuite").get("tests") == "8"  # type: ignore[union-attr]  # 7 empty categories + 1


def test_warning_fails_only_when_the_gate_is_warning() -> None:
    report = report_of("036")
    name = "serving.kv-pool-saturated in sglang-engine-0.log"
    assert failed(junit(report, "error")) == {}
    case = next(c for c in junit(report, "error").iter("testcase") if c.get("name") == name)
    assert case.get("classname") == "triage.serving-oom-retraction"
    out = case.findtext("system-out") or ""
    # Jenkins keeps a passing testcase's first and last 500 characters: the summary and the knobs are in the first
    head = out[:500]
    assert head.startswith("WARNING: KV-cache pool under pressure while requests wait")
    assert "sglang-engine-0.log:1  [2026-05-24 03:51:45 TP0] Decode batch" in head
    assert "inspect: inference.sglang_max_total_tokens (--sglang-max-total-tokens)" in head
    assert list(failed(junit(report, "warning"))) == [name]
    assert failed(junit(report, "never")) == {}


def test_other_category_is_its_own_testcase() -> None:
    assert [(c, n) for c, n, o in cases(junit(report_of("025"))) if o == "failed"] == [
        ("triage.other", "other.nccl-watchdog-timeout in train.log")]


def test_baselined_finding_is_skipped_with_its_reason(tmp_path: Path) -> None:
    from triage.report import baseline

    path = tmp_path / "b.json"
    data = json.loads(baseline.dumps(report_of("004").findings))
    data["entries"][0]["reason"] = "known OOM, INC-12"
    path.write_text(json.dumps(data))
    root = junit(report_of("004", baseline=path))
    (case,) = [c for c in root.iter("testcase") if c.get("name") == "trainer.cuda-oom in train.log"]
    skipped = case.find("skipped")
    assert skipped is not None and skipped.get("message") == "known (baselined): known OOM, INC-12"
    assert (skipped.text or "").startswith("ERROR (known, baselined): Trainer ran out of GPU memory")
    assert root.find("testsuite").get("skipped") == "1" and failed(root) == {}  # type: ignore[union-attr]


def test_combined_run_fails_each_finding_at_the_gate(combined: Path) -> None:  # noqa: F811
    report = analyze(Settings(paths=[str(combined)]))
    root = junit(report)
    fails = failed(root)
    assert len(fails) == sum(1 for f in report.findings if f.severity == "error") == 12
    assert {c for c, _, o in cases(root) if o == "failed"} == {
        f"triage.{c}" for c in ("serving-oom-retraction", "trainer-oom", "verifier", "prompt-budget", "cold-start", "other")}
    names = [n for _, n, _ in cases(root)]
    assert len(names) == len(set(names))  # a CI server's history needs unique names
    # every finding is a testcase; every category without one still shows as checked
    assert len(names) == len(report.findings) + len(set(CATEGORIES) - {f.category for f in report.findings})


def test_the_schema_check_rejects_a_testcase_without_a_name() -> None:
    text = render("junit", report_of("004"), RenderOptions()).replace(' name="trainer.cuda-oom in train.log"', "")
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        XSD.validate(text)


def test_control_characters_in_a_log_line_still_give_well_formed_xml(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_bytes(b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB \x01\x0b\x1f\n")
    root = junit(analyze(Settings(paths=[str(run)])))
    assert list(failed(root)) == ["trainer.cuda-oom in train.log"]
