"""Match and parse one file: the shared literal prefilter, rule matching, parsers, claims.

One pass over the file's text. A single regex of every anchor (rule anchors, parser anchors,
error words) finds the few candidate lines; only those become Python objects. Each candidate is
parsed (stats, settings, metrics) and tried against the rules whose anchor it holds. When the file
is done, each matched line is claimed by its highest-priority rule whose conditions (side, near,
thresholds) hold; error-like lines no rule claimed are returned for the unclassified report.
"""

from __future__ import annotations

import io
import itertools
import re
import time
from typing import Any, NamedTuple

from triage.input.decompress import read_small
from triage.input.read import MAX_LINE, TRUNCATED, iter_chunks, open_stream
from triage.lazyre import lazy
from triage.library.rules import MATCH_TIMEOUT, Library, Pattern, Rule, builtin_dir
from triage.model import Event, Hit, Line, LogFile
from triage.model import counted as shared_count
from triage.parsers import PARSERS, signals, tables
from triage.parsers.engine_stats import engine, engine_key
from triage.scan import digitkey, native, nearfold
from triage.scan import prefiltered as fastscan
from triage.scan.digitkey import answers_alike
from triage.scan.errfold import ALLOWED, KNOWN, NOT_FOLDED, RULED, SPECIAL, STOP, ErrRules
from triage.scan.filescan import FileResult, FileScan
from triage.scan.masked import blind, impossible
from triage.scan.nearfold import NearFold, may_start
from triage.scan.origins import FAMILY_GAP, RAY_PREFIX, Context, Runs, SideFinder, split_ray, stream_of
from triage.scan.progress import Progress
from triage.scan.series import JoinedRecords, RunSeries
from triage.template import FAMILY_TEXT

# Error-like text: candidates for the unclassified report and context for tracebacks (a frame's `File \"` as a
# JSON log record escapes it: Docker's json-file log, prefixes.json_message). IPython / Jupyter print a frame as
# `File /path/pkg/mod.py:402, in Class.method(self, ...)` (IPython 8, a notebook's traceback pasted from Colab or
# Databricks): kept as context so the side lookup reads its path (vllm issue 8073's vllm/spec_decode frames).
ERROR_ANCHORS = ("Error", "Exception", "Traceback", "FATAL", "Fatal", "Killed", "exit code", "ERROR", "failed",
                 "Failed", "Errno", "Segmentation", "File \"", "File \\\"", "CRITICAL", "Aborted", "ray::", "exit status",
                 "exitcode", "File /")
ERRORISH = lazy(
    r"^(?:[a-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Failure|Fault|Timeout)|Exception)\b(?:\([^)]*\))?:|(?:^|[\s\[(|])(?:ERROR|FATAL|Fatal|CRITICAL)\b"
    r"|\bKilled\b|exit(?:ed with)? (?:code|status) -?[1-9]|\bexitcode\s*:\s*-?[1-9]|Segmentation fault|\bfailed\b"
    r"|\bFailed\b|^(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\s*$"
    # a program's own "Error in X: ..." / "Error computing Y: ..." (no exception class, no level)
    r"|(?:^|[\]:]\s?)Error (?:in|while|during|when|calling|computing|executing|processing|loading|getting|running|occurred)\b"
)
# Literal text every ERRORISH match holds: lines without any skip the (slow) regex search. They are anchors
# too, so the prefilter's list of the anchors in a line tells whether the search is worth it.
ERRORISH_WORDS = ("Error", "Exception", "Failure", "Fault", "Timeout", "ERROR", "FATAL", "Fatal", "CRITICAL", "Killed",
                  "exit code", "exit status", "exited with", "exitcode", "Segmentation fault", "failed", "Failed")


def is_errorish(msg: str) -> bool:
    return any(w in msg for w in ERRORISH_WORDS) and ERRORISH.search(msg) is not None


def _polling(event: Event | None) -> bool:
    """A launcher polling an engine that is not up yet (parsers/startup.py `wait`: kubelet's "Readiness probe failed:
    ... connection refused", prime-rl's "Inference server was not reached after 10 seconds (Error: All connection
    attempts failed)"): the start-up checks read these lines, and a refused connection is what polling a starting
    engine looks like, so the line is no unexplained error."""
    return event is not None and event.kind == "startup" and event.fields.get("phase") == "wait"


def is_error_line(line: Line) -> bool:
    """An error line, for `errors_only` rules: a traceback's final exception line, an error-worded line, or one its
    logger marks ERROR/CRITICAL/FATAL."""
    msg = line.msg
    return FINAL_EXC.match(msg) is not None or is_errorish(msg) or signals.is_error_level(line)


def error_level_only(line: Line) -> bool:
    """A line whose logger marks it ERROR/CRITICAL/FATAL (in a prefix the message no longer holds, or a glog or
    logfmt level) though its words are not error-like: a candidate all the same. A traceback's echoed source line
    (indented) or caret marks are not."""
    msg = line.msg
    if not msg.strip() or msg[:1].isspace() or not any(c.isalpha() for c in msg):
        return False
    return signals.is_error_level(line)


def exception_line(msg: str) -> bool:
    """A traceback's final line, or one like it: steps after the scan may single it out (a chain's end, `follow`)."""
    return FINAL_EXC.match(msg) is not None or signals.EXC_LINE.match(msg) is not None


# `Name: message` where Name ends in Error/Exception/...; Python's base class itself too (`Exception: msg`, raised
# bare by libraries: tokenizers' "Exception: expected value at line 1 column 1" for an unparsable tokenizer.json).
FINAL_EXC = lazy(r"^\s?(?:[a-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Failure|Fault|Exit)|Exception)\b(?:\([^)]*\))?:")
FRAME = lazy(r'^\s*File "[^"]*", line \d+')
SIZE = lazy(r"^(-?[\d.]+)\s*(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)$")
UNIT_GIB = {"bytes": 1 / 2**30, "B": 1 / 2**30, "KiB": 1 / 2**20, "MiB": 1 / 2**10, "GiB": 1.0, "TiB": 1024.0,
            "KB": 1 / 2**20, "MB": 1 / 2**10, "GB": 1.0, "TB": 1024.0}
CLOCK = lazy(r"^(?:(\d+):)?(\d+):(\d\d)$")


