"""What several formats say the same way: the gate, a finding's location and one-line message, knob text."""

from __future__ import annotations

from typing import Any

from triage.model import Finding, Knob, Report
from triage.redact import redact
from triage.report import RenderOptions
from triage.report.gate import at_gate


def gating(f: Finding, fail_on: str) -> bool:
    return not f.known and at_gate(f.severity, fail_on)


def live(report: Report) -> list[Finding]:
    return [f for f in report.findings if not f.known]


def clean(value: Any, options: RenderOptions) -> str:
    """Any text not already redacted by findings.py (config values, sources, paths, notes) on its way out."""
    text = "" if value is None else str(value)
    return redact(text) if options.redact else text


def where(f: Finding) -> str:
    return f"{f.evidence[0].file}:{f.evidence[0].line}" if f.evidence else ""


def message(f: Finding) -> str:
    """One line: title, count, category and rule; what annotations and tool messages print."""
    count = f" (×{f.count})" if f.count > 1 else ""
    return f"{f.title}{count} [{f.category}, {f.rule}]"


def knob_text(k: Knob, options: RenderOptions) -> str:
    """`name = value (--flag; from source)`: the value the logs show and where they show it."""
    alias = next((a for a in k.aliases if a.startswith("--")), "")
    cur = f" = {clean(k.current, options)}" if k.current is not None else ""
    notes = "; ".join(x for x in (alias, f"from {clean(k.source, options)}" if k.source else "") if x)
    return f"{k.name}{cur}" + (f" ({notes})" if notes else "")


def advice(f: Finding, options: RenderOptions) -> str:
    """Inspect / will-not-help / why, as plain text lines (failure bodies, help texts, annotations)."""
    lines = []
    if f.knobs:
        lines.append("inspect: " + "; ".join(knob_text(k, options) for k in f.knobs))
    if f.not_knobs:
        lines.append("will not help: " + "; ".join(f.not_knobs))
    if f.explain:
        lines.append(" ".join(f.explain.split()))
    return "\n".join(lines)


def evidence_text(f: Finding, limit: int = 4, width: int = 400) -> str:
    out = []
    for e in f.evidence[:limit]:
        text = e.text.strip()
        out.append(f"{e.file}:{e.line}  " + (text if len(text) <= width else text[: width - 1] + "…"))
    return "\n".join(out)
