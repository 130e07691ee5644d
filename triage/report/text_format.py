"""The terminal report: a one-line verdict, then each finding (evidence, knobs, what will not help, why),
then coverage (files read, skipped, unreadable and why).

Every logical line is one output line unless `options.width` is set (the CLI sets it to the terminal's width on
a terminal): then it wraps at word boundaries with a hanging indent, so a continuation line always starts with
spaces. Either way no output line starts with text quoted from a log (a `::error::` in a log line cannot
become a CI runner's workflow command). Names and values are shown with their control characters escaped.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

from triage.input.read import visible
from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import COMMAND_START, clean, safe_report, verdict

STYLE = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}
MAX_LINE = 300
MAX_FINDINGS = 12
INDENT = 3  # a finding's detail lines
HANG = 2  # how much further a wrapped line's continuation is indented


def _short(text: str, width: int = MAX_LINE) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _s(value: object) -> str:
    """Text for the report: one line, its control characters visible."""
    return visible(" ".join(str(value).splitlines()))


class Text:
    """A logical line: pieces of text, each with its rich style ('' for none). Styles matter only on a terminal;
    elsewhere (a file, a pipe, CI) the report is the pieces' plain text, and rich is not even imported (~20 ms of
    a run's start)."""

    def __init__(self, text: str = "", style: str = "") -> None:
        self.parts = [(text, style)] if text else []

    @classmethod
    def assemble(cls, *parts: str | tuple[str, str]) -> Text:
        out = cls()
        for p in parts:
            out.parts.append((p, "") if isinstance(p, str) else p)
        return out

    def append(self, text: str, style: str = "") -> None:
        self.parts.append((text, style))

    @property
    def plain(self) -> str:
        return "".join(t for t, _ in self.parts)


# what rich's Text drops from every piece (rich.control.strip_control_codes: BEL, BS, VT, FF, CR)
RICH_STRIPS = dict.fromkeys((7, 8, 11, 12, 13))


class Writer:
    """Prints logical lines (Text, styled) at an indent, wrapped with a hanging indent when width is set. With no
    colour and no width, as rich prints them there: the lines' plain text, each at its indent (a line with a tab,
    which rich expands by cell widths, makes rich print the report)."""

    def __init__(self, options: RenderOptions) -> None:
        self.options = options
        self.width = options.width
        self.lines: list[tuple[Text, int, int]] = []

    def line(self, text: Text | str = "", indent: int = 0, hang: int = HANG) -> None:
        self.lines.append((Text(text) if isinstance(text, str) else text, indent, hang))

    def text(self) -> str:
        """The report; a line that would begin with `::` (a GitHub Actions workflow command once leading white
        space is trimmed) shows its first colon escaped, so quoted rule or log text is never obeyed."""
        plain = [" " * indent + text.plain.translate(RICH_STRIPS) for text, indent, _ in self.lines]
        if self.options.color or self.width is not None or any("\t" in ln for ln in plain):
            out = self._rich()
        else:
            out = "".join(ln + "\n" for ln in plain)
        return "\n".join(COMMAND_START.sub(lambda m: m.group()[:-2] + "\\x3a:", ln, count=1)
                         for ln in out.split("\n"))

    def _rich(self) -> str:
        """The lines printed by rich: styled, wrapped at the width."""
        from rich.console import Console
        from rich.text import Text as Rich

        buf = io.StringIO()
        console = Console(file=buf, force_terminal=self.options.color, no_color=not self.options.color,
                          width=self.width or 1 << 16, highlight=False, emoji=False, markup=False)
        for line, indent, hang in self.lines:
            text: Any = Rich.assemble(*line.parts)
            if self.width is None or len(text) + indent <= self.width:
                console.print(Rich(" " * indent) + text, soft_wrap=True)
                continue
            for i, part in enumerate(text.wrap(console, max(20, self.width - indent - hang))):
                part.rstrip()
                console.print(Rich(" " * (indent + (hang if i else 0))) + part, soft_wrap=True)
        return buf.getvalue()


