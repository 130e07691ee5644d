"""From hits and check results to ranked findings: one per distinct problem, root cause first.

- Hits of one rule become one finding with a count, first/last occurrence and a few evidence lines.
- A rule marked `symptom_of` (a Ray actor death, an engine crash header, a watchdog follow-up) folds into
  the root-cause finding it belongs to when there is one, as extra evidence.
- Error-like lines no rule claimed are grouped by template into `unclassified` findings.
- Rank: severity, then the rule's priority (specific root causes above generic crashes and hangs), then
  the order of first occurrence.
- Fingerprint: rule id + file + the evidence line with numbers, ids and times masked. No line numbers.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from triage.checks import CHECKS, Run
from triage.checks.startup import served_files
from triage.effective_config import Config, knob
from triage.library.rules import Library, Rule
from triage.model import SEVERITY_RANK, Evidence, Finding, Hit, Line
from triage.parsers import signals
from triage.redact import redact
from triage.scan.scanner import FINAL_EXC, FileResult, thresholds_hold
from triage.scan.unexplained import Fold
from triage.template import shape, template

MAX_EVIDENCE = 4
MAX_UNCLASSIFIED = 20
UNEXPLAINED_END = "other.fatal-exit"  # a process end no rule explains (checks/exits.py)
STARTUP = "cold-start"  # below error, a slow start: the root only of the symptoms whose rules name it
MAX_TEXT = 2000  # characters of one evidence line in any report (the scanner keeps up to read.MAX_LINE)

# An exception quoted inside another message (`Runner failed with exception: TimeoutError('server not ready')`,
# `RayTaskError(ValueError): ...`): the same failure as its own `TimeoutError: server not ready` line.
EMBEDDED_EXC = re.compile(r"\b(?:[a-z_]\w*\.)*(?P<name>[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])(?P<msg>.{3,}?)(?P=q)\)")
LEADING_EXC = re.compile(r"^\s?(?:[a-z_]\w*\.)*(?P<name>[A-Z]\w*(?:Error|Exception)):\s*(?P<msg>\S.*)$")


def family(text: str) -> str:
    """The grouping key of an unexplained line: its template, or, for a line that quotes an exception, the
    exception's name and its message's template, so the exception line and the lines quoting it are one finding."""
    m = LEADING_EXC.match(text) or EMBEDDED_EXC.search(text)
    if m:
        return f"{m['name']}: {template(m['msg'])}"
    return template(text)


def fingerprint(rule: str, ev: Evidence | None, extra: str = "") -> str:
    """Rule + file + the evidence line's template, always of the redacted text: a baseline written with or without
    `--no-redact` matches the other run (redacting a redacted line changes nothing)."""
    basis = "\x1f".join([rule, ev.file if ev else "", template(redact(ev.text)) if ev else "", extra])
    return hashlib.sha256(basis.encode()).hexdigest()[:20]


def shown(text: str, redact_on: bool) -> str:
    """Evidence text as it leaves the machine: secrets masked, at most MAX_TEXT characters.

    Redaction runs on a window twice the shown length, so a secret that straddles the cut is masked whole
    before the cut drops its tail."""
    cut = len(text) > MAX_TEXT
    if redact_on:
        text = redact(text[: 2 * MAX_TEXT])
    if cut:
        text = text[:MAX_TEXT] + " …[cut by triage]"
    return text


def _evidence(lines: list[Line], redact_on: bool) -> list[Evidence]:
    out: list[Evidence] = []
    seen: set[tuple[str, int, str]] = set()
    for ln in lines:
        key = (ln.file, ln.lineno, ln.text)
        if key in seen:
            continue
        seen.add(key)
        out.append(Evidence(ln.file, ln.lineno, shown(ln.text, redact_on)))
    return out


def _last(ln: Line, redact_on: bool) -> Evidence:
    """The last occurrence: for a run of identical lines folded into one, the run's last line."""
    ev = _evidence([ln], redact_on)[0]
    ev.line = ln.until or ln.lineno
    return ev


