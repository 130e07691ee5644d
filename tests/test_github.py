"""GitHub annotations: top-ranked first, at most 10 per level, escaped; the job summary; `--format auto`."""

from __future__ import annotations

import re
from pathlib import Path

from realcases import case, report_of

from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render

ANNOTATION = re.compile(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<body>.*)$")


def annotations(text: str) -> list[re.Match[str]]:
    return [m for line in text.splitlines() if (m := ANNOTATION.match(line))]


def test_caps_at_ten_errors_top_ranked_first(combined: Path) -> None:  # noqa: F811
    report = analyze(Settings(paths=[str(combined)]))
    errors = [f for f in report.findings if f.severity == "error"]
    assert len(errors) == 12
    text = render("github", report, RenderOptions())
    found = annotations(text)
    levels = [m.group(1) for m in found]
    assert levels.count("error") == 10 and levels.count("warning") == 6
    titles = [re.search(r"title=([^,]*)", m.group("props")).group(1) for m in found if m.group(1) == "error"]  # type: ignore[union-attr]
    expected = [f"{f.category}: {f.title}" + (f" ×{f.count}" if f.count > 1 else "") for f in errors[:10]]
    assert titles == [t.replace(":", "%3A") for t in expected]
    assert "triage: 2 more error finding(s) not annotated" in text


def test_annotation_names_file_line_and_escapes_newlines() -> None:
    (m,) = annotations(render("github", report_of("004"), RenderOptions()))
    assert m.group(1) == "error"
    assert m.group("props").startswith("file=train.log,line=10,title=trainer-oom%3A Trainer ran out of GPU memory")
    assert "\n" not in m.group("body") and "%0Atrain.log:10  torch.OutOfMemoryError" in m.group("body")


def test_percent_and_commas_are_escaped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "a,b:c.log").write_text("RuntimeError: CUDA out of memory. Tried to allocate 100% of 2.00 GiB\n")
    (m,) = annotations(render("github", analyze(Settings(paths=[str(run)])), RenderOptions()))
    assert "file=a%2Cb%3Ac.log" in m.group("props")
    assert "100%25 of" in m.group("body")


def test_step_summary_is_appended_and_auto_picks_github(cli, tmp_path: Path) -> None:  # noqa: F811
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    r = cli(case("004"), "--format", "auto", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert r.code == 1
    assert r.out.startswith("::error file=train.log,line=10,")
    body = summary.read_text()
    assert body.startswith("earlier step\n## triage: error: trainer-oom: Trainer ran out of GPU memory")
    assert "| 1 | trainer-oom | error | 1 | `train.log:10` | `trainer.cuda-oom` |" in body


def test_auto_is_text_outside_github_actions(cli) -> None:  # noqa: F811
    r = cli(case("004"), "--format", "auto")
    assert r.out.startswith("triage: error: trainer-oom")
    assert "::error" not in r.out
