"""`triage merge REPORT.json…`: JSON reports of parts of one run (one per node or shard) combined into the report
one triage would have written over all their files.

- Findings of one rule are one finding, as in a single scan (findings.py groups hits by rule): counts summed,
  severity the worst, first occurrence from the part whose file comes first in the walk order, last from the
  part whose file comes last, evidence kept from every part with the part (node) named.
- Unexplained lines (`unclassified`) merge by their template; symptoms fold into a root cause another node
  found (an actor death on node A, the OOM that caused it on node B); then the whole is ranked and
  fingerprinted again, so a baseline written for a single scan matches.
- Files, configuration and timelines are kept with their node; run figures combine (retractions add up, peaks
  take the maximum, trainer figures come from the part that has them).
- What a merge cannot redo: a check that joins signals of files on different nodes (the prompt budget from a
  config file on one node against an engine's limit on another) saw only its node's files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from triage import __version__
from triage.errors import TriageError
from triage.findings import MAX_EVIDENCE, MAX_UNCLASSIFIED, fingerprint, merge_symptoms, rank
from triage.library.rules import Library
from triage.model import SEVERITY_RANK, Evidence, Finding, Knob, LogFile, Report, Timeline
from triage.redact import redact_report
from triage.scan.scanner import FINAL_EXC
from triage.template import template

MAX_REPORT = 512 << 20  # bytes of one JSON report read; a node's report is a few MB at most


class MergeError(TriageError):
    """A report that cannot be read or comes from an incompatible version; exit code 2."""


@dataclass
class Part:
    """One node's report and the name it is known by in the merged report."""

    node: str
    report: Report


# --- reading a JSON report back -------------------------------------------------------------------------------

def _compatible(version: str) -> bool:
    """Reports of the same major.minor version share the JSON contract."""
    return version.split(".")[:2] == __version__.split(".")[:2]


