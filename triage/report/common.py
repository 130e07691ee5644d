"""What every format says the same way: the verdict, the gate, a finding's location and one-line message, knob
text, coverage counts, and the two guards every format applies to what it prints:

- `safe_report` shows every control character of a report's text visibly (`\\x1b`), so no output, in a terminal or
  in a file, can carry a terminal escape (OSC 52 clipboard writes, window titles), a bell or a backspace, whatever
  built the report (read.py already does this for log lines; a report built through the library API may not);
  it shows the second `#` of `##[` as `\\x23` too: the GitHub Actions runner obeys a legacy `##[command]` found
  anywhere in a line (`##[error]`, `##[stop-commands]`, `##[add-mask]`), whatever the line starts with;
- `run_path` / `shown_path` keep file paths relative to the run directory and stop a path from starting a line
  with `::` (a GitHub Actions workflow command when the output is printed in a CI step).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from triage.model import Evidence, Finding, Knob, LogFile, Report, Timeline
from triage.prefixes import writer_of
from triage.report import RenderOptions
from triage.report.gate import at_gate

# C0 except tab, DEL, C1 (ECMA-48: ESC/CSI/OSC/BEL/BS are all in these ranges), the Unicode line and paragraph
# separators (line breaks to some terminals and editors), the bidirectional embedding/override/isolate controls
# (they reorder what a reader sees: CVE-2021-42574) and lone surrogates (not encodable as UTF-8).
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# A line the GitHub Actions runner reads as a command: `::name …::` after leading white space is trimmed
# (actions/runner ActionCommand.TryParseV2: `message.TrimStart()` then `StartsWith("::")`).
COMMAND_START = re.compile(r"^\s*::")
# The legacy form, `##[name]data`, is found anywhere in a line (ActionCommand.TryParse: `message.IndexOf("##[")`).
LEGACY_COMMAND = "##["


def visible(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def safe_text(value: Any) -> str:
    """Text with every control character shown as an escape (`\\x1b`, `\\x07`, `\\u202e`), and `##[` as `#\\x23[`:
    printable, inert in a terminal and in a CI log."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    if not text.isprintable():  # fast path: every character of CONTROL is one str.isprintable() rejects
        text = CONTROL.sub(lambda m: visible(m.group()), text)
    return text.replace(LEGACY_COMMAND, "#\\x23[") if LEGACY_COMMAND in text else text


def _deep(value: Any) -> Any:
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(k) if isinstance(k, str) else k: _deep(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_deep(v) for v in value)
    return value


def phrase(entry: Any) -> str:
    """A list entry of rule data as the sentence its author meant. An unquoted `- memory: not the cause` in
    YAML is a mapping (the loader adds `__line__`); it is shown as `memory: not the cause`, never as a dict."""
    if isinstance(entry, dict):
        return "; ".join(f"{k}: {v}" for k, v in entry.items() if not str(k).startswith("__"))
    return str(entry)


def _evidence(e: Evidence) -> Evidence:
    return Evidence(safe_text(e.file), e.line, safe_text(e.text), safe_text(e.node))


def _knob(k: Knob) -> Knob:
    return Knob(safe_text(k.name), [safe_text(a) for a in k.aliases], _deep(k.current), safe_text(k.source),
                safe_text(k.meaning))


def _finding(f: Finding) -> Finding:
    return dataclasses.replace(
        f, rule=safe_text(f.rule), category=safe_text(f.category), title=safe_text(f.title),
        evidence=[_evidence(e) for e in f.evidence], knobs=[_knob(k) for k in f.knobs],
        not_knobs=[safe_text(phrase(n)) for n in f.not_knobs], explain=safe_text(f.explain),
        numbers=_deep(f.numbers), first=f.first and _evidence(f.first), last=f.last and _evidence(f.last),
        fingerprint=safe_text(f.fingerprint), baseline=_deep(f.baseline))