def number(value: str | None) -> Any:
    """A named group's text as a number: sizes in GiB, clock times (mm:ss, h:mm:ss) in seconds."""
    if value is None:
        return None
    v = value.strip()
    if v.isascii():  # most groups: digits, maybe a fraction (no unit, no clock): what the last step gives, sooner
        if v.isdigit():
            return int(v)
        if v.replace(".", "", 1).isdigit():
            return float(v)
    m = SIZE.match(v)
    if m:
        return round(float(m.group(1)) * UNIT_GIB[m.group(2)], 6)
    m = CLOCK.match(v)
    if m:
        return int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
    try:
        return int(v) if re.fullmatch(r"-?\d+", v) else float(v)
    except ValueError:
        return v


def numbers_of(mo: Any) -> dict[str, Any]:
    """A rule match's named groups as numbers (number())."""
    return {k: number(v) for k, v in mo.groupdict().items() if v is not None}


CONDITION_TERM = lazy(r"\s*([+-]?)\s*([^+\-\s]+)")


def condition_value(numbers: dict[str, Any], name: str) -> float | None:
    """The number a `when` field names: one of the match's numbers, or a sum or difference of them ("a+b",
    "features-tokens"); None when one is missing."""
    total = 0.0
    for sign, part in CONDITION_TERM.findall(name):
        v = numbers.get(part)
        if not isinstance(v, (int, float)):
            return None
        total += -v if sign == "-" else v
    return total


def thresholds_hold(conds: list[dict[str, Any]], numbers: dict[str, Any]) -> bool:
    for c in conds:
        v = condition_value(numbers, c["field"])
        if v is None:
            return False
        if "min" in c and v < c["min"]:
            return False
        if "max" in c and v > c["max"]:
            return False
    return True


TRUSTED_LEN = 512  # characters: a built-in rule's regexes search a message up to this long without the `regex`
# module's timeout (a search with one costs 2.45 us, without 1.0 us; a storm's claimed lines are searched twice).
# Built-in regexes are the library's own, checked on its examples; a longer line (a hostile 64 KiB one) and a
# user's rule keep the guard
RULE_BUDGET = 2.0  # seconds of regex time (match, near, not_near) a user's rule may spend in one scanning process:
# a slow regex under MATCH_TIMEOUT a line (0.1 s on each of 1,000 lines) is switched off past it, with a note
clock = time.perf_counter  # what the budget is measured with (tests give a fake one)

CHAINED_GAP = 4  # a chained exception's traceback starts this many lines after its cause's exception line,
CHAINED_MESSAGE = 3  # or after the last of the lines its message continues on
REWARD_RULE = "verifier.reward-exception"  # what a traceback through reward code ends in (signals.REWARD_FRAME)
# A device fault is no reward function's bug even when the traceback runs through reward code (a reward model's
# forward, TRL's get_reward): CUDA prints its kernel assertions (one line per GPU thread) or the fault just before
# the Python traceback, or as its final line (trl issue 1821: a Qwen policy's token ids indexing a pythia reward
# model's embedding). Lines this close before a chain's head, or its final line, claimed by these stay theirs.
DEVICE_FAULT_RULES = frozenset({"other.cuda-error", "other.gpu-hardware-fault", "other.npu-device-error"})
DEVICE_FAULT_BEFORE = 5  # lines before a traceback's head where its device fault's last line may be


class Plan(NamedTuple):
    parsers: tuple[Any, ...]  # parser modules whose anchors the line holds, in PARSERS order
    anchors: tuple[str, ...]  # rule anchors it holds, in a fixed order
    errorish: bool  # it holds an ERRORISH_WORD or a level literal: worth the ERRORISH search and the level
    signal: bool  # it holds a shutdown or signal-exit literal (signals.SIGNAL_ANCHORS)
    steady: bool  # no anchor holds a digit and no rule under them is a user's: the rule search may be cached (Steps)
    records: bool  # every rule under its anchors is errors_only (or there is none): none can claim a metric record
    # or a stats row, which are data, never error lines (most lines of a trainer log: no rule search at all)


class Steps(NamedTuple):
    """The rule search on the messages of one key (digitkey.key: the same but for their digit runs) and plan, in the
    order the rules are tried: each step adds its claims when its rules are errors_only only on an error line, and
    when its regexes (not None: each a rule's, one of them to match) match the message. A rule whose regexes
    digitkey.runs_alike proves to answer the same on every message of the key is searched once, on the first: it matched (a
    step of no regexes, merged with its neighbours) or it is left out."""
    plan: Plan
    steps: tuple[tuple[tuple[tuple[Rule, None], ...], bool, tuple[Any, ...] | None], ...]