def _knobs(lib: Library, rule: Rule, numbers: dict[str, Any], cfg: Config, file: str | None) -> list[Any]:
    """The rule's knobs (plus those its numbers call for), each with the value the evidence's file shows."""
    names = list(rule.knobs)
    for cond in rule.knobs_when:
        if thresholds_hold([cond], numbers) and cond["knob"] not in names:
            names.append(cond["knob"])
    return [knob(lib, n, cfg, file) for n in names]


def _finding(lib: Library, rule: Rule, lines: list[Line], count: int, numbers: dict[str, Any], cfg: Config,
             redact_on: bool, first: Line, last: Line, severity: str = "", title: str = "") -> Finding:
    evidence = _evidence(lines, redact_on)[:MAX_EVIDENCE]
    ev_first, ev_last = _evidence([first], redact_on)[0], _last(last, redact_on)
    return Finding(rule=rule.id, category=rule.category, severity=severity or rule.severity, title=title or rule.title,
                   count=count, evidence=evidence, knobs=_knobs(lib, rule, numbers, cfg, first.file),
                   not_knobs=list(rule.not_knobs or []), explain=rule.explain, numbers=numbers,
                   first=ev_first, last=ev_last, priority=rule.priority, symptom=bool(rule.symptom_of))


def from_hits(lib: Library, hits: list[Hit], cfg: Config, redact_on: bool) -> list[Finding]:
    groups: dict[str, list[Hit]] = {}
    for h in hits:
        groups.setdefault(h.rule, []).append(h)
    out = []
    for rid, hs in groups.items():
        rule = lib.rule(rid)
        if rule is None:
            continue
        count = sum(h.line.repeat for h in hs)
        if count < rule.min_count:
            continue
        first, last = hs[0], hs[-1]
        lines = [first.line, *first.extra]
        if last is not first:
            lines += [last.line, *last.extra]
        numbers = dict(first.numbers)
        numbers.pop("went_on", None)  # a mark for `if_went_on` below, not a number of the line
        numbers["side"] = first.side
        severity = "info" if count < rule.info_below else ""
        if rule.if_warned and all(signals.is_warning_level(h.line) for h in hs):
            severity = rule.if_warned  # its program printed every one as a warning: caught, and it went on
            numbers["warned"] = "every line was printed as a warning by its own program, or says what it fell back to"
        if rule.if_went_on and all(h.numbers.get("went_on") for h in hs) and (
                not severity or SEVERITY_RANK[rule.if_went_on] > SEVERITY_RANK[severity]):
            severity = rule.if_went_on  # the log went on recording steps after every one: it did not stop the run
            numbers["went_on"] = "the file went on recording steps or metrics after every line: the run did not stop"
        out.append(_finding(lib, rule, lines, count, numbers, cfg, redact_on, first.line, last.line, severity,
                            fill(rule.title, numbers)))
    return out


def from_checks(lib: Library, run: Run, cfg: Config, redact_on: bool) -> list[Finding]:
    out = []
    for rule in lib.rules:
        if not rule.check:
            continue
        fn = CHECKS.get(rule.check)
        if fn is None:
            continue
        # a result without a line to show (an engine whose rows were all sampled away) is not one a report can
        # stand behind: the others are the finding, and its numbers and title come from the first of them
        results = [r for r in fn(rule.params, run) if r.evidence]
        if not results:
            continue
        lines = [ln for r in results for ln in r.evidence]
        count = sum(r.count for r in results)
        severity = min((r.severity or rule.severity for r in results), key=SEVERITY_RANK.__getitem__)
        numbers = dict(results[0].numbers)
        if len(results) > 1:
            numbers["sources"] = len(results)
        title = fill(results[0].title or rule.title, numbers)
        # a check lists its most telling line first (the worst step); first and last are by place in the file
        same = [ln for ln in lines if ln.file == lines[0].file]
        first, last = min(same, key=lambda ln: ln.lineno), max(same, key=lambda ln: ln.until or ln.lineno)
        if lines[-1].file != lines[0].file:
            last = lines[-1]
        finding = _finding(lib, rule, lines, count, numbers, cfg, redact_on, first, last, severity, title)
        finding.priority = max(r.priority for r in results) or finding.priority
        out.append(finding)
    return out


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def fill(title: str, numbers: dict[str, Any]) -> str:
    """A rule's title with `{name}` placeholders filled from its numbers (a check's `({arithmetic})`, a line rule's
    named group of its first line)."""
    if "{" not in title:
        return title
    try:
        return title.format_map(_Blank(numbers))
    except (ValueError, IndexError, AttributeError):
        return title


