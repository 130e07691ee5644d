"""`--format sarif`: SARIF 2.1.0 for code-scanning dashboards.

One run; `tool.driver.rules` holds the rules the results use (title as short description, the explanation as
full description, explanation + knobs + what will not help as help). Each finding is one result: `ruleId`,
`level` (error / warning / note), its first evidence line as the location, the line-number-free fingerprint as
`partialFingerprints` (also as `primaryLocationLineHash`, the one GitHub code scanning reads: it cannot hash
the line itself, the log is not in the repository), and known (baselined) findings carry an external
suppression with the baseline's reason.

Locations are URI references relative to a base (SARIF 2.1.0 §3.4.4): a file under the run directory is relative
to `RUNROOT`; a file outside it (`--config ../run.yaml`, `/etc/run.yaml`) is relative to a base of its own
directory (`EXTERNAL_1`, …), so no absolute or `../` path is published. Each path segment is percent-encoded
(RFC 3986 §2.1, §3.3: a space, `%`, `:`, `#`, `?`, control text and non-ASCII bytes as `%XX` of their UTF-8), so
`a b:1%.log` is `a%20b%3A1%25.log` and decodes back to the same name. `runAutomationDetails.id` is set only
from `--sarif-category` (code scanning keeps one analysis per category and commit: two uploads with one id
replace each other).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any
from urllib.parse import quote

from triage import __version__
from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import (
    advice,
    clean,
    evidence_text,
    knob_text,
    message,
    outside_named,
    phrase,
    run_path,
    safe_report,
    shown_path,
)
from triage.report.summary import code, esc

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
URI_BASE = "RUNROOT"
EXTERNAL_BASE = "EXTERNAL_{}"
FINGERPRINT_KEY = "triage/v1"
# RFC 3986 pchar = unreserved / pct-encoded / sub-delims / ":" / "@"; ":" is encoded too, since in the first
# segment of a relative reference it would read as a scheme (§4.2).
SEGMENT_SAFE = "!$&'()*+,;=@"


def uri_of(path: str) -> str:
    """A relative path as a URI reference, each segment percent-encoded."""
    return "/".join(quote(seg, safe=SEGMENT_SAFE) for seg in path.split("/"))


class Bases:
    """Where each report path lives: `RUNROOT` for the run directory, one `EXTERNAL_n` per outside directory."""

    def __init__(self) -> None:
        self.external: dict[str, str] = {}  # outside directory -> base id

    def locate(self, file: str) -> dict[str, str]:
        rel = run_path(file)
        if rel is not None:
            return {"uri": uri_of(rel), "uriBaseId": URI_BASE}
        parent = posixpath.dirname(file.rstrip("/"))
        base = self.external.setdefault(parent, EXTERNAL_BASE.format(len(self.external) + 1))
        return {"uri": uri_of(posixpath.basename(file.rstrip("/")) or "_"), "uriBaseId": base}

    def described(self) -> dict[str, Any]:
        out: dict[str, Any] = {URI_BASE: {"description": {
            "text": "The run directory triage read (the path given on its command line)."}}}
        for base in self.external.values():
            out[base] = {"description": {"text": "A directory outside the run directory (e.g. of --config); its "
                                                 "path is not published."}}
        return out


def _help_markdown(f: Finding, options: RenderOptions) -> str:
    """The help as Markdown (code scanning renders it): knob names and values as code, other text escaped, so a
    value read from a log or config cannot add markup, links or HTML."""
    parts = []
    if f.knobs:
        parts.append("**Inspect:** " + "; ".join(knob_text(k, options, code=code, plain=esc) for k in f.knobs))
    if f.not_knobs:
        parts.append("**Will not help:** " + esc("; ".join(phrase(n) for n in f.not_knobs)))
    if f.explain:
        parts.append(esc(f.explain))
    return "\n\n".join(parts) or esc(f.title)


def _rule(f: Finding, options: RenderOptions) -> dict[str, Any]:
    help_text = advice(f, options)
    return {
        "id": f.rule,
        "name": "".join(p.capitalize() for p in f.rule.replace("-", ".").split(".")),
        "shortDescription": {"text": f.title if f.rule != "unclassified" else "Error lines no rule explains"},
        "fullDescription": {"text": " ".join(f.explain.split()) or f.title},
        "help": {"text": help_text or f.title, "markdown": _help_markdown(f, options)},
        "defaultConfiguration": {"level": LEVEL[f.severity]},
        "properties": {"category": f.category, "tags": [f.category]},
    }


def _location(f: Finding, bases: Bases) -> list[dict[str, Any]]:
    if not f.evidence:
        return []
    e = f.evidence[0]
    return [{"physicalLocation": {"artifactLocation": bases.locate(e.file),
                                  "region": {"startLine": max(1, e.line), "snippet": {"text": e.text}}}}]


def _result(f: Finding, rule_index: int, options: RenderOptions, bases: Bases) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": LEVEL[f.severity],
        "message": {"text": message(f) + "\n" + evidence_text(f, path=shown_path)},
        "locations": _location(f, bases),
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint, "primaryLocationLineHash": f.fingerprint},
        "properties": {"category": f.category, "count": f.count,
                       "knobs": [k.name for k in f.knobs], "known": f.known},
    }
    if f.known:
        reason = clean(f.baseline.get("reason") or "in the triage baseline", options)
        result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": reason}]
    return result


def automation_id(category: str) -> str:
    """`runAutomationDetails.id` for a category: GitHub reads the part before the last `/` as the category."""
    return category if category.endswith("/") else category + "/"


def as_dict(report: Report, options: RenderOptions) -> dict[str, Any]:
    report = outside_named(safe_report(report))
    bases = Bases()
    rules: dict[str, int] = {}
    rule_objs: list[dict[str, Any]] = []
    results = []
    for f in report.findings:
        if f.rule not in rules:
            rules[f.rule] = len(rule_objs)
            rule_objs.append(_rule(f, options))
        results.append(_result(f, rules[f.rule], options, bases))
    artifacts = [{"location": bases.locate(clean(lf.rel, options))} for lf in report.files if lf.status == "read"]
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "triage", "version": __version__, "semanticVersion": __version__,
                            "rules": rule_objs}},
        "originalUriBaseIds": bases.described(),
        "results": results,
        "artifacts": artifacts,
        "invocations": [{"executionSuccessful": True,
                         "toolExecutionNotifications": [{"level": "note", "message": {"text": clean(e, options)}}
                                                        for e in report.errors]}],
    }
    if options.sarif_category:
        run["automationDetails"] = {"id": automation_id(options.sarif_category)}
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def render(report: Report, options: RenderOptions) -> str:
    return json.dumps(as_dict(report, options), indent=2, ensure_ascii=False) + "\n"
