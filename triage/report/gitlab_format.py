"""`--format gitlab`: GitLab Code Quality JSON (a list of issues; CodeClimate's subset GitLab reads).

Each live finding is one issue with a unique fingerprint (the line-number-free one), `check_name` = rule id,
severity error→critical, warning→major, info→info, and `location.path` relative to the run directory (a file
outside it, e.g. `--config ../run.yaml`, by its name alone: never an absolute or `../` path). Known (baselined)
findings are left out: GitLab compares against its own base report. Control characters are shown visibly.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import evidence_text, message, outside_named, safe_report, shown_path

SEVERITY = {"error": "critical", "warning": "major", "info": "info"}


def _issue(f: Finding, fingerprint: str) -> dict[str, Any]:
    e = f.evidence[0] if f.evidence else None
    return {
        "type": "issue",
        "check_name": f.rule,
        "description": message(f),
        "content": {"body": evidence_text(f, path=shown_path)},
        "categories": ["Bug Risk"],
        "severity": SEVERITY[f.severity],
        "fingerprint": fingerprint,
        "location": {"path": shown_path(e.file) if e else ".", "lines": {"begin": max(1, e.line) if e else 1}},
    }


def as_list(report: Report) -> list[dict[str, Any]]:
    report = outside_named(safe_report(report))
    out, seen = [], set()
    for f in report.live():
        fp = f.fingerprint
        n = 0
        while fp in seen:  # fingerprints are unique per run already; a merged report could repeat one
            n += 1
            fp = hashlib.sha256(f"{f.fingerprint}:{n}".encode()).hexdigest()[:20]
        seen.add(fp)
        out.append(_issue(f, fp))
    return out


def render(report: Report, options: RenderOptions) -> str:
    return json.dumps(as_list(report), indent=2, ensure_ascii=False) + "\n"
