"""Markdown for tickets: golden file on a real case, renders through a CommonMark parser, stays under 64 KiB."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from realcases import ROOT

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render
from triage.report.markdown_format import MAX_BYTES

GOLDEN = ROOT / "tests" / "golden" / "063-kv-pool-negative.md"
MD = MarkdownIt("commonmark", {"html": False}).enable("table")


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


def test_a_huge_report_is_summarised_under_64_kib(combined: Path) -> None:  # noqa: F811
    report = analyze(Settings(paths=[str(combined)]))
    many = []
    for i in range(40):  # 760 findings with long evidence: a week of distinct failures
        for f in report.findings:
            g = copy.deepcopy(f)
            g.fingerprint = f"{f.fingerprint}{i}"
            for e in g.evidence:
                e.text = e.text + " x" * 300
            many.append(g)
    report.findings = many
    text = render("markdown", report, RenderOptions())
    assert len(text.encode()) <= MAX_BYTES < 64 * 1024
    assert "more finding(s), left out to keep this summary short" in text
    assert text.rstrip().split("\n")[-1].startswith("1 read") or "## Coverage" in text
    assert MD.parse(text)  # still valid Markdown