def _finding(out: Writer, i: int, f: Finding, options: RenderOptions) -> None:
    head = Text(f"{i}. ")
    head.append(f.severity.upper(), style=STYLE.get(f.severity, ""))
    head.append(" ")
    head.append(_s(f.category), style="bold")
    head.append(f" {_s(f.title)}" + (f" ×{f.count}" if f.count > 1 else "") + "  ")
    head.append(_s(f.rule), style="dim")
    if f.known:
        head.append(" (known, baselined)", style="dim")
    out.line(head, hang=len(f"{i}. "))
    for e in f.evidence[:3]:
        out.line(Text.assemble((f"{_s(e.file)}:{e.line}  ", "dim"), _short(_s(e.text.strip()))), INDENT)
    if f.count > 1 and f.first and f.last and (f.first.file, f.first.line) != (f.last.file, f.last.line):
        out.line(Text(f"first {_s(f.first.file)}:{f.first.line}, last {_s(f.last.file)}:{f.last.line}", style="dim"),
                 INDENT)
    if f.knobs:
        parts = []
        for k in f.knobs:
            cur = (f" = {clean(k.current, options)}" + (f" [{clean(k.source, options)}]" if k.source else "")
                   if k.current is not None else "")
            alias = next((a for a in k.aliases if a.startswith("--") or a.endswith("=")), "")  # flag or override
            parts.append(f"{k.name}{cur}" + (f" ({alias})" if alias else ""))
        out.line(Text.assemble(("inspect: ", "green"), _s("; ".join(parts))), INDENT)
    if f.not_knobs:
        out.line(Text.assemble(("will not help: ", "magenta"), _s("; ".join(map(str, f.not_knobs)))), INDENT)
    if f.explain:
        out.line(Text(_s(" ".join(f.explain.split())), style="dim"), INDENT, hang=0)


def _coverage(out: Writer, report: Report, options: RenderOptions) -> None:
    by_status = Counter(f.status for f in report.files)
    kinds = Counter(f.kind for f in report.files if f.status == "read")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    out.line(Text.assemble(("coverage", "bold"), f": {by_status.get('read', 0)} read ({summary or 'none'}), "
                                                 f"{by_status.get('skipped', 0)} skipped, "
                                                 f"{by_status.get('unreadable', 0)} unreadable"
                                                 + (f", {by_status['partial']} partial" if by_status.get("partial") else "")))
    for f in report.files:
        if f.status != "read" or f.reason:
            out.line(Text.assemble((f.status, "dim"), f" {_s(clean(f.rel, options))}: "
                                                      f"{_s(clean(f.reason or f.kind, options))}"), INDENT)
    for err in report.errors:
        out.line(Text.assemble(("note", "yellow"), f" {_s(clean(err, options))}"), INDENT)


def _configuration(out: Writer, report: Report, options: RenderOptions) -> None:
    """The effective configuration: each known knob, its value and where it came from (all of it with -v)."""
    if not report.config:
        return
    if not options.verbose:
        out.line(Text.assemble(("configuration", "bold"), f": {len(report.config)} knob values known (-v lists them)"))
        return
    out.line(Text.assemble(("configuration", "bold"), " (effective value, where it came from):"))
    for name, entry in report.config.items():
        line = Text(f"{_s(name)} = {_s(clean(entry['value'], options))}  ")
        line.append(_s(clean(entry["source"], options)), style="dim")
        req = entry.get("requested")
        if req:
            line.append(f"  (requested {_s(clean(req['value'], options))} in {_s(clean(req['source'], options))})",
                        style="dim")
        out.line(line, INDENT)


def render(report: Report, options: RenderOptions) -> str:
    report = safe_report(report)
    out = Writer(options)
    live = report.live()
    worst = live[0].severity if live else ""
    out.line(Text.assemble(("triage", STYLE.get(worst, "bold green")), f": {_s(verdict(report))}  ",
                           (f"({len(live)} finding{'s' if len(live) != 1 else ''}, {len(report.files)} files)", "dim")))
    shown = report.findings if options.verbose else report.findings[:MAX_FINDINGS]
    for i, f in enumerate(shown, 1):
        out.line()
        _finding(out, i, f, options)
    if len(shown) < len(report.findings):
        out.line()
        out.line(Text(f"… {len(report.findings) - len(shown)} more (use --verbose)", style="dim"))
    out.line()
    _configuration(out, report, options)
    _coverage(out, report, options)
    return out.text()
