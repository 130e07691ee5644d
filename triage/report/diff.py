"""`triage diff OLD NEW`: the nightly comparison of two runs (run directories or JSON reports).

Findings match by their line-number-free fingerprint: new (only in NEW), resolved (only in OLD),
persisting (both). Run figures (see figures.py) regress when NEW is worse than OLD by more than a
tolerance: `new > old * (1 + rel) + abs`, so noise between two healthy nights stays quiet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage.errors import TriageError
from triage.input.read import visible
from triage.redact import redact, redact_value
from triage.report.figures import FIGURES

# figure -> (relative, absolute) tolerance, and how to print it
TOLERANCE = {
    "retractions": (0.2, 0.0),
    "peak_token_usage": (0.0, 0.05),
    "peak_queue": (0.5, 5.0),
    "first_step_time": (0.2, 10.0),
    "step_time": (0.2, 1.0),
    "truncation_ratio": (0.0, 0.05),
}


class DiffError(TriageError):
    """A side that is neither a run directory nor a triage JSON report; exit code 2."""


@dataclass
class Diff:
    old: str
    new: str
    new_findings: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[dict[str, Any]] = field(default_factory=list)
    persisting: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    regressions: list[str] = field(default_factory=list)  # names of figures that got worse

    def as_dict(self) -> dict[str, Any]:
        return {"old": redact(self.old), "new": redact(self.new), "new_findings": self.new_findings,
                "resolved": self.resolved, "persisting": self.persisting, "regressions": self.regressions,
                "figures": {k: {"old": o, "new": n} for k, (o, n) in self.figures.items()}}


FINDING_TEXT = ("fingerprint", "rule", "category", "severity", "title")  # what comparing and printing read


def _finding_problem(f: Any) -> str:
    if not isinstance(f, dict):
        return "is not an object"
    for key in FINDING_TEXT:
        if not isinstance(f.get(key), str):
            return f"'{key}' is not a string"
    ev = f.get("evidence")
    if ev is not None and (not isinstance(ev, list) or not all(isinstance(e, dict) for e in ev)):
        return "'evidence' is not a list of objects"
    if ev and not all(isinstance(ev[0].get(k), (str, int, type(None))) for k in ("file", "line")):
        return "evidence 'file'/'line' are not a string and a number"
    if not isinstance(f.get("known", False), (bool, type(None))):
        return "'known' is not true or false"
    return ""


def checked(data: Any, where: str) -> dict[str, Any]:
    """A report (JSON or an export) fit to compare, its text redacted; DiffError naming what is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise DiffError(f"{where}: not a triage JSON report (no 'findings' list; write one with --format json)")
    for i, f in enumerate(data["findings"]):
        problem = _finding_problem(f)
        if problem:
            raise DiffError(f"{where}: not a triage JSON report: finding {i + 1}: {problem}")
    figures = data.get("figures")
    if figures is not None and not isinstance(figures, dict):
        raise DiffError(f"{where}: not a triage JSON report: 'figures' is not an object")
    numbers = {k: v for k, v in (figures or {}).items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}  # the figures compared are numbers
    return {"findings": redact_value(data["findings"]), "figures": numbers}


def read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise DiffError(f"{path}: not a triage JSON report (nested too deeply)") from None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise DiffError(f"{path}: not a triage JSON report ({e})") from None
    return checked(data, str(path))


def regressed(name: str, old: Any, new: Any) -> bool:
    if not isinstance(new, (int, float)) or not isinstance(old, (int, float)):
        return False
    rel, abs_ = TOLERANCE.get(name, (0.2, 0.0))
    return new > old * (1 + rel) + abs_


def compare(old: dict[str, Any], new: dict[str, Any], old_name: str, new_name: str) -> Diff:
    before = {f["fingerprint"]: f for f in old["findings"]}
    after = {f["fingerprint"]: f for f in new["findings"]}
    d = Diff(old_name, new_name)
    d.new_findings = [f for fp, f in after.items() if fp not in before]
    d.resolved = [f for fp, f in before.items() if fp not in after]
    d.persisting = [f for fp, f in after.items() if fp in before]
    fo, fn = old.get("figures") or {}, new.get("figures") or {}
    for name in FIGURES:
        d.figures[name] = (fo.get(name), fn.get(name))
        if regressed(name, fo.get(name), fn.get(name)):
            d.regressions.append(name)
    return d


def _line(f: dict[str, Any]) -> str:
    """One finding on one line; a report read from a file may hold anything, so its control characters show."""
    ev = f.get("evidence") or [{}]
    where = f"{ev[0].get('file')}:{ev[0].get('line')}" if ev[0] else ""
    known = " (known)" if f.get("known") else ""
    return visible(f"  {f['severity'].upper():7} {f['category']:22} {f['title']}  {where}  {f['rule']}{known}")


def _num(v: Any) -> str:
    return "–" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


def text(d: Diff) -> str:
    """The comparison for a person; every name from the two sides redacted (a run dir's path may hold a token)."""
    out = [f"triage diff: {len(d.new_findings)} new, {len(d.resolved)} resolved, {len(d.persisting)} persisting, "
           f"{len(d.regressions)} regression(s)  ({visible(redact(d.old))} -> {visible(redact(d.new))})"]
    for title, items in (("new", d.new_findings), ("resolved", d.resolved), ("persisting", d.persisting)):
        if items:
            out.append(f"\n{title}:")
            out += [_line(f) for f in items]
    out.append("\nrun figures (old -> new):")
    for name, (o, n) in d.figures.items():
        flag = "  REGRESSED" if name in d.regressions else ""
        out.append(f"  {name:18} {_num(o):>10} -> {_num(n):<10}{flag}".rstrip())
    return "\n".join(out) + "\n"
