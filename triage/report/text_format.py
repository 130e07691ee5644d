"""The terminal report: a one-line verdict, then each finding (evidence, knobs, what will not help, why),
then coverage (files read, skipped, unreadable and why)."""

from __future__ import annotations

import io
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import clean
from triage.report.json_format import verdict

STYLE = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}
MAX_LINE = 300
MAX_FINDINGS = 12


def _short(text: str, width: int = MAX_LINE) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _finding(console: Console, i: int, f: Finding, options: RenderOptions) -> None:
    sev = STYLE.get(f.severity, "")
    count = f" ×{f.count}" if f.count > 1 else ""
    known = " [dim](known, baselined)[/dim]" if f.known else ""
    console.print(f"[{sev}]{i}. {f.severity.upper()}[/{sev}] [bold]{escape(f.category)}[/bold] "
                  f"{escape(f.title)}{count}  [dim]{escape(f.rule)}[/dim]{known}")
    for e in f.evidence[:3]:
        console.print(Text(f"   {e.file}:{e.line}  ", style="dim") + Text(_short(e.text.strip())))
    if f.count > 1 and f.first and f.last and (f.first.file, f.first.line) != (f.last.file, f.last.line):
        console.print(f"   [dim]first {escape(f.first.file)}:{f.first.line}, last {escape(f.last.file)}:{f.last.line}[/dim]")
    if f.knobs:
        parts = []
        for k in f.knobs:
            cur = (f" = {clean(k.current, options)}" + (f" [{clean(k.source, options)}]" if k.source else "")
                   if k.current is not None else "")
            alias = next((a for a in k.aliases if a.startswith("--")), "")
            parts.append(f"{k.name}{cur}" + (f" ({alias})" if alias else ""))
        console.print("   [green]inspect:[/green] " + escape("; ".join(parts)))
    if f.not_knobs:
        console.print("   [magenta]will not help:[/magenta] " + escape("; ".join(f.not_knobs)))
    if f.explain:
        console.print("   " + escape(f.explain), style="dim", highlight=False)


def _coverage(console: Console, report: Report, options: RenderOptions) -> None:
    by_status = Counter(f.status for f in report.files)
    kinds = Counter(f.kind for f in report.files if f.status == "read")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    console.print(f"[bold]coverage[/bold]: {by_status.get('read', 0)} read ({summary or 'none'}), "
                  f"{by_status.get('skipped', 0)} skipped, {by_status.get('unreadable', 0)} unreadable"
                  + (f", {by_status['partial']} partial" if by_status.get("partial") else ""))
    for f in report.files:
        if f.status != "read" or f.reason:
            console.print(f"   [dim]{escape(f.status)}[/dim] {escape(clean(f.rel, options))}: "
                          f"{escape(clean(f.reason or f.kind, options))}")
    for err in report.errors:
        console.print(f"   [yellow]note[/yellow] {escape(clean(err, options))}")


def _configuration(console: Console, report: Report, options: RenderOptions) -> None:
    """The effective configuration: each known knob, its value and where it came from (all of it with -v)."""
    if not report.config:
        return
    if not options.verbose:
        console.print(f"[bold]configuration[/bold]: {len(report.config)} knob values known (-v lists them)")
        return
    console.print("[bold]configuration[/bold] (effective value, where it came from):")
    for name, entry in report.config.items():
        line = (f"   {name} = {escape(clean(entry['value'], options))}  "
                f"[dim]{escape(clean(entry['source'], options))}[/dim]")
        req = entry.get("requested")
        if req:
            line += (f"  [dim](requested {escape(clean(req['value'], options))} in "
                     f"{escape(clean(req['source'], options))})[/dim]")
        console.print(line)


def render(report: Report, options: RenderOptions) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=options.color, no_color=not options.color, width=options.width,
                      highlight=False, soft_wrap=False)
    live = [f for f in report.findings if not f.known]
    worst = live[0].severity if live else ""
    console.print(f"[{STYLE.get(worst, 'bold green')}]triage[/]: {escape(verdict(report))}"
                  f"  [dim]({len(live)} finding{'s' if len(live) != 1 else ''}, {len(report.files)} files)[/dim]")
    shown = report.findings if options.verbose else report.findings[:MAX_FINDINGS]
    for i, f in enumerate(shown, 1):
        console.print()
        _finding(console, i, f, options)
    if len(shown) < len(report.findings):
        console.print(f"\n[dim]… {len(report.findings) - len(shown)} more (use --verbose)[/dim]")
    console.print()
    _configuration(console, report, options)
    _coverage(console, report, options)
    return buf.getvalue()
