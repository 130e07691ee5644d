"""`--format html`: one self-contained page for an incident: the whole Markdown summary (never cut to a
ticket's size) plus timelines.

Per engine: token usage, running and queued requests, decode throughput, with retractions ticked and the
line of each finding marked (#n as in the table); per metrics file: step times. Everything is inline (CSS,
SVG; no script) and a Content-Security-Policy forbids any fetch, so the page opens offline and a crafted log
line cannot make it load anything.
"""

from __future__ import annotations

from html import escape

from markdown_it import MarkdownIt

from triage.model import Report, Timeline
from triage.report import RenderOptions, summary, svg
from triage.report.common import clean, safe_report, verdict

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1040px;margin:0 auto;padding:16px 24px 48px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all;font-size:12px}
code{font-size:12px;background:#f6f8fa;padding:0 3px}pre code{padding:0}
.timeline{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:12px 0}
.chart-title{font-size:12px;color:#57606a;margin-top:6px}.key{margin-left:10px}
svg.chart{display:block;height:auto}
svg.chart .axis{stroke:#8c959f;stroke-width:1}svg.chart .tick{font-size:10px;fill:#57606a}
svg.chart .series{fill:none;stroke-width:1.6}
svg.chart .mark-finding line{stroke:#cf222e;stroke-dasharray:4 3}svg.chart .mark-finding text{font-size:10px;fill:#cf222e}
svg.chart .mark-retraction line{stroke:#bc4c00;stroke-width:2}
"""
REQUESTS = ("running requests", "queued requests")


def _finding_marks(report: Report, file: str) -> list[svg.Mark]:
    marks = []
    for i, f in enumerate(report.findings, 1):
        lines = {e.line for e in (f.first, f.last) if e is not None and e.file == file}
        lines |= {e.line for e in f.evidence[:1] if e.file == file}
        marks += [svg.Mark(x, f"#{i} {f.rule} line {x}", "finding") for x in sorted(lines)]
    return marks


def _charts(t: Timeline, marks: list[svg.Mark]) -> list[svg.Chart]:
    marks = marks + [svg.Mark(m["line"], f"{m['label']} at line {m['line']}", "retraction") for m in t.marks]
    if t.kind != "engine":
        return [svg.Chart(name, t.x, {name: ys}, marks) for name, ys in t.series.items()]
    out = []
    if "token usage" in t.series:
        out.append(svg.Chart("token usage", t.x, {"token usage": t.series["token usage"]}, marks, y_max=1.0))
    requests = {k: t.series[k] for k in REQUESTS if k in t.series}
    if requests:
        out.append(svg.Chart("requests", t.x, requests, marks))
    for name, ys in t.series.items():
        if name not in REQUESTS and name != "token usage":
            out.append(svg.Chart(name, t.x, {name: ys}, marks))
    return out


def _timeline(report: Report, t: Timeline, options: RenderOptions) -> str:
    charts = "".join(svg.render(c) for c in _charts(t, _finding_marks(report, t.file)))
    if not charts:
        return ""
    sampled = f", downsampled to {len(t.x)}" if len(t.x) < t.rows else ""
    return (f'<figure class="timeline" data-kind="{t.kind}" data-source="{escape(clean(t.source, options))}">'
            f'<figcaption><b>{t.kind}</b> {escape(clean(t.source, options))} · {t.rows} rows{sampled} · '
            f'x = line in {escape(clean(t.file, options))}</figcaption>{charts}</figure>')


def _timelines(report: Report, options: RenderOptions) -> str:
    body = "".join(_timeline(report, t, options) for t in report.timelines)
    if not body:
        return '<section id="timelines"><h2>Timelines</h2><p>No batch statistics or step times in these logs.</p></section>'
    return f'<section id="timelines"><h2>Timelines</h2>{body}</section>'


def render(report: Report, options: RenderOptions) -> str:
    report = safe_report(report)
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    page = md.render(summary.whole(report, options))  # never capped: a page is not a ticket comment
    head, sep, coverage = page.partition("<h2>Coverage</h2>")  # timelines before coverage, which stays last
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>triage: {escape(verdict(report))}</title><style>{STYLE}</style></head>\n"
            f'<body><main><section id="summary">{head}</section>\n{_timelines(report, options)}\n'
            f'<section id="coverage">{sep}{coverage}</section></main></body></html>\n')
