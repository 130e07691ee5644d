"""`--format sarif`: SARIF 2.1.0 for code-scanning dashboards.

One run; `tool.driver.rules` holds the rules the results use (title as short description, the explanation as
full description, explanation + knobs + what will not help as help). Each finding is one result: `ruleId`,
`level` (error / warning / note), its first evidence line as the location (URI relative to the run
directory), the line-number-free fingerprint as `partialFingerprints`, and known (baselined) findings carry
an external suppression with the baseline's reason.
"""

from __future__ import annotations

import json
from typing import Any

from triage import __version__
from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import advice, clean, evidence_text, message

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
URI_BASE = "RUNROOT"
FINGERPRINT_KEY = "triage/v1"


def _rule(f: Finding, options: RenderOptions) -> dict[str, Any]:
    help_text = advice(f, options)
    return {
        "id": f.rule,
        "name": "".join(p.capitalize() for p in f.rule.replace("-", ".").split(".")),
        "shortDescription": {"text": f.title if f.rule != "unclassified" else "Error lines no rule explains"},
        "fullDescription": {"text": " ".join(f.explain.split()) or f.title},
        "help": {"text": help_text or f.title, "markdown": help_text.replace("\n", "\n\n") or f.title},
        "defaultConfiguration": {"level": LEVEL[f.severity]},
        "properties": {"category": f.category, "tags": [f.category]},
    }


def _location(f: Finding) -> list[dict[str, Any]]:
    if not f.evidence:
        return []
    e = f.evidence[0]
    return [{"physicalLocation": {"artifactLocation": {"uri": e.file, "uriBaseId": URI_BASE},
                                  "region": {"startLine": max(1, e.line), "snippet": {"text": e.text}}}}]


def _result(f: Finding, rule_index: int, options: RenderOptions) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": LEVEL[f.severity],
        "message": {"text": message(f) + "\n" + evidence_text(f)},
        "locations": _location(f),
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        "properties": {"category": f.category, "count": f.count,
                       "knobs": [k.name for k in f.knobs], "known": f.known},
    }
    if f.known:
        reason = clean(f.baseline.get("reason") or "in the triage baseline", options)
        result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": reason}]
    return result


def as_dict(report: Report, options: RenderOptions) -> dict[str, Any]:
    rules: dict[str, int] = {}
    rule_objs: list[dict[str, Any]] = []
    results = []
    for f in report.findings:
        if f.rule not in rules:
            rules[f.rule] = len(rule_objs)
            rule_objs.append(_rule(f, options))
        results.append(_result(f, rules[f.rule], options))
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "triage", "version": __version__, "semanticVersion": __version__,
                                "rules": rule_objs}},
            "automationDetails": {"id": "triage/"},
            "results": results,
            "artifacts": [{"location": {"uri": clean(lf.rel, options), "uriBaseId": URI_BASE}} for lf in report.files
                          if lf.status == "read"],
            "invocations": [{"executionSuccessful": True,
                             "toolExecutionNotifications": [{"level": "note", "message": {"text": clean(e, options)}}
                                                            for e in report.errors]}],
        }],
    }


def render(report: Report, options: RenderOptions) -> str:
    return json.dumps(as_dict(report, options), indent=2, ensure_ascii=False) + "\n"
