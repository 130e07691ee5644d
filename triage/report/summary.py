"""The Markdown summary of a report: what `--format markdown` prints (bounded), what the HTML page holds (whole)
and what goes to a GitHub job summary.

Verdict line, a findings table (category, severity, count, where), then per finding its evidence in a code
block, the knobs to inspect with their current values, what will not help and why; known (baselined)
findings; coverage last. `bounded` keeps it within a number of characters by showing fewer finding details,
table rows and coverage lines until it fits, and says what was left out.

Log text stays text in any CommonMark/GFM renderer: markup characters are escaped, a `|` inside a table cell
is `\\|` even inside a code span (GFM splits cells before it reads code spans), no log text starts a line with
list, heading, quote or `::` syntax (a GitHub Actions workflow command if the file is printed in a CI step).
"""

from __future__ import annotations

import re
from collections import Counter

from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import clean, coverage_counts, knob_text, line_path, phrase, verdict, where

# (finding details, table rows, coverage lines) tried in turn until the summary fits
LEVELS = ((50, 500, 200), (20, 200, 50), (10, 100, 20), (5, 50, 10), (3, 20, 5), (1, 10, 3), (0, 5, 0))
EVIDENCE_WIDTH = 500
PUNCT = re.compile(r"([\\`*_\[\]<>|~&])")  # inline markup, links, raw HTML, table cells, entities
LINE_START = re.compile(r"^([-+#>=:]|\d+[.)])")  # would start a list, heading, quote, setext underline or `::`


def esc(text: str) -> str:
    """Plain text for a Markdown line or table cell: no markup, no raw HTML, no line breaks."""
    text = PUNCT.sub(r"\\\1", " ".join(text.split()))
    return LINE_START.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], text)


def code(text: str) -> str:
    """Inline code that survives backticks in the text."""
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or run else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: str) -> str:
    """Inline code inside a table cell: GFM splits the row at every unescaped `|`, code spans included."""
    return code(text).replace("|", "\\|")


def fenced(lines: list[str]) -> list[str]:
    body = "\n".join(lines)
    run = max((len(m) for m in re.findall(r"`{3,}", body)), default=2)
    fence = "`" * (run + 1)
    return [fence + "text", body, fence]


def _table(findings: list[Finding], rows: int) -> list[str]:
    out = ["| # | category | severity | count | where | rule |", "|---:|---|---|---:|---|---|"]
    for i, f in enumerate(findings[:rows], 1):
        known = " (known)" if f.known else ""
        out.append(f"| {i} | {esc(f.category)} | {f.severity}{known} | {f.count} | "
                   f"{cell(where(f)) if f.evidence else '–'} | {cell(f.rule)} |")
    if len(findings) > rows:
        out.append(f"\n… and {len(findings) - rows} more finding(s), left out to keep this summary short "
                   "(the JSON report has them all).")
    return out


def _detail(i: int, f: Finding, options: RenderOptions) -> list[str]:
    out = [f"### {i}. {f.severity.upper()} · {esc(f.category)} · {esc(f.title)}", ""]
    span = ""
    if f.count > 1 and f.first and f.last:
        span = f" · first {code(f'{f.first.file}:{f.first.line}')}, last {code(f'{f.last.file}:{f.last.line}')}"
    out += [f"{code(f.rule)} · ×{f.count}{span}", ""]
    if f.evidence:
        lines = [f"{line_path(e.file)}:{e.line}  {e.text.strip()[:EVIDENCE_WIDTH]}" for e in f.evidence]
        out += fenced(lines) + [""]
    if f.knobs:
        out.append("**Inspect:**")
        out += ["- " + knob_text(k, options, code=code, plain=esc) for k in f.knobs]
        out.append("")
    if f.not_knobs:
        out += ["**Will not help:** " + esc("; ".join(phrase(n) for n in f.not_knobs)), ""]
    if f.explain:
        out += [esc(f.explain), ""]
    return out


def _known(findings: list[Finding], options: RenderOptions) -> list[str]:
    if not findings:
        return []
    out = ["## Known (baselined, not gating)", "", "| rule | where | reason | ticket | expires |", "|---|---|---|---|---|"]
    for f in findings:
        b = f.baseline
        out.append(f"| {cell(f.rule)} | {cell(where(f)) if f.evidence else '–'} | {esc(clean(b.get('reason'), options))} | "
                   f"{esc(clean(b.get('ticket'), options))} | {esc(str(b.get('expires') or ''))} |")
    return out + [""]


def _coverage(report: Report, lines: int, options: RenderOptions) -> list[str]:
    out = ["## Coverage", "", f"{esc(coverage_counts(report))}.", ""]
    notes = [f"- {f.status} {code(clean(f.rel, options))}: {esc(clean(f.reason or f.kind, options))}"
             for f in report.files if f.status != "read" or f.reason]
    notes += [f"- note: {esc(clean(e, options))}" for e in report.errors]
    out += notes[:lines]
    if len(notes) > lines:
        out.append(f"- … {len(notes) - lines} more")
    return out


def _build(report: Report, options: RenderOptions, details: int, rows: int, cov: int) -> str:
    active = report.live()
    counts = Counter(f.severity for f in active)
    known = [f for f in report.findings if f.known]
    tally = ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts[s]) or "none"
    out = [f"## triage: {esc(verdict(report))}", "",
           f"{len(active)} finding(s) ({tally}){f', {len(known)} known' if known else ''} in "
           f"{code(clean(report.root, options))}, {len(report.files)} file(s).", ""]
    if report.findings:
        out += _table(report.findings, rows) + [""]
    numbered = [(i, f) for i, f in enumerate(report.findings, 1) if not f.known]  # numbers as in the table
    for i, f in numbered[:details]:
        out += _detail(i, f, options)
    if len(active) > details:
        out += [f"Details of {len(active) - details} more finding(s) left out to keep this summary short.", ""]
    out += _known(known, options)
    out += _coverage(report, cov, options)
    return "\n".join(out) + "\n"


def whole(report: Report, options: RenderOptions) -> str:
    """Every finding's details, every table row and coverage line (the HTML page)."""
    n = len(report.findings)
    return _build(report, options, n, n, len(report.files) + len(report.errors))


def bounded(report: Report, options: RenderOptions, limit: int) -> str:
    """At most `limit` characters: fewer details, rows and coverage lines until it fits, saying what was left
    out; past the last level, cut at the limit with a note saying so."""
    for details, rows, cov in LEVELS:
        text = _build(report, options, details, rows, cov)
        if len(text) <= limit:
            return text
    note = f"\n\n… (cut at {limit:,} characters; the JSON report has everything)\n"
    return text[: max(0, limit - len(note))] + note