def _need(d: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(d, dict) or not isinstance(d.get(key), kind):
        raise MergeError(f"{where}: '{key}' missing or of the wrong type")
    return d[key]


def _evidence(d: Any, where: str) -> Evidence | None:
    if d is None:
        return None
    return Evidence(str(_need(d, "file", str, where)), int(_need(d, "line", int, where)),
                    str(_need(d, "text", str, where)), str(d.get("node") or ""))


def _finding(d: Any, where: str) -> Finding:
    ev = [e for e in (_evidence(x, where) for x in _need(d, "evidence", list, where)) if e is not None]
    knobs = [Knob(str(_need(k, "name", str, where)), list(k.get("aliases") or []), k.get("current"),
                  str(k.get("source") or "")) for k in _need(d, "knobs", list, where)]
    severity = str(_need(d, "severity", str, where))
    if severity not in SEVERITY_RANK:
        raise MergeError(f"{where}: unknown severity {severity!r}")
    return Finding(rule=str(_need(d, "rule", str, where)), category=str(_need(d, "category", str, where)),
                   severity=severity, title=str(_need(d, "title", str, where)),
                   count=int(_need(d, "count", int, where)), evidence=ev, knobs=knobs,
                   not_knobs=[str(x) for x in d.get("not_knobs") or []], explain=str(d.get("explain") or ""),
                   numbers=dict(d.get("numbers") or {}), first=_evidence(d.get("first"), where),
                   last=_evidence(d.get("last"), where), fingerprint=str(d.get("fingerprint") or ""),
                   known=bool(d.get("known")), baseline=dict(d.get("baseline") or {}))


def _logfile(d: Any, where: str) -> LogFile:
    rel = str(_need(d, "path", str, where))
    return LogFile(path=rel, rel=rel, kind=str(d.get("kind") or "text"), status=str(d.get("status") or "read"),
                   reason=str(d.get("reason") or ""), size=int(d.get("size") or 0), lines=int(d.get("lines") or 0),
                   node=str(d.get("node") or ""))


def _timeline(d: Any, where: str) -> Timeline:
    return Timeline(source=str(_need(d, "source", str, where)), file=str(_need(d, "file", str, where)),
                    kind=str(d.get("kind") or ""), x=list(_need(d, "x", list, where)),
                    series=dict(_need(d, "series", dict, where)), marks=list(d.get("marks") or []),
                    rows=int(d.get("rows") or 0))


def from_json(data: Any, where: str) -> Report:
    """A Report from `--format json` output, checked field by field (a wrong type is an error naming it)."""
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise MergeError(f"{where}: not a triage JSON report (no 'findings' list; write one with --format json)")
    version = str(data.get("version") or "?")
    if not _compatible(version):
        raise MergeError(f"{where}: written by triage {version}; this is triage {__version__} (merge reports of "
                         f"the same major.minor version)")
    try:
        return Report(version=version, root=str(data.get("root") or ""),
                      findings=[_finding(f, where) for f in data["findings"]],
                      files=[_logfile(f, where) for f in _need(data, "files", list, where)],
                      config=dict(data.get("config") or {}), errors=[str(e) for e in data.get("errors") or []],
                      figures=dict(data.get("figures") or {}),
                      timelines=[_timeline(t, where) for t in data.get("timelines") or []])
    except (TypeError, ValueError) as e:
        raise MergeError(f"{where}: not a triage JSON report ({e})") from None


def read(path: Path) -> Report:
    """A JSON report file. Only regular files are read (a FIFO or device would block or never end)."""
    try:
        if not path.is_file():
            raise MergeError(f"{path}: not a regular file")
        if path.stat().st_size > MAX_REPORT:
            raise MergeError(f"{path}: larger than {MAX_REPORT >> 20} MiB; not a triage report")
        data = json.loads(path.read_text(encoding="utf-8"))
    except MergeError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise MergeError(f"{path}: not a triage JSON report ({type(e).__name__}: {e})") from None
    return from_json(data, str(path))


def node_name(path: Path, taken: set[str]) -> str:
    """A part's name: its file name without `.json` (node-a.json -> node-a), made unique."""
    base = path.name[:-5] if path.name.endswith(".json") else path.name
    name, n = base, 2
    while name in taken:
        name, n = f"{base}~{n}", n + 1
    taken.add(name)
    return name


# --- merging ---------------------------------------------------------------------------------------------------

def walk_key(rel: str) -> tuple[tuple[str, ...], str]:
    """Where discover's walk meets a file: a directory's own files before its subdirectories', names sorted."""
    p = PurePosixPath(rel)
    return tuple(p.parts[:-1]), p.name


def _tagged(ev: Evidence, node: str) -> Evidence:
    """Evidence named with its part, unless a merge of merges already named it."""
    return ev if ev.node or not node else Evidence(ev.file, ev.line, ev.text, node)


def _place(ev: Evidence | None, order: dict[tuple[str, str], int]) -> tuple[int, int]:
    if ev is None:
        return (len(order), 0)
    return (order.get((ev.node, ev.file), len(order)), ev.line)


def _combine(group: list[Finding], order: dict[tuple[str, str], int], unclassified: bool) -> Finding:
    """One rule's (or one template's) findings from several parts, as one."""
    group = sorted(group, key=lambda f: _place(f.first or (f.evidence[0] if f.evidence else None), order))
    head, tail = group[0], max(group, key=lambda f: _place(f.last, order))
    out = Finding(rule=head.rule, category=head.category, title=head.title, explain=head.explain,
                  severity=min((f.severity for f in group), key=SEVERITY_RANK.__getitem__),
                  count=sum(f.count for f in group), numbers=dict(head.numbers), first=head.first, last=tail.last,
                  priority=head.priority, symptom=head.symptom, knobs=head.knobs, not_knobs=head.not_knobs,
                  known=all(f.known for f in group), baseline=head.baseline)
    if not unclassified and sum(int(f.numbers.get("sources", 1)) for f in group) > 1 and any(
            "sources" in f.numbers for f in group):
        out.numbers["sources"] = sum(int(f.numbers.get("sources", 1)) for f in group)
    symptoms = [s for f in group for s in f.numbers.get("symptoms", [])]
    if symptoms:
        out.numbers["symptoms"] = list(dict.fromkeys(symptoms))
    # evidence from every part, the first part's first; bounded as a single scan bounds it
    per_part = max(1, (MAX_EVIDENCE + 2) // len(group))
    for f in group:
        for e in f.evidence[:per_part]:
            if e not in out.evidence:
                out.evidence.append(e)
    return out


def _recount(f: Finding, lib: Library) -> None:
    """A rule that is info below N occurrences (`info_below`) takes its own severity when the parts together reach N."""
    rule = lib.rule(f.rule)
    if rule is None or not rule.info_below or f.count < rule.info_below or f.severity != "info":
        return
    if SEVERITY_RANK[rule.severity] < SEVERITY_RANK["info"]:
        f.severity = rule.severity


def _figures(parts: list[Part]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for p in parts:
        for name, v in p.report.figures.items():
            old = out.get(name)
            if not isinstance(v, (int, float)):
                out.setdefault(name, v)
            elif old is None:
                out[name] = v
            elif name == "retractions":
                out[name] = old + v
            elif name.startswith("peak_"):
                out[name] = max(old, v)
    return out


def merge(parts: list[Part], lib: Library) -> Report:
    """The parts as one report. `lib` is the rule library the parts were scanned with (for priorities, symptoms
    and the unclassified category's text)."""
    if not parts:
        raise MergeError("merge: no reports given")
    files: list[LogFile] = []
    for p in parts:
        for lf in p.report.files:
            lf.node = lf.node or p.node
            files.append(lf)
    files.sort(key=lambda lf: (walk_key(lf.rel), lf.node))
    order = {(lf.node, lf.rel): i for i, lf in enumerate(files)}

    by_rule: dict[str, list[Finding]] = {}
    by_template: dict[str, list[Finding]] = {}
    for p in parts:
        for f in p.report.findings:
            f.evidence = [_tagged(e, p.node) for e in f.evidence]
            f.first = _tagged(f.first, p.node) if f.first else None
            f.last = _tagged(f.last, p.node) if f.last else None
            rule = lib.rule(f.rule)
            f.priority = rule.priority if rule else (5 if f.rule == "unclassified" else 50)
            f.symptom = bool(rule.symptom_of) if rule else False
            if f.rule == "unclassified":
                key = str(f.numbers.get("template") or template(f.title))
                by_template.setdefault(key, []).append(f)
            else:
                by_rule.setdefault(f.rule, []).append(f)

    ruled = [_combine(g, order, False) for g in by_rule.values()]
    for f in ruled:
        _recount(f, lib)
    # a single scan lists line findings by first hit, then check findings in library order (rank keeps ties so)
    index = {r.id: i for i, r in enumerate(lib.rules)}

    def listed(f: Finding) -> tuple[int, int, int]:
        rule = lib.rule(f.rule)
        if rule is not None and rule.check:
            return (1, index.get(f.rule, 0), 0)
        return (0, *_place(f.first, order))

    ruled.sort(key=listed)
    findings = merge_symptoms(lib, ruled)
    loose = [_combine(g, order, True) for g in by_template.values()]
    # as a single scan: final exception lines (`ValueError: ...`) first, then the most frequent
    loose.sort(key=lambda f: (not FINAL_EXC.match(str(f.numbers.get("template") or "")), -f.count))
    findings += loose[:MAX_UNCLASSIFIED]
    findings = rank(findings, lib.domain)
    seen: dict[str, int] = {}
    for f in findings:
        first = f.evidence[0] if f.evidence else None
        base = fingerprint(f.rule, first)
        n = seen.get(base, 0)
        seen[base] = n + 1
        f.fingerprint = base if n == 0 else fingerprint(f.rule, first, str(n))

    config: dict[str, Any] = {}
    for p in parts:
        for name, entry in p.report.config.items():
            if name not in config and isinstance(entry, dict):
                config[name] = dict(entry) | {"node": p.node}
    return Report(version=__version__, root=", ".join(f"{p.node}:{p.report.root}" for p in parts),
                  findings=findings, files=files, config=config, categories=list(lib.categories),
                  errors=[f"{p.node}: {e}" for p in parts for e in p.report.errors], figures=_figures(parts),
                  timelines=[_node_timeline(t, p.node) for p in parts for t in p.report.timelines])


def _node_timeline(t: Timeline, node: str) -> Timeline:
    t.source = f"{node}: {t.source}"
    return t


def merge_files(paths: Iterable[Path], lib: Library, redact: bool = True) -> Report:
    """The reports in these files as one. `redact`: mask secrets in the merged report (a part written with
    `--no-redact` may hold them); the merged report is built here, so here is its one redaction point."""
    taken: set[str] = set()
    report = merge([Part(node_name(p, taken), read(p)) for p in paths], lib)
    if redact:
        redact_report(report)
    return report