# A line that says what its program did instead ("Failed to get GPU memory capacity from nvidia-smi. Falling back to
# torch.cuda.mem_get_info()", SGLang 0.5; vLLM's "FlashInfer is not available. Falling back to the PyTorch-native
# implementation", "... is not supported by the V1 Engine. Falling back to V0"): it handled what it reports.
FELL_BACK = re.compile(r"\b[Ff]alling back to\b")


# A message that ends by quoting what it failed on ("step 3 - extract action failed from: <the model's answer>",
# "could not parse: <a response body>") is one family whatever it quotes. Its head is the family key up to the first
# `: ` of the message (after an exception's name); when QUOTED_TAILS or more families share a head of at least
# HEAD_WORDS words, the part after it is data, not wording (as a template miner makes a varying token a wildcard),
# and they are one finding, `<head>: <text>`. A head seen with one or two tails keeps them apart.
QUOTED_TAILS = 3
HEAD_WORDS = 3


def _head(key: str) -> str | None:
    start = m.start("msg") if (m := LEADING_EXC.match(key)) else 0
    cut = key.find(": ", start)
    if cut < 0 or len(key[start:cut].split()) < HEAD_WORDS:
        return None
    return key[:cut]


def _fold_quoted_tails(clusters: dict[str, list[Any]]) -> list[tuple[str, list[Any]]]:
    """The clusters, those whose messages differ only in a quoted tail folded into one (see QUOTED_TAILS)."""
    heads: dict[str, list[str]] = {}
    for key in clusters:
        if (head := _head(key)) is not None:
            heads.setdefault(head, []).append(key)
    folded = {key: head for head, keys in heads.items() if len(keys) >= QUOTED_TAILS for key in keys}
    out: dict[str, list[Any]] = {}
    for key, c in clusters.items():  # in order of first occurrence
        head = folded.get(key)
        name = key if head is None else f"{head}: <text>"
        d = out.get(name)
        if d is None:
            out[name] = list(c)
            continue
        d[2] += c[2]
        d[4] = d[4] and c[4]
        if (c[3], c[1].lineno) > (d[3], d[1].lineno):
            d[1], d[3] = c[1], c[3]
    return list(out.items())


