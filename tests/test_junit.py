"""JUnit XML: one testsuite, one testcase per category (six + other + unclassified), failed at the gate."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from domain import CATEGORIES
from realcases import report_of

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render


def junit(report, fail_on: str = "error") -> ET.Element:  # type: ignore[no-untyped-def]
    return ET.fromstring(render("junit", report, RenderOptions(fail_on=fail_on)))


def failed(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name"): c.find("failure") for c in root.iter("testcase") if c.find("failure") is not None}


def test_one_suite_with_a_testcase_per_category() -> None:
    root = junit(report_of("016"))
    (suite,) = root.findall("testsuite")
    assert [c.get("name") for c in suite.iter("testcase")] == list(CATEGORIES)
    assert len(CATEGORIES) == 8 and {"other", "unclassified"} <= set(CATEGORIES)
    assert suite.get("tests") == "8" and suite.get("failures") == "0"


def test_trainer_oom_fails_only_its_category_with_evidence_and_knobs() -> None:
    root = junit(report_of("004"))
    fails = failed(root)
    assert list(fails) == ["trainer-oom"]
    text = fails["trainer-oom"].text or ""
    assert fails["trainer-oom"].get("type") == "trainer.cuda-oom"
    assert "train.log:10  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 29.39 GiB" in text
    assert "inspect: trainer.packing_max_tokens" in text
    assert root.find("testsuite").get("failures") == "1"  # type: ignore[union-attr]


def test_warning_fails_only_when_the_gate_is_warning() -> None:
    report = report_of("036")
    assert failed(junit(report, "error")) == {}
    case = next(c for c in junit(report, "error").iter("testcase") if c.get("name") == "serving-oom-retraction")
    assert "serving.kv-pool-saturated" in (case.findtext("system-out") or "")
    assert list(failed(junit(report, "warning"))) == ["serving-oom-retraction"]
    assert failed(junit(report, "never")) == {}


def test_other_category_is_its_own_testcase() -> None:
    assert list(failed(junit(report_of("025")))) == ["other"]


def test_combined_run_fails_each_category_holding_an_error(combined: Path) -> None:  # noqa: F811
    report = analyze(Settings(paths=[str(combined)]))
    fails = failed(junit(report))
    expected = {f.category for f in report.findings if f.severity == "error"}
    assert set(fails) == expected == {"serving-oom-retraction", "trainer-oom", "verifier", "prompt-budget",
                                      "cold-start", "other"}


def test_control_characters_in_a_log_line_still_give_well_formed_xml(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_bytes(b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB \x01\x0b\x1f\n")
    root = junit(analyze(Settings(paths=[str(run)])))
    assert "trainer-oom" in failed(root)