class Scanner:
    def __init__(self, lib: Library):
        self.lib = lib
        self.sides = SideFinder(lib.sides, lib.actors, lib.trailing, lib.trailing_lines)
        self.line_rules = [r for r in lib.rules if r.match]
        by_anchor: dict[str, list[Rule]] = {}
        for rule in self.line_rules:
            for a in rule.anchors:
                by_anchor.setdefault(a, []).append(rule)
        self.by_anchor = by_anchor
        parser_anchors = {a for p in PARSERS for a in p.ANCHORS}
        anchors = (set(by_anchor) | parser_anchors | set(ERROR_ANCHORS) | set(ERRORISH_WORDS)
                   | set(signals.SIGNAL_ANCHORS) | set(signals.LEVEL_ANCHORS) | set(signals.BENIGN_ANCHORS)
                   | set(signals.RENDER_ANCHORS) | set(signals.ECHO_ANCHORS))
        self._prefilter: re.Pattern[str] | None = None  # compiled on first use: the C prefilter's runs never need it
        self.anchor_list = sorted(by_anchor)
        self.anchors = tuple(sorted(anchors))
        self.broken: set[str] = set()  # rules whose regex ran away once: off for the rest of the run
        builtin = str(builtin_dir())
        self.spent = {r.id: 0.0 for r in lib.rules if not r.origin.startswith(builtin)}  # user rule -> regex seconds
        self.guarded = {id(p) for r in lib.rules if r.id in self.spent for p in r.patterns()}  # user rules' regexes
        self.exhausted: set[str] = set()  # user rules past RULE_BUDGET: no more regex work, claims made so far kept
        self.needles: native.Needles | None = None
        self.notes: list[str] = []  # problems of the whole scan, for the report's errors
        if native.available():
            try:
                self.needles = native.Needles(anchors, set(by_anchor))
            except native.TooManyNeedles as e:  # a library (user rules) with more anchors than the C side holds: slower, not wrong
                self.notes.append(f"rules: {e}")
        self._plans: dict[Any, Plan] = {}
        self._testers: dict[Pattern, Any] = {}  # near / not_near regex -> its test of a context line
        self._named: dict[str, bool] = {}  # rule id -> whether its match regexes have named groups
        self._claims: dict[str, tuple[Rule, None]] = {}  # rule id -> what a pending claim of it holds
        self._groupable: dict[tuple[str, ...], bool] = {}  # matched rule ids -> none reads numbers after the scan
        self._group_msgs: dict[tuple[str, tuple[str, ...]], bool] = {}  # (key, rule ids) -> windows answer alike
        self.nearfold = nearfold.enabled()
        self.linecache = digitkey.linecache_enabled()
        self._steps: dict[tuple[str, tuple[str, ...], bool], Steps] = {}  # (key, anchors, stats row) -> rule search
        # how far before and after a claim its windows read: the rules' `within`, the side lookup's (SideFinder.side)
        self.reach = (max([60] + [r.within[0] for r in self.line_rules]), max([25] + [r.within[1] for r in self.line_rules]))
        if self.needles is not None:
            self.needles.errs = self._err_rules(parser_anchors)
        self.progress: Progress | None = None  # told the bytes scanned, when a bar shows them
        self.shape_cache: dict[Any, Any] = {}  # numeric line shapes worked out in this run (columns.Shapes._known)
        self.small_shapes: Any = None  # the shapes the small files of this process share (prefiltered.shapes_for)
        # the run's stores of metric records and timer readings (analyze sets them; None: a store per file)
        self.series: RunSeries | None = None

    @property
    def prefilter(self) -> re.Pattern[str]:
        """Any anchor, longest first (the line-for-line path's search; ~10 ms to compile)."""
        if self._prefilter is None:
            self._prefilter = re.compile("|".join(re.escape(a) for a in sorted(self.anchors, key=len, reverse=True)))
        return self._prefilter

    def _err_rules(self, parser_anchors: set[str]) -> ErrRules:
        """What the C prefilter needs to count error-like lines no rule can claim (scan/errfold.py): each needle's
        class (an error word no rule, parser or signal reads; a signal's; any other), the judge of a line, and how
        far lines read their neighbours (the widest window, a family's gap, a traceback's header and chain)."""
        assert self.needles is not None
        words = ((set(ERROR_ANCHORS) | set(ERRORISH_WORDS)) - set(NOT_FOLDED) - parser_anchors
                 - set(signals.SIGNAL_ANCHORS) - set(signals.LEVEL_ANCHORS) - set(signals.BENIGN_ANCHORS))
        # a rule of the user's may be switched off mid-file (its budget): its anchor's lines stay Python's
        ruled = {a for a in words & set(self.by_anchor) if not any(r.id in self.spent for r in self.by_anchor[a])}
        classes = bytes(STOP if a in signals.SIGNAL_ANCHORS else RULED if a in ruled
                        else ALLOWED if a in words - set(self.by_anchor) else SPECIAL for a in self.needles.anchor_of)
        reach = max(*self.reach, FAMILY_GAP, signals.CHAIN, Context.HEADER) + 1
        return ErrRules(classes, self._err_judge, reach)

    def _err_judge(self, text: str, found: tuple[str | None, ...]) -> bool:
        """Whether `line` would add this line (of a file read from disk) to the file's unexplained lines as a
        foldable line, whatever its neighbours (errfold.py)."""
        plan = self.plan(frozenset(found))
        if plan.parsers or plan.signal or not plan.errorish:
            return False
        if len(text) > FAMILY_TEXT or not text.isascii() or not text.isprintable():
            return False
        msg, actor, pid, repeat = split_ray(text)
        if actor or repeat != 1 or text.startswith("(") or not msg or msg[:1].isspace() or 'File "' in msg:
            return False
        if exception_line(msg):
            return False
        if not (ERRORISH.search(msg) is not None or error_level_only(Line("", 0, text, msg, actor, pid, repeat))):
            return False
        return all(self._never_claims(rule, msg) for a in plan.anchors for rule in self.by_anchor[a])

    def _never_claims(self, rule: Rule, msg: str) -> bool:
        """The rule claims no line of this message's key (masked.py): it does not match this one, and each regex
        either needs a literal the key rules out or reads nothing the key masks."""
        for p in rule.match:
            if impossible(p.pattern, msg):
                continue
            try:
                if not blind(p.pattern) or p.search(msg, timeout=MATCH_TIMEOUT) is not None:
                    return False
            except TimeoutError:
                return False
        return True

    def _timed_out(self, rule: Rule, where: str, what: str, res: FileResult) -> None:
        """A rule regex that backtracks catastrophically once will again: report it and switch it off."""
        self.broken.add(rule.id)
        self._steps.clear()  # the rules tried change
        res.errors.append(f"{rule.origin}: rule {rule.id}: {what} regex timed out ({MATCH_TIMEOUT}s) on {where}; "
                          f"rule disabled for the rest of the run (catastrophic backtracking?)")

    def _charge(self, rule: Rule, started: float, where: str, res: FileResult) -> None:
        """A user rule's regexes ran from `started` until now: past RULE_BUDGET in this run, switch it off."""
        spent = self.spent[rule.id] = self.spent[rule.id] + clock() - started
        if spent > RULE_BUDGET and rule.id not in self.broken and rule.id not in self.exhausted:
            self.exhausted.add(rule.id)
            res.errors.append(f"{rule.origin}: rule {rule.id}: its regexes took {spent:.1f}s (budget {RULE_BUDGET:g}s a "
                              f"run), the last on {where}; rule disabled for the rest of the run")

    # -- streaming -------------------------------------------------------------------------
    def candidates(self, chunks: Any, fs: FileScan, first_lineno: int = 1) -> Any:
        """(lineno, text) of each line (or `\\r` fragment) holding an anchor; then sets `fs.lines_seen`."""
        nl_before = first_lineno - 1
        search = self.prefilter.search
        partial = False
        for chunk in chunks:
            pos = 0
            counted = 0
            lineno = nl_before + 1
            n = len(chunk)
            tb = -1  # where a traceback's end line starts (signals.traceback_end), yielded before the next line
            while True:
                m = search(chunk, pos)
                s = m.start() if m else n
                start = max(chunk.rfind("\n", pos, s), chunk.rfind("\r", pos, s)) + 1
                if start == 0 and pos > 0:
                    start = pos
                if 0 <= tb < start:  # an anchorless line ends the traceback before this one
                    nl = chunk.find("\n", tb)
                    nl = n if nl < 0 else nl
                    if not m or s >= nl:
                        cr = chunk.find("\r", tb, nl)
                        lineno += chunk.count("\n", counted, tb)
                        counted = tb
                        text = chunk[tb:cr if cr >= 0 else nl]
                        yield lineno, text[:MAX_LINE] + TRUNCATED if len(text) > MAX_LINE else text
                    tb = -1
                if not m:
                    break
                nl = chunk.find("\n", s)
                if nl < 0:
                    nl = n
                cr = chunk.find("\r", s, nl)
                end = cr if cr >= 0 else nl
                lineno += chunk.count("\n", counted, start)
                counted = start
                if start == tb:
                    tb = -1
                text = chunk[start:end]
                if len(text) > MAX_LINE:
                    text = text[:MAX_LINE] + TRUNCATED
                yield lineno, text
                if 'File "' in text or "panicked at " in text:
                    t = signals.traceback_end(chunk, start, nl)
                    tb = t if t >= 0 else tb
                pos = end + 1
            nl_before += chunk.count("\n")
            partial = bool(chunk) and not chunk.endswith("\n")
        fs.lines_seen = nl_before + partial

    def scan(self, lf: LogFile, chunks: Any = None, staged: Any = None) -> FileResult:
        """One file's result. `chunks`: its text, when it is not read from lf.path (stdin); `staged`: its
        chunks as another process reads and prefilters them (parallel.Staged), for this one to parse."""
        res = FileResult(lf)
        kept = None  # a small file's bytes as the scan read them (_Kept), for _tables
        joined = self.series is not None and self.series.here()
        if joined:
            assert self.series is not None  # the timers are closed once, by the run (RunSeries.close)
            fs = FileScan(lf, res, (JoinedRecords(self.series.store), self.series.timers))
        else:
            fs = FileScan(lf, res)
        fs.ctx = Context(self.reach, fs.pending)
        fs.near = NearFold(self.reach, self.may_group)
        stream: Any = None  # the file's stream (a _Kept of it for a small file)
        try:
            if staged is not None:
                lf.lines = fastscan.parse_chunks(self, fs, staged.items(fs.note), staged.reopen)
                counted = True  # by the process that read it
            else:
                if chunks is None:
                    # a small plain file in one read (read_small), else through open_stream's layers
                    data = read_small(lf.path, lf.size, fs.note) if (self.needles is not None and not lf.compression
                                                            and 0 < lf.size < fastscan.COLUMNS_FROM) else None
                    if data is not None:
                        stream = io.BytesIO(data)
                        fs.own_bytes = True
                        if lf.size <= tables.MAX_BYTES:
                            kept = _Kept.whole(data)
                    else:
                        stream = open_stream(lf.path, lf.compression, fs.note)
                        if not lf.compression and lf.size <= tables.MAX_BYTES:
                            stream = kept = _Kept(stream, lf.size + 1)
                counted = chunks is None and self.needles is not None and hasattr(stream, "readinto")
                if counted:
                    assert stream is not None
                    lf.lines = shared_count(fastscan.scan_file(self, fs, stream, self.progress))
                else:
                    assert chunks is not None or stream is not None
                    self._scan_lines(fs, chunks if chunks is not None else iter_chunks(stream))
                    lf.lines = max(lf.lines, fs.lines_seen)
            if self.progress is not None and (lf.compression or not counted):
                self.progress.add(lf.size)  # counted when done: the chunks were not the file's own bytes
        except (OSError, EOFError, ValueError) as e:
            fs.note(f"read stopped early: {e}")
        except Exception as e:  # noqa: BLE001 - one odd file must not end the run
            fs.note(f"read stopped early: {type(e).__name__}: {e}")
        finally:
            if stream is not None:
                stream.close()
        fs.near.end(fs)
        if chunks is None:  # a file on disk (stdin's text is not read twice)
            self._tables(fs, kept)
        fs.metrics.close()
        if not joined:
            fs.timers.close()
        self._resolve(fs)
        return res

    @staticmethod
    def _tables(fs: FileScan, kept: _Kept | None = None) -> None:
        """The metric tables of a small file without metric records of its own (parsers/tables.py), read again from
        its start: their rows hold no literal the prefilter could anchor on. Either scan path ends here, so both read
        the same tables. `kept`: the file's bytes as the scan read them to their end (the same bytes a second
        opening reads: the stream stops at the size the file had when opened), else the file is opened again."""
        lf = fs.lf
        if lf.size > tables.MAX_BYTES or not lf.path or fs.metrics.pushed or fs.metrics.open:
            return  # a run's own log, whose metric lines the line parsers read, is no paste of a table
        if kept is not None and (kept.ended or not kept.room):
            data = b"".join(kept.parts)
        else:
            try:
                with open_stream(lf.path, lf.compression) as stream:
                    data = stream.read(lf.size + 1 if not lf.compression else tables.MAX_BYTES + 1)
            except (OSError, EOFError, ValueError):
                return  # the scan has said what it could not read
        if not tables.may_hold(data):
            return
        for ev in tables.read("".join(iter_chunks(io.BytesIO(data))).splitlines(), lf.rel):
            fs.metrics.append(ev)

    def _scan_lines(self, fs: FileScan, chunks: Any) -> None:
        """The line-for-line path (stdin, compressed files, no C prefilter)."""
        runs = Runs()
        for lineno, text in self.candidates(chunks, fs):
            if runs.folds(lineno, text):
                continue
            self.line(fs, lineno, text)
            runs.after(fs.ctx, lineno, text)
            fs.near.runs_after(runs, lineno, text)

    def plan(self, found: frozenset[str | None]) -> Plan:
        """What to try on a line holding these anchors (a frozenset; fastscan maps the prefilter's needle
        indices to it, the line-for-line path tests the message). Cached: a log has few distinct sets."""
        plan = self._plans.get(found)
        if plan is None:
            anchors = tuple(a for a in self.anchor_list if a in found)
            plan = Plan(tuple(p for p in PARSERS if found.intersection(p.ANCHORS)), anchors,
                        not found.isdisjoint(ERRORISH_WORDS) or not found.isdisjoint(signals.LEVEL_ANCHORS),
                        not found.isdisjoint(signals.SIGNAL_ANCHORS),
                        not any(c.isdigit() for a in anchors for c in a)
                        and not any(r.id in self.spent for a in anchors for r in self.by_anchor[a]),
                        all(r.errors_only for a in anchors for r in self.by_anchor[a]))
            if len(self._plans) > 4096:
                self._plans.clear()
            self._plans[found] = plan
        return plan

    def line(self, fs: FileScan, lineno: int, text: str, plan: Plan | None = None, known: bytes | None = None) -> None:
        """One candidate line. `plan`: what to try on it, when the prefilter knows which anchors it holds; `known`:
        the shape of a KNOWN line's key (errfold)."""
        lf, res, ctx = fs.lf, fs.res, fs.ctx
        msg, actor, pid, repeat = split_ray(text)
        line = Line(lf.rel, lineno, text, msg, actor, pid, repeat)
        if plan is KNOWN:  # a line of a key errfold registered: what the rest of this method does with it
            fs.near.end(fs)
            ctx.add(line)
            fs.family.kept(line, None, None)
            fs.errorish.add(line, shape=known)
            return
        frame = 'File "' in msg and FRAME.match(msg) is not None
        echo = False  # a `raise X("...")` source line under its frame: it ran, and names what a cut paste lost
        # (or an `assert` whose bare AssertionError names nothing: vLLM's weight loader `assert param_data.shape ==
        # loaded_weight.shape` above a message-less "AssertionError")
        if frame:
            fs.frame_at = lineno
        elif lineno == fs.frame_at + 1 and msg[:1].isspace():
            if not msg.lstrip().startswith(("raise ", "assert ")):
                fs.near.end(fs)
                ctx.add(line)  # the source line a traceback echoes under its frame: context, never a match
                return
            echo = True
        if plan is None:  # the line-for-line path: which anchors the line holds, prefixes too, as the prefilter
            plan = self.plan(frozenset(a for a in self.anchors if a in text))  # finds them (a level word in one)
        is_stats = False
        event = None  # an event of another kind: kept once the line is known not to fold into its family
        for parser in () if echo else plan.parsers:  # an echoed raise is for the rules, not an event
            ev = parser.parse(line)
            if ev is not None:
                if ev.kind == "stats":
                    key = engine_key(lf.rel, pid, RAY_PREFIX.sub("", text, count=1) if actor else text)
                    engine(res, key).add(ev)
                    is_stats = True
                elif ev.kind == "metrics":
                    fs.metrics.append(ev)
                    is_stats = True  # metric dicts are data, not traceback context
                else:
                    event = ev
                break
        mkey = None  # the message's key (digitkey.key), when it was needed
        if not plan.anchors or is_stats and plan.records:
            matched = []  # no rule can claim it (_search_rules would try none, or skip each as not an error line)
        elif self.linecache and plan.steady and len(msg) <= TRUSTED_LEN:
            mkey = digitkey.key(msg)
            matched = self._cached_search(line, msg, mkey, plan, is_stats)
        else:
            matched = self._search_rules(fs, line, msg, plan, is_stats)
        self._claim(fs, line, msg, mkey, plan, matched, is_stats, frame, echo, event)

    def _cached_search(self, line: Line, msg: str, mkey: str, plan: Plan, is_stats: bool) -> list[tuple[Rule, Any]]:
        """The rules that match the line, as _search_rules finds them, for a steady plan and a message up to
        TRUSTED_LEN (no user's rule, no timeout): the rules tried and the answers of the rules whose regexes answer
        alike on every message of its key are kept per key (Steps); the others are searched, each regex once."""
        k = (mkey, plan.anchors, is_stats)
        steps = self._steps.get(k)
        if steps is None or steps.plan is not plan:
            steps = self._steps_of(msg, plan)
            if len(self._steps) > 4096:
                self._steps.clear()
            self._steps[k] = steps
        matched: list[tuple[Rule, Any]] = []
        error_line: bool | None = None
        seen: dict[str, bool] = {}  # regex source -> whether it matches msg (rules often share a regex)
        for claims, errors_only, patterns in steps.steps:
            if errors_only:
                if error_line is None:
                    error_line = not is_stats and is_error_line(line)
                if not error_line:
                    continue
            if patterns is not None:
                for p in patterns:
                    src = p.pattern
                    found = seen.get(src)
                    if found is None:
                        found = seen[src] = p.search(msg) is not None
                    if found:
                        break
                else:
                    continue
            matched.extend(claims)
        return matched

    def _steps_of(self, msg: str, plan: Plan) -> Steps:
        """The rules a message of this plan tries, in _search_rules's order, with the answers that hold for its key."""
        steps: list[tuple[tuple[tuple[Rule, None], ...], bool, tuple[Any, ...] | None]] = []
        tried: set[str] = set()
        for a in plan.anchors:
            if a in msg:  # an anchor holds no digit (a steady plan): in every message of the key or in none
                for rule in self.by_anchor[a]:
                    if rule.id in tried or rule.id in self.broken:
                        continue
                    tried.add(rule.id)
                    claim = self._claims.get(rule.id)
                    claim = claim if claim is not None else self._claims.setdefault(rule.id, (rule, None))
                    patterns: tuple[Any, ...] | None = tuple(rule.match)
                    if all(digitkey.runs_alike(p.pattern, msg) for p in rule.match):
                        if not any(p.search(msg) is not None for p in rule.match):
                            continue
                        patterns = None
                    if patterns is None and steps and steps[-1][2] is None and steps[-1][1] == rule.errors_only:
                        steps[-1] = (steps[-1][0] + (claim,), rule.errors_only, None)
                    else:
                        steps.append(((claim,), rule.errors_only, patterns))
        return Steps(plan, tuple(steps))

    def _search_rules(self, fs: FileScan, line: Line, msg: str, plan: Plan, is_stats: bool) -> list[tuple[Rule, Any]]:
        """The rules that match the line: those under the anchors it holds, each tried once."""
        lf, res, lineno = fs.lf, fs.res, line.lineno
        matched: list[tuple[Rule, Any]] = []
        error_line: bool | None = None  # asked only when an errors_only rule's anchor is in the line
        tried: set[str] = set()  # a rule under two of the line's anchors is tried once
        for a in plan.anchors:
            if a in msg:
                for rule in self.by_anchor[a]:
                    if rule.id in tried or rule.id in self.broken or rule.id in self.exhausted:
                        continue
                    tried.add(rule.id)
                    if rule.errors_only:  # a metric record or stats row is data, never an error line
                        if error_line is None:
                            error_line = not is_stats and is_error_line(line)
                        if not error_line:
                            continue
                    started = clock() if rule.id in self.spent else None
                    try:
                        mo = self._search(rule, msg)
                    except TimeoutError:
                        self._timed_out(rule, f"{lf.rel}:{lineno}", "match", res)
                        continue
                    finally:
                        if started is not None:
                            self._charge(rule, started, f"{lf.rel}:{lineno}", res)
                    if mo:  # one shared (rule, None) a rule: the match is taken again when its numbers are asked for
                        claim = self._claims.get(rule.id)
                        matched.append(claim if claim is not None else self._claims.setdefault(rule.id, (rule, None)))
        return matched

    def _claim(self, fs: FileScan, line: Line, msg: str, mkey: str | None, plan: Plan, matched: list[tuple[Rule, Any]],
               is_stats: bool, frame: bool, echo: bool, event: Any) -> None:
        """What the line is once its rules are known: a claim (or part of its family or group), an event, context."""
        res, ctx, lineno = fs.res, fs.ctx, line.lineno
        family = None
        if matched and not is_stats and not frame and not echo and not plan.signal:
            family = fs.family.fold(line, matched, event, ctx)
            if family is None:
                return  # counted into the line before it
            if family == () and event is None:
                if fs.near.take(fs, line, matched, mkey):
                    return  # a claim of its group's middle or tail (nearfold.py)
            else:
                fs.near.end(fs)
        elif not is_stats:
            fs.near.end(fs)
        if event is not None:
            if event.kind == "timer":
                fs.timers.add(event)
            else:
                res.events.append(event)
        if matched:
            fs.pending.append((line, matched))
            if echo:
                fs.raise_echo.add(lineno)
        if not is_stats:
            ctx.add(line)
            fs.family.kept(line, family, event)
            if plan.signal:
                res.marks.append(line)
                if signals.SHUTDOWN.search(msg) and not signals.SIGNAL_EXIT.search(msg):
                    fs.errorish.shutdown(lineno)
            if not matched and plan.errorish and not frame and not echo and not _polling(event) \
                    and not msg.startswith(signals.TRACEBACK) and (ERRORISH.search(msg) or error_level_only(line)):
                fs.errorish.add(line, not plan.signal and not exception_line(msg))
        elif plan.signal and signals.SHUTDOWN.search(msg) and not signals.SIGNAL_EXIT.search(msg):
            # a stop marker written onto a progress line: a job killed mid-bar, slurmstepd's "*** JOB ... CANCELLED
            # AT ... DUE TO TIME LIMIT ***" appended to tqdm's last carriage-return update
            res.marks.append(line)
            fs.errorish.shutdown(lineno)

    # -- claims ----------------------------------------------------------------------------
    def may_group(self, fs: FileScan, line: Line, key: str, matched: list[tuple[Rule, Any]]) -> bool:
        """Whether a group of near-identical claim lines may start at this one (scan/nearfold.py): no rule it matched
        reads its numbers after the scan or is a user's, every window test and the side lookup answer alike on each
        message of its key, and a rule without window or threshold is sure to claim a middle line."""
        if not self.nearfold:
            return False
        ids = tuple(r.id for r, _ in matched)
        ok = self._groupable.get(ids)
        if ok is None:
            ok = self._groupable[ids] = not any(
                r.when or r.reveals or r.follow or r.id in self.spent
                or any("retracted" in p.compile().groupindex for p in r.match) for r, _ in matched)
        if not ok or any(r.id in self.broken or r.id in self.exhausted for r, _ in matched):
            return False
        msg = line.msg
        alike = self._group_msgs.get((key, ids))
        if alike is None:
            if len(self._group_msgs) > 4096:
                self._group_msgs.clear()
            alike = self._group_msgs[(key, ids)] = may_start(msg, self.lib.sides.values()) and all(
                answers_alike(p.pattern, msg) for r, _ in matched for p in (r.near, r.not_near) if p is not None)
        if not alike:
            return False
        # a middle line's side: its window holds only lines of the group, so no marker but its own message's
        side = "verifier" if self.sides.callee(msg) == "verifier" else (
            self.sides.of_actor(line.actor) or self.sides.of_text(msg) or fs.lf.side)
        return any(r.near is None and r.not_near is None and (not r.side or side in r.side)
                   and not (r.not_side and side in r.not_side) for r, _ in matched)

    def _holds(self, rule: Rule, line: Line, numbers: dict[str, Any] | None, ctx: Context, lf: LogFile,
               side_cache: dict[tuple[int, int], str]) -> str | None:
        """The line's side when the rule's conditions hold, else None (`numbers`: the match's, when rule.when)."""
        if rule.when and not thresholds_hold(rule.when, numbers or {}):
            return None
        key = (line.lineno, id(line))
        side = side_cache.get(key)
        if side is None:
            side = self.sides.of_joined(line) or self.sides.side(line.lineno, line.actor, line.msg, ctx, lf.side)
            side_cache[key] = side
        if rule.side and side not in rule.side:
            return None
        if rule.not_side and side in rule.not_side:
            return None
        stream = stream_of(line)  # a rank's own lines decide, where several ranks write to one stream
        if rule.near is not None and not ctx.any(line.lineno, rule.within, rule.near, self._tester(rule.near),
                                                 stream=stream):
            return None
        if rule.not_near is not None and ctx.any(line.lineno, rule.within, rule.not_near, self._tester(rule.not_near),
                                                 stream=stream):
            return None
        return side

    def _numbers(self, rule: Rule, line: Line) -> dict[str, Any]:
        """The numbers of a rule's match on a line it matched when scanned. A pending claim keeps no match object:
        one of the `regex` module holds ~1 kB (its capture arrays, the searched text), and a storm of 100 k lines
        matched by a dozen rules each kept 5 kB a line. The match is taken again (the same, the regex being the
        same), for the few claims that need numbers: a rule with named groups, once it holds or has thresholds."""
        named = self._named.get(rule.id)
        if named is None:
            named = self._named[rule.id] = any(p.compile().groupindex for p in rule.match)
        if not named:
            return {}
        try:
            mo = self._search(rule, line.msg)
        except TimeoutError:  # it ran within the limit once; a second run that does not gives no numbers
            return {}
        return numbers_of(mo) if mo else {}

    def _search(self, rule: Rule, msg: str) -> Any:
        """`rule.search(msg)`: with the timeout for a user's rule or a message longer than TRUSTED_LEN, else without."""
        if len(msg) > TRUSTED_LEN or rule.id in self.spent:
            return rule.search(msg)
        for p in rule.match:
            m = p.search(msg)
            if m:
                return m
        return None

    def _tester(self, pattern: Pattern) -> Any:
        """A `near` / `not_near` regex as a test of a context line (TimeoutError as for `Rule.search`; no timeout for
        a built-in rule's regex on a line up to TRUSTED_LEN, as _search)."""
        test = self._testers.get(pattern)
        if test is None:
            search = pattern.search
            if id(pattern) in self.guarded:
                test = lambda line: search(line.msg, timeout=MATCH_TIMEOUT)  # noqa: E731
            else:
                test = lambda line: search(line.msg) if len(line.msg) <= TRUSTED_LEN else search(  # noqa: E731
                    line.msg, timeout=MATCH_TIMEOUT)
            self._testers[pattern] = test
        return test

    def _resolve(self, fs: FileScan) -> None:
        lf, res, ctx, pending, errorish = fs.lf, fs.res, fs.ctx, fs.pending, fs.errorish
        if not pending and not ctx.lines and not res.marks and errorish.empty():
            return  # nothing to claim, no traceback, no shutdown or signal: _exits would find nothing (most of a run's
            # small verifier logs)
        marks = {id(ln) for ln in res.marks}
        tail = ctx.lines[-1] if ctx.lines else None
        claimed: dict[int, str] = {}  # id(line) -> the rule that claimed it
        side_cache: dict[tuple[int, int], str] = {}
        follow: list[tuple[Hit, Rule]] = []
        if fs.raise_echo:
            pending = self._drop_raise_echoes(pending, fs.raise_echo)
        for line, matched in pending:
            matched.sort(key=lambda rm: -rm[0].priority)
            for rule, _ in matched:
                if rule.id in self.broken or rule.id in self.exhausted and (rule.near or rule.not_near):
                    continue
                numbers = self._numbers(rule, line) if rule.when else None  # the others' numbers: once a rule holds
                started = clock() if rule.id in self.spent else None
                try:
                    side = self._holds(rule, line, numbers, ctx, lf, side_cache)
                except TimeoutError:
                    self._timed_out(rule, f"{lf.rel}:{line.lineno}", "near/not_near", res)
                    continue
                finally:
                    if started is not None:
                        self._charge(rule, started, f"{lf.rel}:{line.lineno}", res)
                if side is None:
                    continue
                hit = Hit(rule.id, line, self._numbers(rule, line) if numbers is None else numbers, side)
                res.hits.append(hit)
                claimed[id(line)] = rule.id
                if rule.follow:
                    follow.append((hit, rule))
                break
            else:
                if (is_errorish(line.msg) or error_level_only(line)) and not FRAME.match(line.msg):
                    errorish.add(line, id(line) not in marks and line is not tail and not exception_line(line.msg),
                                 newest=False)
        for hit, rule in follow:  # attach the traceback's final exception line to its header
            for other in ctx.after(hit.line.lineno, rule.within[1]):
                if FINAL_EXC.match(other.msg):
                    if id(other) not in claimed:
                        hit.extra.append(other)
                        claimed[id(other)] = hit.rule
                    break
        lines, res.folded = errorish.close()  # a folded line is never claimed: only exception lines are, by `follow`
        res.unclaimed = [ln for ln in lines if id(ln) not in claimed]
        self._exits(lf, res, ctx, claimed, fs.metrics.last if isinstance(fs.metrics, JoinedRecords) else 0)

    def _drop_raise_echoes(self, pending: list[Any], echoes: set[int]) -> list[Any]:
        """An echoed `raise X("...")` source line is evidence only when the exception line it raised is missing
        (a paste cut before it): a hit of the same rule on a line within the next 40 makes the echo redundant.
        `pending` is in line order, so only the few entries after each echo are looked at."""
        keep = []
        for i, (line, matched) in enumerate(pending):
            if line.lineno in echoes:
                ids = {r.id for r, _ in matched}
                at = line.lineno
                later = itertools.takewhile(lambda e, at=at: bool(e[0].lineno - at <= 40), pending[i + 1:i + 200])  # type: ignore[misc]
                if any(ids & {r.id for r, _ in m} for _, m in later):
                    continue
            keep.append((line, matched))
        return keep

    def _rule_kind(self, rid: str) -> tuple[str, str]:
        rule = self.lib.rule(rid)
        return (rule.severity, rule.category) if rule is not None else ("", "")

    def _reward_frames(self, found: list[signals.Chain], res: FileResult, claimed: dict[int, str]) -> None:
        """A traceback whose frames run through reward code ends in a reward-function failure: its final line goes to
        verifier.reward-exception unless a rule at least as specific claimed it (a timeout, an OOM)."""
        rule = self.lib.rule(REWARD_RULE)
        if rule is None:
            return
        self._not_reward_frames(rule, found, res, claimed)
        faults = [h.line.lineno for h in res.hits if h.rule in DEVICE_FAULT_RULES]
        for chain in signals.reward_chains(found):
            final = chain.final
            assert final is not None
            if claimed.get(id(final)) in DEVICE_FAULT_RULES or any(
                    0 < chain.head.lineno - at <= DEVICE_FAULT_BEFORE for at in faults):
                continue
            # one failure, one count: the chain's wrapper lines (a RayTaskError header) are not a second one
            res.hits = [h for h in res.hits if not (h.rule == rule.id and chain.head.lineno <= h.line.lineno < final.lineno)]
            owner = self.lib.rule(claimed.get(id(final), ""))
            if owner is not None and (owner.category != "other" or owner.priority >= rule.priority):
                continue
            if owner is not None:
                res.hits = [h for h in res.hits if h.line is not final]
            res.hits.append(Hit(rule.id, final, {}, "verifier"))
            res.hits.sort(key=lambda h: h.line.lineno)
            claimed[id(final)] = rule.id
            res.unclaimed = [ln for ln in res.unclaimed if ln is not final]

    @staticmethod
    def _not_reward_frames(rule: Rule, found: list[signals.Chain], res: FileResult, claimed: dict[int, str]) -> None:
        """A whole traceback is its own context: when none of its frames runs through reward code or names it, the
        text around it (a metric key `rewards/reward_fn` in the step rows printed before) does not make its final
        exception a reward-function failure; the line goes back to the unexplained ones (or is the process's end)."""
        for chain in found:
            final = chain.final
            if final is None or chain.cut or not chain.frames or claimed.get(id(final)) != rule.id:
                continue
            if rule.near is None or any(rule.near.search(f) for f in (*chain.frames, final.msg)) \
                    or signals.through_reward_code(chain):
                continue
            res.hits = [h for h in res.hits if not (h.rule == rule.id and h.line is final)]
            del claimed[id(final)]
            res.unclaimed = sorted([*res.unclaimed, final], key=lambda ln: ln.lineno)

    def _exits(self, lf: LogFile, res: FileResult, ctx: Context, claimed: dict[int, str], records_end: int) -> None:
        """The file's orderly shutdown and the exception that ended its process, as events (signals.judge); the
        teardown noise after a shutdown leaves the hits and the unclaimed lines. `records_end`: the line of the
        file's last metric record when it went into the run's store (else its store's event says)."""
        last = max([records_end] + [st.last_lineno() for st in res.engines.values()]
                   + [ev.line.lineno for ev in res.events if ev.kind == "metric_series"], default=0)

        def progress_after(line: Line) -> bool:
            return last > (line.until or line.lineno)

        for h in res.hits:  # a rule with `if_went_on`: did the file go on recording steps after this line?
            rule = self.lib.rule(h.rule)
            if rule is not None and rule.if_went_on and progress_after(h.line):
                h.numbers["went_on"] = True

        found = signals.chains(ctx.lines)
        self._reward_frames(found, res, claimed)
        ex = signals.judge(found, res.marks, res.hits, res.unclaimed, lf.lines, progress_after, self._rule_kind,
                           ctx.lines)
        if ex.fatal is not None:
            ex.fatal_rule = ex.fatal_rule or claimed.get(id(ex.fatal), "")
            # reported as the process's end, or explained by the rule that claimed a line of its block (torch
            # elastic's ChildFailedError table): not again as an unexplained line; nor are the exceptions chained
            # into it: Python prints "The above exception was the direct cause of the following exception:" (or
            # "During handling of the above exception, another exception occurred:") between blank lines, so the
            # next traceback starts four lines after the cause's exception line (and its message's continuation
            # lines). One failure, read from its last exception up; a second traceback printed right after a first
            # one is not chained and stays.
            head = ex.chain.head.lineno if ex.chain is not None else ex.fatal.lineno
            starts = {ln.lineno for ln in ctx.lines if head < ln.lineno < ex.fatal.lineno
                      and signals.TRACEBACK in ln.msg[:80]}
            # The chain's own last line, when it only pointed up to the cause judge took (vLLM's EngineDeadError),
            # is that failure's wrapper.
            wrapper = ex.chain.final if ex.chain is not None and ex.chain.final is not ex.fatal else None
            detail = ex.chain.detail if ex.chain is not None else None  # a Rust panic's message line
            res.unclaimed = [ln for ln in res.unclaimed if ln is not ex.fatal and ln is not wrapper
                             and ln is not detail and not (
                head < ln.lineno < ex.fatal.lineno and signals.EXC_LINE.match(ln.msg) and any(
                    0 <= t - (ln.until or ln.lineno) - CHAINED_GAP <= CHAINED_MESSAGE for t in starts))]
        for ev in (signals.shutdown_event(ex), signals.fatal_event(ex)):
            if ev is not None:
                res.events.append(ev)