def unclassified(lib: Library, lines: list[Line], redact_on: bool, folds: list[Fold] | None = None,
                 order: dict[str, int] | None = None) -> list[Finding]:
    """Error-like candidate lines no rule claimed, one finding per template (numbers, hex, ids, paths masked).
    `lines`: in file order, each file's in line order; `folds`: lines of one shape folded (scan/unexplained.py),
    each standing for its lines from the first to the last; `order`: each file's place in the run (default: the
    order the lines name them in).

    The template is taken of the redacted text: masking digits first would break a token into pieces the
    secret patterns no longer recognise, and the template is printed as the finding's title. It is taken once per
    shape (template.shape: lines of one shape have one template)."""
    clusters: dict[str, list[Any]] = {}  # family -> [first line, last line, count, file index of the last, warned]
    keys: dict[bytes, str] = {}  # shape -> family
    files = dict(order or {})  # file -> its place in the run's order
    for ln in [*lines, *(f.first for f in folds or [])]:
        files.setdefault(ln.file, len(files))
    items: list[tuple[int, Line, Line, int, bytes | None]] = [(files[ln.file], ln, ln, ln.repeat, None) for ln in lines]
    items += [(files[f.first.file], f.first, f.last, f.count, f.shape) for f in folds or []]
    items.sort(key=lambda it: (it[0], it[1].lineno))
    for i, first, end, count, kind in items:
        msg = first.msg[: 2 * MAX_TEXT]
        if kind is None:  # (a fold's shape is the one its lines were folded under: lines of one shape, one family)
            kind = shape(msg)
        key = keys.get(kind)
        if key is None:
            key = keys[kind] = family(redact(msg) if redact_on else msg)
            if len(keys) > 100_000:
                keys.clear()
        c = clusters.get(key)
        if c is None:
            clusters[key] = [first, end, count, i, _warned(first)]
            continue
        c[2] += count
        c[4] = c[4] and _warned(first)  # (asked only while every line before was warned)
        if i != c[3] or end.lineno > c[1].lineno:  # the last line of the last file holding the family
            c[1], c[3] = end, i
    cat = lib.categories.get("unclassified")
    counted = _fold_quoted_tails(clusters)
    # final exception lines (`ValueError: ...`) first: they name the failure; then the most frequent
    counted.sort(key=lambda c: (not FINAL_EXC.match(c[1][0].msg), -c[1][2]))
    out = []
    for tmpl, (first, last_line, count, _, warned) in counted[:MAX_UNCLASSIFIED]:
        ev = _evidence([first], redact_on)
        last = _last(last_line, redact_on)
        if (last.file, last.line) != (ev[0].file, ev[0].line):
            ev.append(Evidence(last.file, last_line.lineno, last.text))
        numbers = {"template": tmpl[:200]}
        if warned:  # its own program printed every line as a warning or fell back (caught, and went on): not the failure
            numbers["warned"] = "every line was printed as a warning by its own program, or says what it fell back to"
        out.append(Finding(rule="unclassified", category="unclassified", severity="info" if warned else "warning",
                           title=f"Unexplained: {tmpl[:120]}", count=count, evidence=ev,
                           explain=cat.explain if cat else "", first=ev[0], last=last, priority=5,
                           numbers=numbers))
    return out


def _warned(first: Line) -> bool:
    """Whether the line's own program printed it as a warning or information, or it says what it fell back to (a
    folded line is of its first line's shape, prefix included)."""
    return (signals.is_warning_level(first) or signals.is_info_level(first)
            or FELL_BACK.search(first.msg) is not None)


def fold_exit_copies(findings: list[Finding], run: Run, redact_on: bool) -> list[Finding]:
    """An unexplained group whose template is the exception that ended a process (an `other.fatal-exit`, or the root
    it folded into) is that exception again: each engine, worker or wrapper that printed it (Ray's actor and
    TaskRunner copies, every LLMRayActor's vLLM engine, the driver's own traceback) adds a copy, not a second
    failure (real-extra 1766: the same AssertionError from each LLMRayActor; 1774: pydantic's ValidationError
    twice; 776: the RuntimeError in the traceback and in the TaskRunner's unhandled-error copy). Its lines fold into
    the finding that holds the process end: `same_exception_lines` counts them, its first line joins the evidence
    next to the exception's."""
    keys: dict[str, tuple[str, int]] = {}
    for ev in run.events:
        if ev.kind != "fatal" or ev.fields.get("rule"):
            continue
        msg = ev.line.msg[: 2 * MAX_TEXT]
        keys.setdefault(family(redact(msg) if redact_on else msg)[:200], (ev.line.file, ev.line.lineno))
    if not keys:
        return findings
    holder: dict[tuple[str, int], Finding] = {}
    for f in findings:
        if f.category != "unclassified":
            for e in f.evidence:
                holder.setdefault((e.file, e.line), f)
    out = []
    for f in findings:
        at = keys.get(f.numbers.get("template", "")) if f.rule == "unclassified" else None
        root = holder.get(at) if at is not None else None
        if root is None:
            out.append(f)
            continue
        root.numbers["same_exception_lines"] = root.numbers.get("same_exception_lines", 0) + f.count
        first = f.evidence[0] if f.evidence else None
        if first is not None and len(root.evidence) < MAX_EVIDENCE + 2 and all(
                (e.file, e.line) != (first.file, first.line) for e in root.evidence):
            # next to the exception it repeats, before the symptoms folded in after it (srun's exit stays last)
            at_index = next(i for i, e in enumerate(root.evidence) if (e.file, e.line) == at)
            root.evidence.insert(at_index + 1, first)
    return out


