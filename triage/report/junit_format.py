"""`--format junit`: one testsuite; one testcase per finding, grouped by category (`classname` = `triage.<category>`),
and one passing `no findings` testcase for each category that has none, so every category is visibly checked.

A finding's testcase fails when it is at or above the gate (`--fail-on`) and no baseline hides it; a known
(baselined) finding is `skipped` with the baseline's reason; one below the gate passes, its details in
`system-out`. The name is `<rule> in <file>`, without a line number, so a CI server's test history follows one
problem from run to run.

Why one testcase per finding rather than per category: GitLab shows a testcase's text only when it failed, errored
or was skipped (a passing testcase's `system-out` is not shown at all), and Jenkins cuts a passing testcase's
`system-out` to its first and last 500 characters. A category holding several findings below the gate would
show one or two of them; as testcases of their own each is listed by name in both, with its status, and each
block puts the summary line and the first evidence line first, where Jenkins keeps them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from triage.model import Finding, Report
from triage.report import RenderOptions
from triage.report.common import (
    COMMAND_START,
    clean,
    evidence_text,
    gating,
    knob_text,
    message,
    phrase,
    safe_report,
    shown_path,
)

# XML 1.0 forbids most control characters even as references; safe_report has shown them all visibly already.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
WIDTH_FIRST = 200  # the first evidence line, shortened so the knobs stay within Jenkins' first 500 characters


def _x(text: str) -> str:
    return NOT_XML.sub("?", text)


def _block(f: Finding, options: RenderOptions) -> str:
    """Summary, the first evidence line (shortened), what to inspect and what will not help, then the rest: in
    a passing testcase Jenkins keeps the first and last 500 characters, so what matters most comes first."""
    known = " (known, baselined)" if f.known else ""
    lines = [f"{f.severity.upper()}{known}: {message(f)}", evidence_text(f, limit=1, width=WIDTH_FIRST, path=shown_path)]
    if f.knobs:
        lines.append("inspect: " + "; ".join(knob_text(k, options) for k in f.knobs))
    if f.not_knobs:
        lines.append("will not help: " + "; ".join(phrase(n) for n in f.not_knobs))
    if len(f.evidence) > 1 or (f.evidence and len(f.evidence[0].text.strip()) > WIDTH_FIRST):
        lines.append("evidence:\n" + evidence_text(f, limit=4, path=shown_path))
    if f.explain:
        lines.append(" ".join(f.explain.split()))
    return _x("\n".join(line for line in lines if line))


def _name(f: Finding, taken: set[str]) -> str:
    base = f"{f.rule} in {shown_path(f.evidence[0].file)}" if f.evidence else f.rule
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base} ({n})"
    taken.add(name)
    return _x(name)


def _testcase(suite: ET.Element, f: Finding, taken: set[str], options: RenderOptions) -> str:
    """One finding's testcase; returns its outcome: failed, skipped or passed."""
    case = ET.SubElement(suite, "testcase", classname=f"triage.{f.category}", name=_name(f, taken), time="0")
    if gating(f, options.fail_on):
        failure = ET.SubElement(case, "failure", type=f.rule,
                                message=_x(f"{f.severity} at or above --fail-on {options.fail_on}: {message(f)}"))
        failure.text = _block(f, options)
        return "failed"
    if f.known:
        reason = clean(f.baseline.get("reason") or "in the triage baseline", options)
        ET.SubElement(case, "skipped", message=_x(f"known (baselined): {reason}")).text = _block(f, options)
        return "skipped"
    ET.SubElement(case, "system-out").text = _block(f, options)
    return "passed"


def _defuse(xml: str) -> str:
    """No line of the file starts a GitHub Actions workflow command when it is printed in a CI step: a text line
    that would gets its first `:` as a character reference (the same text to any XML reader)."""
    def one(line: str) -> str:
        m = COMMAND_START.match(line)
        if not m:
            return line
        i = m.end() - 2
        return line[:i] + "&#58;" + line[i + 1:]
    return "\n".join(one(line) for line in xml.split("\n"))


def render(report: Report, options: RenderOptions) -> str:
    report = safe_report(report)
    root = ET.Element("testsuites", name="triage")
    suite = ET.SubElement(root, "testsuite", name=_x(f"triage {clean(report.root, options)}"), errors="0", time="0")
    # the library's categories in order, then any a finding carries that the library did not list
    categories = list(dict.fromkeys([*report.categories, *(f.category for f in report.findings)]))
    outcomes: list[str] = []
    taken: set[str] = set()
    for cat in categories:
        findings = [f for f in report.findings if f.category == cat]
        if not findings:
            ET.SubElement(suite, "testcase", classname=f"triage.{cat}", name="no findings", time="0")
            outcomes.append("passed")
        outcomes += [_testcase(suite, f, taken, options) for f in findings]
    for el in (root, suite):
        el.set("tests", str(len(outcomes)))
        el.set("failures", str(outcomes.count("failed")))
    suite.set("skipped", str(outcomes.count("skipped")))
    ET.indent(root)
    return _defuse('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")
