"""`--format github`: workflow-command annotations for GitHub Actions.

`::error file=…,line=…,title=…::message` per finding, top-ranked first. GitHub shows at most 10 annotations
of each level per step and drops the rest without a word, so at most MAX_PER_LEVEL are printed per level and
a plain log line says how many were left out. Known (baselined) findings are not annotated. The Markdown
summary goes to $GITHUB_STEP_SUMMARY (outputs.py appends it).

Every line is either an annotation triage means or starts with `triage:`: log text sits inside a property or
the message, where `%`, CR and LF are escaped (and `:` and `,` in properties), as the runner's command parser
unescapes them, so no log line can start a command of its own. Control characters are shown visibly
(`safe_report`). `file=` is a path relative to the run directory; a file outside it (`--config ../run.yaml`)
gets no `file=` (it is not in the repository) and is named in the message.
"""

from __future__ import annotations

from collections import Counter

from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import advice, evidence_text, outside_named, run_path, safe_report, shown_path, verdict

MAX_PER_LEVEL = 10
LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding, options: RenderOptions) -> str:
    props = []
    if f.evidence and run_path(f.evidence[0].file) is not None:
        props += [f"file={_prop(shown_path(f.evidence[0].file))}", f"line={max(1, f.evidence[0].line)}"]
    count = f" ×{f.count}" if f.count > 1 else ""
    props.append(f"title={_prop(f'{f.category}: {f.title}{count}')}")
    body = f"{f.rule}\n{evidence_text(f, limit=2, path=shown_path)}\n{advice(f, options)}"
    return f"::{LEVEL[f.severity]} {','.join(props)}::{_data(body)}"


def render(report: Report, options: RenderOptions) -> str:
    report = outside_named(safe_report(report))
    shown: Counter[str] = Counter()
    left: Counter[str] = Counter()
    lines = []
    for f in report.live():
        level = LEVEL[f.severity]
        if shown[level] < MAX_PER_LEVEL:
            shown[level] += 1
            lines.append(annotation(f, options))
        else:
            left[level] += 1
    lines.append(f"triage: {verdict(report)}")
    for level, n in left.items():
        lines.append(f"triage: {n} more {level} finding(s) not annotated (GitHub shows {MAX_PER_LEVEL} per level); "
                     "see the job summary or the JSON report")
    known = len(report.findings) - len(report.live())
    if known:
        lines.append(f"triage: {known} known finding(s) hidden by the baseline")
    return "\n".join(lines) + "\n"