class _Kept:
    """A small file's stream that keeps the first `room` bytes read from it, so the metric tables' pass
    (Scanner._tables) reads them instead of opening the file a second time (half of the opens of a run of
    per-sample verifier logs, each with its head's wrap test). `ended`: the stream was read to its end."""

    __slots__ = ("stream", "parts", "room", "ended")

    def __init__(self, stream: Any, room: int) -> None:
        self.stream = stream
        self.parts: list[bytes] = []
        self.room = room  # bytes still to keep (a file that grew since discovery is not kept whole)
        self.ended = False

    @classmethod
    def whole(cls, data: bytes) -> _Kept:
        """A file's bytes read whole (decompress.read_small) as the kept bytes of a stream read to its end."""
        kept = cls(None, 0)
        kept.parts.append(data)
        kept.ended = True
        return kept

    def _keep(self, data: Any) -> None:
        if self.room > 0:
            part = bytes(data[:self.room])
            self.parts.append(part)
            self.room -= len(part)

    def readinto(self, buffer: Any) -> int:
        n = self.stream.readinto(buffer) or 0
        if n:
            self._keep(memoryview(buffer)[:n])
        else:
            self.ended = True
        return n

    def read(self, n: int = -1) -> bytes:
        out: bytes = self.stream.read(n)
        if out:
            self._keep(out)
        if not out or n is None or n < 0:
            self.ended = True
        return out

    def close(self) -> None:
        self.stream.close()