def merge_symptoms(lib: Library, findings: list[Finding]) -> list[Finding]:
    """Fold a symptom (actor death, crash header) into the root-cause finding it belongs to.

    An unexplained process end (other.fatal-exit) is a symptom of any root cause there is; when there is none it
    is the root itself, and the actor deaths and exit codes that followed it fold into it. `any` is any failure, a
    start that never finished among them, but not a start that was only slow: that explains what failed while it
    lasted, and those symptoms' rules name cold-start; HTTP errors an engine answered after serving for half an hour
    are not evidence of its slow load (real-extra 921)."""
    roots = [f for f in findings if not f.symptom and f.category != "unclassified"]
    out = [f for f in findings if not f.symptom]
    ends = [f for f in findings if f.symptom and f.rule == UNEXPLAINED_END]
    rest = [f for f in findings if f.symptom and f.rule != UNEXPLAINED_END]
    for f in ends + rest:
        rule = lib.rule(f.rule)
        wanted = rule.symptom_of if rule else []
        candidates = [r for r in roots if (r.category in wanted or "any" in wanted and not slow_start(r))
                      and SEVERITY_RANK[r.severity] <= SEVERITY_RANK[f.severity]]
        if not candidates:
            out.append(f)
            if f.rule == UNEXPLAINED_END:
                roots.append(f)
            continue
        root = min(candidates, key=rank_key)
        for e in f.evidence:
            if len(root.evidence) < MAX_EVIDENCE + 2 and e not in root.evidence:
                root.evidence.append(e)
        root.numbers.setdefault("symptoms", []).append(f.rule)
    return out


def slow_start(f: Finding) -> bool:
    """A cold-start finding below error: the engines started, late."""
    return f.category == STARTUP and SEVERITY_RANK[f.severity] > SEVERITY_RANK["error"]


def rank_key(f: Finding) -> tuple[int, int, int]:
    return (SEVERITY_RANK[f.severity], -f.priority, 0)


