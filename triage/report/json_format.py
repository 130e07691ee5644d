"""`--format json`: the contract other tools read (findings in rank order, files with their status)."""

from __future__ import annotations

import json

from ..model import Report
from . import RenderOptions


def as_dict(report: Report) -> dict[str, object]:
    return {
        "version": report.version,
        "root": report.root,
        "verdict": verdict(report),
        "findings": [f.to_dict() | {"known": f.known} for f in report.findings],
        "files": [{"path": f.rel, "kind": f.kind, "status": f.status, "reason": f.reason, "lines": f.lines,
                   "size": f.size} for f in report.files],
        "config": report.config,
        "errors": report.errors,
    }


def verdict(report: Report) -> str:
    live = [f for f in report.findings if not f.known]
    if not live:
        return "no problems found"
    top = live[0]
    return f"{top.severity}: {top.category}: {top.title}"


def render(report: Report, options: RenderOptions) -> str:
    return json.dumps(as_dict(report), indent=2, default=str) + "\n"
