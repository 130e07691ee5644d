"""`--format junit`: one testsuite, one testcase per category (the six, `other`, `unclassified`).

A testcase fails when its category holds a finding at or above the gate (`--fail-on`) that no baseline
hides; the failure text lists those findings with evidence and knobs. Findings below the gate and known
ones are listed in the testcase's system-out, so the CI page shows them without failing.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import advice, clean, evidence_text, gating, message

# XML 1.0 forbids most control characters even as references; a log line can hold them.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _x(text: str) -> str:
    return NOT_XML.sub("?", text)


def _block(f: Finding, options: RenderOptions) -> str:
    known = " (known, baselined)" if f.known else ""
    return _x(f"{f.severity.upper()}{known}: {message(f)}\n{evidence_text(f)}\n{advice(f, options)}")


def _testcase(suite: ET.Element, category: str, findings: list[Finding], options: RenderOptions) -> bool:
    case = ET.SubElement(suite, "testcase", classname="triage", name=category, time="0")
    failing = [f for f in findings if gating(f, options.fail_on)]
    if failing:
        top = failing[0]
        failure = ET.SubElement(case, "failure", type=top.rule,
                                message=_x(f"{len(failing)} finding(s) at or above {options.fail_on}: {message(top)}"))
        failure.text = "\n\n".join(_block(f, options) for f in failing)
    shown = {id(f) for f in failing}
    rest = [f for f in findings if id(f) not in shown]
    if rest:
        ET.SubElement(case, "system-out").text = "\n\n".join(_block(f, options) for f in rest)
    return bool(failing)


def render(report: Report, options: RenderOptions) -> str:
    categories = list(dict.fromkeys([*report.categories, *(f.category for f in report.findings)]))
    root = ET.Element("testsuites", name="triage")
    suite = ET.SubElement(root, "testsuite", name=_x(f"triage {clean(report.root, options)}"), tests=str(len(categories)),
                          errors="0", skipped="0", time="0")
    failures = 0
    for cat in categories:
        failures += _testcase(suite, cat, [f for f in report.findings if f.category == cat], options)
    suite.set("failures", str(failures))
    root.set("tests", str(len(categories)))
    root.set("failures", str(failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