def rank(findings: list[Finding], domain: tuple[str, ...]) -> list[Finding]:
    """Severity, then priority, then first seen. A process end no rule explains gates at error severity but ranks
    with the warnings when a finding in the six categories (`domain`, the library's) is there: that finding is the better guess at the
    cause; with none, the unexplained end leads."""
    order = {id(f): i for i, f in enumerate(findings)}
    known = any(f.category in domain and SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"] for f in findings)

    def level(f: Finding) -> int:
        if known and f.rule == UNEXPLAINED_END:
            return SEVERITY_RANK["warning"]
        return SEVERITY_RANK[f.severity]

    # Slow start-up phases rank among themselves by how many seconds each ran over its own threshold, at the rank of
    # the highest of them, whatever the rules' priorities: a 2,173 s CUDA-graph capture before an 82 s torch.compile
    # (real-extra 1705); a 447 s torch.compile (327 s over its 120 s) before a 190 s capture (160 s over its 30 s),
    # the phase that took the time (1707). Engine init holds compile and capture (vLLM's `init engine (profile,
    # create kv cache, warmup model)`), so it ranks after the phases it sums.
    over = {id(f): (0 if f.numbers.get("phase") == "engine_init" else 1)
            * 1e9 + f.numbers["seconds"] - f.numbers["threshold"] for f in findings if _phase_over(f)}
    block: dict[int, tuple[int, int]] = {}  # level -> (highest priority, first place) of its phase findings
    for f in findings:
        if id(f) in over:
            lvl, (prio, first) = level(f), block.get(level(f), (f.priority, order[id(f)]))
            block[lvl] = (max(prio, f.priority), min(first, order[id(f)]))

    def key(f: Finding) -> tuple[int, int, int, float]:
        lvl = level(f)
        if id(f) in over:
            prio, first = block[lvl]
            return (lvl, -prio, first, -over[id(f)])
        return (lvl, -f.priority, order[id(f)], 0.0)

    return sorted(findings, key=key)


def _phase_over(f: Finding) -> bool:
    """A slow start-up phase finding (checks/startup.py startup_phase_slow): its seconds against its threshold."""
    n = f.numbers
    return ("startup_phases" in n and isinstance(n.get("seconds"), (int, float))
            and isinstance(n.get("threshold"), (int, float)) and n["threshold"] > 0)


def settle_served_starts(findings: list[Finding], run: Run) -> None:
    """A slow start whose engine then said it was ready and served is information, as the startup checks judge it
    (checks/startup.py): the cost was paid once and the run went on. Rules that read a slow phase off the engine's
    own lines (a weight-loading bar at nine minutes) are judged the same way when every line they hold is in such an
    engine's file (real-extra 921: a 24-minute start, then a benchmark served)."""
    served = None
    for f in findings:
        if f.category != STARTUP or f.severity != "warning" or not f.evidence:
            continue
        if served is None:
            served = served_files(run)
        if all(e.file in served for e in f.evidence):
            f.severity = "info"
            f.numbers["served_after_ready"] = True


def settle_served_rules(lib: Library, findings: list[Finding], hits: list[Hit], run: Run) -> None:
    """A line rule with `if_served` takes that severity when every line it claimed is in the file of an engine that
    said it was ready and then served (`served_files`): what the lines report did not stop that engine. HTTP 4xx
    answers in such a file are requests the server rejected as its API says it should (a wrong model name, an
    over-long prompt, an aborted stream), told apart by their own message lines; the server kept serving the rest
    (real-extra 1166: 9 of some 8,700 requests in a day-long serve)."""
    rules = {f.rule: lib.rule(f.rule) for f in findings}
    wanted = {rid for rid, r in rules.items() if r is not None and r.if_served}
    if not wanted:
        return
    files: dict[str, set[str]] = {}
    for h in hits:
        if h.rule in wanted:
            files.setdefault(h.rule, set()).add(h.line.file)
    served = served_files(run)
    for f in findings:
        rule = rules.get(f.rule)
        if f.rule not in wanted or rule is None or not files.get(f.rule) or not files[f.rule] <= served:
            continue
        if SEVERITY_RANK[rule.if_served] > SEVERITY_RANK[f.severity]:
            f.severity = rule.if_served
            f.numbers["served"] = "every line is in the log of an engine that was ready and went on serving"


def gate_fatal(findings: list[Finding], run: Run) -> None:
    """A finding whose line ended a process (a `fatal` event claimed by its rule) gates at error severity, however
    mild its rule: a verifier timeout that escaped and killed the trainer is not a warning any more."""
    ended = {ev.fields["rule"]: ev for ev in run.events if ev.kind == "fatal" and ev.fields.get("rule")}
    for f in findings:
        ev = ended.get(f.rule)
        if ev is None:
            continue
        f.numbers.setdefault("ended_process", f"{ev.line.file}:{ev.line.lineno}")
        if SEVERITY_RANK[f.severity] > SEVERITY_RANK["error"]:
            f.severity = "error"


def build(lib: Library, results: list[FileResult], run: Run, cfg: Config, redact_on: bool = True) -> list[Finding]:
    hits = [h for r in results for h in r.hits]
    findings = from_hits(lib, hits, cfg, redact_on) + from_checks(lib, run, cfg, redact_on)
    settle_served_rules(lib, findings, hits, run)
    gate_fatal(findings, run)
    settle_served_starts(findings, run)
    findings = merge_symptoms(lib, findings)
    order = {r.file.rel: i for i, r in reversed(list(enumerate(results)))}
    findings += unclassified(lib, [ln for r in results for ln in r.unclaimed], redact_on,
                             [f for r in results for f in r.folded], order)
    findings = fold_exit_copies(findings, run, redact_on)
    findings = rank(findings, lib.domain)
    seen: dict[str, int] = {}
    for f in findings:
        base = fingerprint(f.rule, f.evidence[0] if f.evidence else None)
        n = seen.get(base, 0)
        seen[base] = n + 1
        f.fingerprint = base if n == 0 else fingerprint(f.rule, f.evidence[0] if f.evidence else None, str(n))
    return findings
