"""report/common.py: the phrasing and the guards every format shares, on their own."""

from __future__ import annotations

import pytest

from triage.model import Evidence, Finding, Knob, LogFile, Report
from triage.report import RenderOptions
from triage.report.common import (
    coverage_counts,
    knob_text,
    phrase,
    run_path,
    safe_report,
    safe_text,
    shown_path,
    verdict,
)
from triage.report.sarif_format import uri_of


def test_safe_text_shows_every_control_character_and_keeps_the_rest() -> None:
    assert safe_text("\x1b]52;c;Zm9v\x07 ok\tok \x08\x7f\x9b é 日本") == "\\x1b]52;c;Zm9v\\x07 ok\tok \\x08\\x7f\\x9b é 日本"
    assert safe_text("a\nb\r\u2028\u202e") == "a\\x0ab\\x0d\\u2028\\u202e"
    assert safe_text(None) == "" and safe_text(3) == "3"
    assert safe_text(safe_text("\x1b")) == "\\x1b"  # shown once: rendering twice changes nothing
    # the runner obeys `##[command]` anywhere in a line: the second # is shown as an escape
    assert safe_text("ok ##[error]x ##[stop-commands]tok") == "ok #\\x23[error]x #\\x23[stop-commands]tok"
    assert safe_text(safe_text("##[")) == "#\\x23["


def test_safe_report_copies_and_leaves_the_report_it_was_given_alone() -> None:
    f = Finding(rule="r", category="other", severity="error", title="t\x07", evidence=[Evidence("a.log", 2, "x\x1b[2J")],
                knobs=[Knob("k", current="v\x1b", source="s\x1b")], not_knobs=[{"memory": "no", "__line__": 3}])  # type: ignore[list-item]
    report = Report(version="0", root="r", findings=[f], files=[LogFile(path="p", rel="a\x1b.log")], errors=["e\x07"])
    safe = safe_report(report)
    g = safe.findings[0]
    assert (g.title, g.evidence[0].text, g.knobs[0].current, g.knobs[0].source) == ("t\\x07", "x\\x1b[2J", "v\\x1b", "s\\x1b")
    assert g.not_knobs == ["memory: no"]
    assert (safe.files[0].rel, safe.errors) == ("a\\x1b.log", ["e\\x07"])
    assert report.findings[0].title == "t\x07" and report.files[0].rel == "a\x1b.log"


def test_phrase_turns_a_yaml_mapping_back_into_its_sentence() -> None:
    assert phrase({"GPU memory settings": "this is host RAM", "__line__": 16}) == "GPU memory settings: this is host RAM"
    assert phrase("plain") == "plain"


@pytest.mark.parametrize(("path", "rel", "shown"), [
    ("train.log", "train.log", "train.log"),
    ("a/./b/../c.log", "a/c.log", "a/c.log"),
    ("/home/u/cfg/run.yaml", None, "run.yaml"),
    ("../cfg/run.yaml", None, "run.yaml"),
    ("..", None, ".."),
    ("::error::x.log", "::error::x.log", "./::error::x.log"),
    (" ::x.log", " ::x.log", "./ ::x.log"),
])
def test_paths_stay_in_the_run_directory_and_never_start_a_command(path: str, rel: str | None, shown: str) -> None:
    assert run_path(path) == rel
    assert shown_path(path) == shown


def test_uri_segments_are_percent_encoded() -> None:
    assert uri_of("logs/a b/12:30:01 100%.log") == "logs/a%20b/12%3A30%3A01%20100%25.log"
    assert uri_of("ü/#?.log") == "%C3%BC/%23%3F.log"
    assert uri_of("a\\x0ab.log") == "a%5Cx0ab.log"


def test_knob_text_is_one_phrasing_for_plain_text_and_markdown() -> None:
    k = Knob("inference.sglang_max_running_requests", ["max_running_requests", "--max-running-requests"], 64,
             "engine.log:3")
    assert knob_text(k, RenderOptions()) == ("inference.sglang_max_running_requests = 64 "
                                             "(--max-running-requests; from engine.log:3)")
    assert knob_text(k, RenderOptions(), code=lambda s: f"`{s}`", plain=str.upper) == (
        "`inference.sglang_max_running_requests` = `64` (`--max-running-requests`; from ENGINE.LOG:3)")
    assert knob_text(Knob("x"), RenderOptions()) == "x"


def test_coverage_counts_every_status_and_the_verdict_names_what_was_not_read() -> None:
    files = [LogFile(path="a", rel="a", kind="sglang"), LogFile(path="b", rel="b", kind="trainer"),
             LogFile(path="c", rel="c", status="skipped"), LogFile(path="d", rel="d", status="unreadable"),
             LogFile(path="e", rel="e", kind="trainer", status="partial")]
    report = Report(version="0", root=".", files=files)
    assert coverage_counts(report) == "2 read (1 sglang, 1 trainer), 1 partial, 1 skipped, 1 unreadable"
    assert verdict(report) == "no problems found in what was read (1 unreadable, 1 partial file(s): see coverage)"
    report.files = files[:3]
    assert verdict(report) == "no problems found"  # a skipped binary is not a gap
    report.findings = [Finding(rule="r", category="other", severity="warning", title="T")]
    assert verdict(report) == "warning: other: T"


def test_the_fast_path_misses_no_control_character() -> None:
    """safe_text skips the regex for text str.isprintable() accepts: sound only if it rejects every CONTROL one."""
    from triage.report.common import CONTROL

    assert [hex(n) for n in range(0x110000) if CONTROL.match(chr(n)) and chr(n).isprintable()] == []
