"""The text report: the terminal's width on a terminal with hanging indents, no wrapping anywhere else; colour only on
a terminal, never with NO_COLOR or TERM=dumb."""

from __future__ import annotations

import io
import re

import pytest
from realcases import report_of

from triage import cli as cli_module
from triage.report import RenderOptions, render

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return report_of("004")


def test_off_a_terminal_every_logical_line_is_one_line(report) -> None:  # type: ignore[no-untyped-def]
    out = render("text", report, RenderOptions())
    evidence = report.findings[0].evidence[0]
    assert f"   {evidence.file}:{evidence.line}  {evidence.text.strip()[:200]}" in out
    assert max(len(line) for line in out.splitlines()) > 200  # nothing wrapped at 80 or 100 columns
    assert not ANSI.search(out)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_on_a_terminal_lines_fit_and_continuations_hang(report, width: int) -> None:  # type: ignore[no-untyped-def]
    out = render("text", report, RenderOptions(width=width))
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    evidence = report.findings[0].evidence[0]
    at = next(i for i, line in enumerate(lines) if line.startswith(f"   {evidence.file}:{evidence.line}  "))
    continuation = lines[at + 1]
    assert continuation.startswith("     ") and not continuation.startswith("      ")  # indent 3 + hang 2
    words = " ".join(line.strip() for line in lines[at:at + 8])
    assert " ".join(evidence.text.split()[:12]) in words  # wrapped at spaces, no word cut


def test_colour_on_a_terminal_only(report) -> None:  # type: ignore[no-untyped-def]
    assert ANSI.search(render("text", report, RenderOptions(color=True, width=100)))


@pytest.mark.parametrize(("env", "color"), [({}, True), ({"NO_COLOR": "1"}, False), ({"TERM": "dumb"}, False),
                                            ({"NO_COLOR": ""}, True)])
def test_no_color_and_a_dumb_terminal_are_honoured(monkeypatch: pytest.MonkeyPatch, env: dict, color: bool) -> None:
    for k in ("NO_COLOR", "TERM"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("COLUMNS", "97")
    monkeypatch.setattr("sys.stdout", Tty())
    assert cli_module._text_options("text", None) == (color, 97)
    assert cli_module._text_options("text", cli_module.Path("r.txt")) == (False, None)
    assert cli_module._text_options("json", None) == (False, None)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert cli_module._text_options("text", None) == (False, None)


@pytest.mark.parametrize("case", ["004", "025", "028"])
def test_off_a_terminal_the_plain_text_is_what_rich_prints(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off a terminal the report is written without rich: the same text rich printed, verbose or not, and with a
    tab in a quoted line (rich expands it by cell widths: then rich prints the report)."""
    import dataclasses

    from triage.report import text_format

    rep = report_of(case)
    f = rep.findings[0]
    tabbed = dataclasses.replace(rep, findings=[dataclasses.replace(f, title="a\ttab\u4e2d\tx")] + rep.findings[1:])
    for r in (rep, tabbed):
        for verbose in (False, True):
            plain = render("text", r, RenderOptions(verbose=verbose))
            monkeypatch.setattr(text_format.Writer, "text", lambda self: "\n".join(
                text_format.COMMAND_START.sub(lambda m: m.group()[:-2] + "\\x3a:", ln, count=1)
                for ln in self._rich().split("\n")))
            assert plain == render("text", r, RenderOptions(verbose=verbose))
            monkeypatch.undo()
    assert "a\ttab" not in render("text", tabbed, RenderOptions())  # expanded, as rich does
