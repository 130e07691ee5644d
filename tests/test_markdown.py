"""Markdown for tickets: golden file on a real case; rendered by a GFM renderer every table row keeps its cells;
bounded by `max_chars` (61,440 by default, 32,767 for Jira) saying what was left out."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from realcases import ROOT, case

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render
from triage.report.markdown_format import DEFAULT_MAX_CHARS, PRESETS

GOLDEN = ROOT / "tests" / "golden" / "063-kv-pool-negative.md"
MD = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])  # GFM's table and strikethrough


def table_shapes(text: str) -> list[tuple[int, list[int]]]:
    """Each table GFM renders: its header's cell count and every body row's cell count."""
    tokens = MD.parse(text)
    shapes: list[tuple[int, list[int]]] = []
    row: list[str] = []
    for t in tokens:
        if t.type == "table_open":
            shapes.append((0, []))
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            row.append(t.type)
        elif t.type == "tr_close":
            head, body = shapes[-1]
            shapes[-1] = (len(row), body) if row[0] == "th_open" else (head, body + [len(row)])
    return shapes


def many_findings(report, copies: int = 40):  # type: ignore[no-untyped-def]
    """The combined run's 20 findings `copies` times, with long evidence: a week of distinct failures."""
    many = []
    for i in range(copies):
        for f in report.findings:
            g = copy.deepcopy(f)
            g.fingerprint = f"{f.fingerprint}{i}"
            for e in g.evidence:
                e.text = e.text + " x" * 300
            many.append(g)
    report.findings = many
    return report


def md_of(paths: list[str], **kw: object) -> str:
    return render("markdown", analyze(Settings(paths=paths)), RenderOptions(**kw))  # type: ignore[arg-type]


def test_golden_file_for_the_negative_kv_pool_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    text = md_of(["fixtures/real/063-sglang-rocm-negative-profiled-kv-tokens-dp8/input"])
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_renders_to_a_table_code_blocks_and_headings(combined: Path) -> None:  # noqa: F811
    report = analyze(Settings(paths=[str(combined)]))
    tokens = MD.parse(render("markdown", report, RenderOptions()))
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 1 + len(report.findings)  # header + one row per finding
    cells = [t.children[0].content for t in tokens if t.type == "inline" and t.map and t.level >= 4]
    assert "trainer-oom" in cells
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == sum(1 for f in report.findings if f.evidence)
    assert any("train.log:10  torch.OutOfMemoryError: CUDA out of memory" in t.content for t in fences)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[0].startswith("triage: error: serving-oom-retraction")
    assert headings[-1] == "Coverage"


def test_log_text_with_pipes_and_html_stays_text(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "driver.log").write_text("ERROR weird | failure <script>alert(1)</script> *boom*\n")
    html = MD.render(md_of([str(run)]))
    assert "<script>" not in html
    assert html.count("<td") == 6  # the pipe did not split the row
    assert "weird | failure &lt;script&gt;" in html
    assert "<em>" not in html and "*boom*" in html


def test_a_huge_report_is_summarised_under_the_default_bound(combined: Path) -> None:  # noqa: F811
    report = many_findings(analyze(Settings(paths=[str(combined)])))
    text = render("markdown", report, RenderOptions())
    assert len(text) <= DEFAULT_MAX_CHARS < 65_536  # GitHub's comment limit, in characters
    assert "more finding(s), left out to keep this summary short" in text
    assert "## Coverage" in text
    assert all(n == head for head, body in table_shapes(text) for n in body)  # still well-formed tables


def test_jira_preset_bounds_the_summary_and_says_what_was_left_out(combined: Path) -> None:  # noqa: F811
    report = many_findings(analyze(Settings(paths=[str(combined)])), copies=2)  # 40 findings
    default = render("markdown", report, RenderOptions())
    text = render("markdown", report, RenderOptions(max_chars=PRESETS["jira"]))
    assert PRESETS["jira"] == 32_767
    assert len(text) <= 32_767 < len(default) <= DEFAULT_MAX_CHARS
    assert "Details of 20 more finding(s) left out to keep this summary short." in default
    assert "Details of 30 more finding(s) left out to keep this summary short." in text
    assert text.count("\n### ") == 10
    assert all(n == head for head, body in table_shapes(text) for n in body)


def test_a_bound_too_small_for_any_level_cuts_and_says_so() -> None:
    text = md_of([str(case("004"))], max_chars=300)
    assert len(text) <= 300
    assert text.endswith("… (cut at 300 characters; the JSON report has everything)\n")


def test_pipes_in_a_file_name_and_rule_keep_every_table_row_whole(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "a|b `c`.log").write_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB | x\n")
    text = md_of([str(run)])
    shapes = table_shapes(text)
    assert shapes == [(6, [6])]
    html = MD.render(text)
    assert "<code>a|b `c`.log:1</code>" in html  # the cell shows the name as it is
