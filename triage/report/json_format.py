"""`--format json`: the contract other tools read (findings in rank order, files with their status, run figures
and compact timelines). `triage diff` reads it back."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import safe_report, verdict


def _finding(f: Finding) -> dict[str, Any]:
    return f.to_dict() | {"known": f.known, "baseline": f.baseline}


def as_dict(report: Report) -> dict[str, object]:
    """The report as JSON data. Nothing is redacted here: a report is redacted once, when it is built
    (analyze, merge), and formats only render it."""
    return {
        "version": report.version,
        "root": report.root,
        "verdict": verdict(report),
        "findings": [_finding(f) for f in report.findings],
        "files": [{"path": f.rel, "kind": f.kind, "status": f.status, "reason": f.reason, "lines": f.lines,
                   "size": f.size} | ({"node": f.node} if f.node else {}) for f in report.files],
        "config": report.config,
        "errors": report.errors,
        "figures": report.figures,
        "timelines": [t.to_dict() for t in report.timelines],
    }


def _flat(value: Any) -> bool:
    """A value written on one line: a scalar, or an array of scalars (a timeline's points)."""
    if isinstance(value, (list, tuple)):
        return all(not isinstance(v, (dict, list, tuple)) for v in value)
    return not isinstance(value, dict) or not value


_encode = json.JSONEncoder(default=str, ensure_ascii=True).encode  # json.dumps(v, default=str) makes an encoder
# a call: a run of 200 k files asks it 1.4 M times


def _value(v: Any, level: int) -> str:
    """One value of a dict: a string or a whole number (every value of a file's entry: path, kind, status, reason,
    lines, size; a run of 200 k files has 1.2 M of them) written straight, the rest by dumps."""
    t = type(v)
    if t is str:
        return encode_basestring_ascii(v)
    if t is int:
        return int.__repr__(v)
    return dumps(v, level)


def dumps(value: Any, level: int = 0) -> str:
    """JSON indented by two spaces, except that arrays of scalars stay on one line: a timeline's thousand
    points read as one row, and they are encoded by json's C encoder (an indented dump is pure Python)."""
    if _flat(value):
        return _encode(value)
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, dict):
        items = [f"{inner}{encode_basestring_ascii(k if isinstance(k, str) else json.dumps(k))}: {_value(v, level + 1)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    return "[\n" + ",\n".join(f"{inner}{dumps(v, level + 1)}" for v in value) + f"\n{pad}]"


def render(report: Report, options: RenderOptions) -> str:
    return dumps(as_dict(safe_report(report))) + "\n"