def _file(lf: LogFile) -> LogFile:
    """lf itself when its text is safe already (nearly every file: a copy each cost a run of 200 k files ~70 MB)."""
    rel, kind, status, reason = safe_text(lf.rel), safe_text(lf.kind), safe_text(lf.status), safe_text(lf.reason)
    if rel is lf.rel and kind is lf.kind and status is lf.status and reason is lf.reason:
        return lf
    return dataclasses.replace(lf, rel=rel, kind=kind, status=status, reason=reason)


def _timeline(t: Timeline) -> Timeline:  # the series themselves are numbers: shared, not copied
    return dataclasses.replace(t, source=safe_text(t.source), file=safe_text(t.file), kind=safe_text(t.kind),
                               series={safe_text(k): v for k, v in t.series.items()}, marks=_deep(t.marks))


def safe_report(report: Report) -> Report:
    """A copy of the report whose every text field is `safe_text`: what each format renders. The report passed
    in is not changed."""
    return dataclasses.replace(
        report, root=safe_text(report.root), findings=[_finding(f) for f in report.findings],
        files=[_file(lf) for lf in report.files], config=_deep(report.config),
        errors=[safe_text(e) for e in report.errors], timelines=[_timeline(t) for t in report.timelines])


# --- the gate and the verdict



def gating(f: Finding, fail_on: str) -> bool:
    return not f.known and at_gate(f.severity, fail_on)


INCOMPLETE = ("unreadable", "partial")  # a file ended so: what it holds past that point was not judged


def not_read(report: Report) -> str:
    """`2 unreadable, 1 partial`: the files coverage could not finish (skipped ones were skipped on purpose)."""
    status = Counter(f.status for f in report.files if f.status in INCOMPLETE)
    return ", ".join(f"{status[s]} {s}" for s in INCOMPLETE if status[s])


def verdict(report: Report) -> str:
    """One line: the top live finding, or that there is none (with how many known ones the baseline hides);
    never a plain "no problems found" over files it could not read."""
    active = report.live()
    if not active:
        known = len(report.findings)
        clean_run = f"no new problems ({known} known)" if known else "no problems found"
        missing = not_read(report)
        return f"{clean_run} in what was read ({missing} file(s): see coverage)" if missing else clean_run
    top = active[0]
    missing = not_read(report)
    return f"{top.severity}: {top.category}: {top.title}{located(report, top)}" + (
        f" (coverage incomplete: {missing})" if missing else "")


def located(report: Report, f: Finding) -> str:
    """` (on gpu-node-02, rank 13: gpu-node-02/train.log:4)`: the machine and the writer of a finding's first evidence
    line, for a report over several machines (a merged report's nodes, or files under more than one top directory:
    a directory a node); '' for one machine, whose file:line the findings below give."""
    if not f.evidence:
        return ""
    e = f.evidence[0]
    tops = {lf.rel.split("/", 1)[0] for lf in report.files if "/" in lf.rel and lf.status == "read"}
    nodes = {lf.node for lf in report.files if lf.node}
    if len(nodes) < 2 and len(tops) < 2:
        return ""
    machine = e.node or (e.file.split("/", 1)[0] if "/" in e.file else "")
    parts = [p for p in (machine, writer_of(e.text)) if p]
    return f" (on {', '.join(parts)}: {where(f)})" if parts else f" ({where(f)})"


def coverage_counts(report: Report) -> str:
    """`3 read (2 sglang, 1 trainer), 1 skipped, 0 unreadable`: every status a file ended in, counted."""
    status = Counter(f.status for f in report.files)
    kinds = Counter(f.kind for f in report.files if f.status == "read")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
    out = [f"{status.pop('read', 0)} read ({summary})", f"{status.pop('skipped', 0)} skipped",
           f"{status.pop('unreadable', 0)} unreadable"]
    out[1:1] = [f"{n} {s}" for s, n in sorted(status.items())]  # any other end (partial, …) after read
    return ", ".join(out)


