"""Run every rule's own examples: `match` lines must match, `no_match` lines must not.

A line rule's examples test its regex. A check rule's examples are small logs: the `match` lines, read as
one file, must make the check fire; the `no_match` lines must not.
"""

from __future__ import annotations

from pathlib import Path

from triage.checks import CHECKS, Run
from triage.effective_config import build_config
from triage.input.read import read_text
from triage.library.rules import Library, Rule
from triage.model import LogFile
from triage.parsers import results
from triage.scan.scanner import Scanner, number, thresholds_hold


def check_fires(lib: Library, rule: Rule, lines: list[str]) -> bool:
    scanner = Scanner(lib)
    lf = LogFile(path="<example>", rel="<example>", kind="text")
    res = scanner.scan(lf, read_text(("\n".join(lines) + "\n").encode()))
    cfg = build_config(lib, res.events, res.hits)
    events = res.events + results.example_events(lines)  # a per-sample results table, for its checks
    return bool(CHECKS[rule.check](rule.params, Run(engines=res.engines, events=events, config=cfg)))


def line_matches(rule: Rule, line: str) -> bool:
    """The rule's regex matches and its thresholds (`when`) hold on the extracted numbers (TimeoutError when
    the regex runs away)."""
    m = rule.search(line)
    if not m:
        return False
    numbers = {k: number(v) for k, v in m.groupdict().items() if v is not None}
    return thresholds_hold(rule.when, numbers)


def rule_problems(lib: Library, rule: Rule) -> list[str]:
    problems = []
    if rule.check:
        if rule.check not in CHECKS:
            return [f"{rule.origin}: rule {rule.id}: unknown check '{rule.check}'"]
        if rule.examples.get("match") and not check_fires(lib, rule, rule.examples["match"]):
            problems.append(f"{rule.origin}: rule {rule.id}: check did not fire on its 'match' example log")
        if rule.examples.get("no_match") and check_fires(lib, rule, rule.examples["no_match"]):
            problems.append(f"{rule.origin}: rule {rule.id}: check fired on its 'no_match' example log")
        return problems
    try:
        for line in rule.examples.get("match", []):
            if not any(a in line for a in rule.anchors):
                problems.append(f"{rule.origin}: rule {rule.id}: example holds none of the anchors: {line[:80]!r}")
            elif not line_matches(rule, line):
                problems.append(f"{rule.origin}: rule {rule.id}: should match: {line[:100]!r}")
        for line in rule.examples.get("no_match", []):
            if line_matches(rule, line):
                problems.append(f"{rule.origin}: rule {rule.id}: should not match: {line[:100]!r}")
    except TimeoutError:
        problems.append(f"{rule.origin}: rule {rule.id}: match regex timed out on its own example "
                        f"(catastrophic backtracking)")
    return problems


def check_examples(lib: Library, only_dir: Path | None = None) -> list[str]:
    problems = []
    for rule in lib.rules:
        if only_dir is not None and not rule.origin.startswith(str(only_dir)):
            continue
        problems.extend(rule_problems(lib, rule))
    return problems