# --- paths


def run_path(file: str) -> str | None:
    """A report path relative to the run directory, normalised, or None for a file outside it
    (an absolute path, or one that climbs out with `..`: `--config ../run.yaml`, several roots)."""
    if file.startswith("/"):
        return None
    norm = posixpath.normpath(file)
    return None if norm == ".." or norm.startswith("../") else norm


def line_path(file: str) -> str:
    """A path that may start an output line: `./` in front of one that would start a workflow command."""
    return "./" + file if COMMAND_START.match(file) or file[:1].isspace() else file


def shown_path(file: str) -> str:
    """The path a CI annotation prints: relative to the run directory; a file outside it by its name only
    (never an absolute or `../` path); `./` in front of one that would start a workflow command."""
    rel = run_path(file)
    return line_path(rel if rel is not None else posixpath.basename(file.rstrip("/")) or file)


def outside_named(report: Report) -> Report:
    """A copy of the report in which the path of each file outside the run directory, where text cites it (a knob's
    source `config /home/u/run.yaml:3`, a note), is its name alone: what the CI formats publish."""
    names = {lf.rel: shown_path(lf.rel) for lf in report.files if run_path(lf.rel) is None and "/" in lf.rel}
    if not names:
        return report

    def named(text: str) -> str:
        for path in sorted(names, key=len, reverse=True):  # /a/bc before /a/b
            text = text.replace(path, names[path])
        return text

    findings = [dataclasses.replace(f, knobs=[dataclasses.replace(k, source=named(k.source)) for k in f.knobs])
                for f in report.findings]
    return dataclasses.replace(report, findings=findings, errors=[named(e) for e in report.errors])


def where(f: Finding) -> str:
    return f"{f.evidence[0].file}:{f.evidence[0].line}" if f.evidence else ""


# --- phrasing


def message(f: Finding) -> str:
    """One line: title, count, category and rule; what annotations and tool messages print."""
    count = f" (×{f.count})" if f.count > 1 else ""
    return f"{f.title}{count} [{f.category}, {f.rule}]"


def clean(value: Any, options: RenderOptions) -> str:
    """Any value as printable text (the report it comes from was redacted when it was built)."""
    return safe_text(value)


def _same(text: str) -> str:
    return text


def knob_text(k: Knob, options: RenderOptions, code: Callable[[str], str] = _same,
              plain: Callable[[str], str] = _same) -> str:
    """`name = value (--flag; from source)`: the value the logs show and where they show it. Markdown passes its
    inline-code and escaping functions; plain text takes the words as they are."""
    alias = next((a for a in k.aliases if a.startswith("--") or a.endswith("=")), "")  # a flag or an override
    cur = f" = {code(clean(k.current, options))}" if k.current is not None else ""
    notes = [code(alias)] if alias else []
    if k.source:
        notes.append(f"from {plain(clean(k.source, options))}")
    return f"{code(k.name)}{cur}" + (f" ({'; '.join(notes)})" if notes else "")


def advice(f: Finding, options: RenderOptions) -> str:
    """Inspect / will-not-help / why, as plain text lines (failure bodies, help texts, annotations)."""
    lines = []
    if f.knobs:
        lines.append("inspect: " + "; ".join(knob_text(k, options) for k in f.knobs))
    if f.not_knobs:
        lines.append("will not help: " + "; ".join(phrase(n) for n in f.not_knobs))
    if f.explain:
        lines.append(" ".join(f.explain.split()))
    return "\n".join(lines)


def evidence_text(f: Finding, limit: int = 4, width: int = 400, path: Callable[[str], str] = _same) -> str:
    out = []
    for e in f.evidence[:limit]:
        text = e.text.strip()
        out.append(f"{path(e.file)}:{e.line}  " + (text if len(text) <= width else text[: width - 1] + "…"))
    return "\n".join(out)
