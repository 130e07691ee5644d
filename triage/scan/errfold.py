"""Error-like lines no rule can claim, counted per shape by the C prefilter (_linescan.c, Errs) instead of handed to
Python one by one.

A log can hold millions of them (a retry loop, a driver printing every failed request) of a few hundred messages whose
numbers, ids and hex change; each cost a Python call (Scanner.line) and a shape (template.shape) before its lines were
folded per shape anyway (scan/unexplained.py). Now the stage that reads a file (prefiltered.read_chunks) judges the
first line of each key as Scanner.line would (`ErrRules.judge`): a line whose needles are error words only (none a
rule's anchor, a parser's, a signal's, a traceback's or an exit code's), of one process (no Ray prefix, no repeat
count), that Scanner.line would add to the file's unexplained lines as foldable (error-like, not an exception line,
not a traceback frame or the source line under one). Its key (the line's shape, template.shape, taken over the whole
line by the C side, and its needles) is registered, and the C side counts later lines of that key: per key, how
many, the first, the last and the one before it, handed over once per file (ErrFold.records) and applied to the
file's unexplained lines as if each line had come (Unexplained.natives).

What makes that exact (tests/test_errfold.py compares both ways on the fixtures and generated runs):
- the key implies the decision: lines of one key differ only in digits, in hex tokens (ids, digests, handles) and in
  the length of numbers standing alone, which no test of the decision reads (they test character classes, and the
  literals with digits are excluded: `exit code 1` is an exit code's needle, and the gates that hold a digit are
  looked for by the C side); the line is registered only when its shape is the plain kind (no quote, no secret
  pattern's gate), which the C side computes (a test compares the two);
- no line that reads its neighbours is near a counted line: the C side counts a line only when no candidate line
  holding another needle is within `reach` lines (the widest `near`/`not_near` window and side lookup, a traceback's
  header and chain, a family's gap), and stops at the first line holding a signal's needle (lines after an orderly
  shutdown are kept whole); what is counted then only ever mattered to the unexplained lines; a line of a rule's
  anchor whose key is not known yet is taken for one that reads nothing until learn has judged it, and when it does
  read around (ErrFold.settle) the chunk is scanned again before its counts are committed;
- the file's newest counted line goes to the context and to the unexplained lines as the line it was (a log that
  ends in such a line ends there).
Lines of a key whose needles follow from its text (`pieces`) are not searched for needles: the C side keys each line
after one of such a key and counts it while it is (_linescan.c, err_run); TRIAGE_NO_ERRRUN=1 searches every line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from triage.lazyre import lazy
from triage.model import Line
from triage.redact import PATTERNS
from triage.scan.masked import impossible
from triage.scan.native import F_RAY, K_KNOWN, _linescan
from triage.scan.origins import split_ray
from triage.template import _GATES, SHAPE_EXACT, shape

ERRFOLD_FROM = 256 << 10  # bytes: smaller files hand every line to Python (judging keys would cost more than it saves)
NOT_FOLDED = ("Traceback", 'File "', "exit code", "exit status", "exited with", "exitcode", "ray::", "RayTaskError")
ALLOWED, SPECIAL, STOP, RULED = 0, 1, 2, 3  # the classes of needles (_linescan.c ERR_ALLOWED, ...): an error word,
# another needle, a signal's, an error word some rule is anchored on (a line of it folds once no rule can claim its key)
MAX_DECIDED = 1 << 14  # keys a file remembers the decision of
AHEAD_BYTES = 256 << 10  # bytes of a chunk's last lines its look-ahead may hold (ErrFold.ahead)


KNOWN = "known"  # the plan Scanner.line is given for a K_KNOWN line: an error-like line of a registered key


def enabled() -> bool:
    """Error-like lines are counted by the C side (TRIAGE_NO_ERRFOLD=1: each reaches Python, for comparison)."""
    return not os.environ.get("TRIAGE_NO_ERRFOLD")


def runs() -> bool:
    """Lines of keys whose needles follow from their text are taken whole, not searched (_linescan.c err_run;
    TRIAGE_NO_ERRRUN=1: each is searched, for comparison)."""
    return not os.environ.get("TRIAGE_NO_ERRRUN")


class ErrRules:
    """What a scanner tells the reading stage: each needle's class, the judge of a line, how far lines read."""

    def __init__(self, classes: bytes, judge: Callable[[str, tuple[str | None, ...]], bool], reach: int):
        self.classes = classes
        self.judge = judge
        self.reach = reach
        # (key, needle indices) -> whether its lines fold, judged once a run: the judge reads the rules only, and the
        # engine logs of a run print the same messages (a rule switched off later only makes fewer lines claimable)
        self.decided: dict[tuple[bytes, Any], bool] = {}
        self.pieces: dict[tuple[str | None, ...], tuple[tuple[bytes, ...] | None, ...]] = {}  # anchor_of -> theirs

    def pieces_of(self, anchor_of: list[str | None]) -> tuple[tuple[bytes, ...] | None, ...]:
        """Each needle's pieces (`pieces`), worked out once."""
        key = tuple(anchor_of)
        got = self.pieces.get(key)
        if got is None:
            got = self.pieces[key] = tuple(pieces(a) for a in anchor_of)
        return got


TOKEN = lazy(r"[A-Za-z0-9_]+|[^A-Za-z0-9_]")
HEXISH = lazy(r"(?:0?[xX])?[0-9a-fA-F]*")  # a word a key may mask some letter of: a hex token's part, a handle's


def pieces(needle: str | None) -> tuple[bytes, ...] | None:
    """How a needle lies in the lines of one key (_linescan.c, lines taken whole). None: it is stable, no digit and
    no word a hex token or a `0x` handle could hold (every word holds a letter g-z or `_`, `x` after a hex digit),
    so where it occurs in a line its key holds it as it is, and where the key holds it so does every line of the key;
    (the needles of error words, `Error`, `failed`, are). Else the pieces of it that a key keeps as they are: its words
    that hold such a letter (digits as the key writes them, `1`) and the characters between them, but for a `.` or
    `:` beside a digit (an address's, which the key makes one mark); a needle can only occur in a line whose key holds
    every one of its pieces. A needle with no piece may occur anywhere. (A needle that is not printable ASCII, or
    the single bytes, occur in no keyed line.)"""
    if needle is None or not needle.isascii() or not needle.isprintable():
        return None
    tokens = TOKEN.findall(needle)
    digit = [any(c.isdigit() for c in t) for t in tokens]
    if not any(digit) and not any(HEXISH.fullmatch(t) for t in tokens if t[0].isalnum() or t[0] == "_"):
        return None
    out, cur = [], ""
    for i, t in enumerate(tokens):
        if t[0].isalnum() or t[0] == "_":
            good = not HEXISH.fullmatch(t)
            t = re.sub(r"[0-9]", "1", t)
        else:
            good = t not in ".:" or not (i > 0 and digit[i - 1] or i + 1 < len(tokens) and tokens[i + 1][0].isdigit())
        if good:
            cur += t
        elif cur:
            out.append(cur.encode())
            cur = ""
    if cur:
        out.append(cur.encode())
    return tuple(out)


class ErrFold:
    """One file's keys and counts, in the stage that reads it."""

    def __init__(self, rules: ErrRules, anchor_of: list[str | None]) -> None:
        self.rules = rules
        self.anchor_of = anchor_of
        self.state = _linescan.errfold_new(rules.classes, rules.reach, rules.pieces_of(anchor_of) if runs() else None)
        self.shapes: dict[int, bytes] = {}  # slot -> the shape of its lines' messages
        self.decided = rules.decided

    def arg(self, base: int, ahead: int = 0) -> tuple[Any, int, int]:
        """The scan() argument for a buffer after `base` lines, followed by `ahead` lines that read nothing (ahead)."""
        return self.state, base, ahead

    def ahead(self, matcher: Any, buf: Any, cut: int, text_of: Callable[[Any], str]) -> tuple[int, int]:
        """A chunk's look-ahead: where the chunk of buf[:cut] ends instead, and how many lines after that end read
        nothing (the C side counts the error-like lines within `reach` of its end only as far as those allow). Its last
        `reach` lines become the next chunk's first, looked at here for the needles the C side will find in them (the
        keys of their lines judged now, as learn would after the next scan): one may read around when it holds a
        needle not an error word's, or a rule's whose key is not registered as one that folds (_linescan.c err_take).
        Else a chunk's end would hand Python its last `reach` lines each time, whatever follows. (cut, 0) when they
        cannot be vouched for (colour codes, `\r`, NULs, few or long lines)."""
        reach = self.rules.reach
        floor = max(0, cut - AHEAD_BYTES)
        lo = cut - 1
        for _ in range(reach):
            lo = buf.rfind(b"\n", floor, lo)
            if lo < 0:
                return cut, 0
        start = lo + 1
        with memoryview(buf) as whole, whole[start:cut] as view:
            _, flags, _, _, hits, _ = _linescan.scan(matcher, view, len(view) + 1, 0, False)  # (no row sampled, none folded)
            if flags & ~F_RAY:
                return cut, 0
            self.learn(view, hits, text_of)
            for kind, rel, s, e, ids in hits:
                if kind == 0 and self._reads_around(view, s, e, ids):
                    return start, rel
        return start, reach

    def _reads_around(self, data: Any, start: int, end: int, ids: tuple[int, ...]) -> bool:
        """Whether a candidate line may read its neighbours, as _linescan.c err_take judges it."""
        classes = self.rules.classes
        if not ids:  # a traceback's end line (no needle: signals.traceback_end), special as err_take takes it
            return True
        ruled = False
        for i in ids:
            c = classes[i] if i < len(classes) else SPECIAL
            if c == SPECIAL or c == STOP:
                return True
            ruled = ruled or c == RULED
        return ruled and _linescan.errfold_find(self.state, data, start, end, ids) < 0

    def commit(self) -> None:
        _linescan.errfold_commit(self.state)

    def mark(self, lineno: int) -> None:
        """A line there may read its neighbours (a chunk read line for line)."""
        _linescan.errfold_mark(self.state, lineno)

    def learn(self, data: Any, hits: list[Any], text_of: Callable[[Any], str]) -> int:
        """Judge the candidate lines of a chunk whose keys are not known yet; register those that fold. Returns how
        many keys it registered."""
        new = 0
        added = False  # a key registered by this call: the lines after it are looked up again
        # (the C side looks every line up at once: errfold_find's answer for a candidate line of error words, else -2)
        for (_, _, start, end, ids), slot in zip(hits, _linescan.errfold_lookup(self.state, data, hits)):
            if slot != -1:  # not a candidate line of error words only (-2), or returned for a neighbour
                continue
            if added and _linescan.errfold_find(self.state, data, start, end, ids) >= 0:
                continue
            raw = bytes(data[start:end])
            key = _linescan.errfold_key(raw)  # (lines of one key of the gated kind share this one)
            if key is None or self.decided.get((key, ids)) is False:
                continue
            text = text_of(raw)
            gated = shape_kind(text)
            if gated and not redacts(text):  # a gate whose pattern cannot match here: the line is plain
                gated = False
            fold = self.decided.get((key, ids))
            if fold is None:
                if len(self.decided) >= MAX_DECIDED:
                    self.decided.clear()
                fold = self.decided[(key, ids)] = gated is not None and self.rules.judge(
                    text, tuple(self.anchor_of[i] for i in ids))
            if fold and gated is not None:
                before = len(self.shapes)
                slot = _linescan.errfold_add(self.state, raw, ids, gated)
                added = added or slot >= 0
                if slot >= 0 and slot not in self.shapes:
                    self.shapes[slot] = message_shape(text)
                new += len(self.shapes) - before
        return new

    def settle(self, data: Any, rescan: bool) -> bool:
        """Whether the chunk must be scanned again: `rescan` asked, or a line of a rule's anchor whose key was not
        known when it was scanned has no key learn registered (a rule may claim it: its neighbours are Python's,
        its key now registered as such). Once a chunk has been scanned again, learn has nothing left to judge."""
        return _linescan.errfold_settle(self.state, data) > 0 or rescan

    def known(self, data: Any, hits: list[Any]) -> None:
        """Mark the candidate lines of registered keys (returned for a neighbour, or near a chunk's end) as K_KNOWN,
        with their key's shape: Scanner.line need not try the rules on them (errfold.py: none claims a line of the
        key), nor take their shape again. Their tag: (needle ids, shape)."""
        for i, slot in enumerate(_linescan.errfold_lookup(self.state, data, hits)):
            if slot >= 0:
                _, rel, start, end, ids = hits[i]
                hits[i] = (K_KNOWN, rel, start, end, (ids, self.shapes[slot]))

    def records(self) -> list[tuple[bytes, int, Any, Any, Any]]:
        """(shape, count, (first lineno, text), (the one before the last) or None, (last)) per key that counted."""
        return [(self.shapes[slot], count, first, prev, last)
                for slot, count, first, prev, last in _linescan.errfold_take(self.state)]


def message_shape(text: str) -> bytes:
    return shape(split_ray(text)[0])


def shape_kind(text: str) -> bool | None:
    """Which kind of key the C side takes of the line, as template.shape takes its shape: False the plain kind
    (numbers standing alone folded), True a line holding a secret pattern's gate (every digit kept apart); None
    neither (a quote, or one of SHAPE_EXACT: not counted)."""
    low = text.lower()
    if "'" in text or '"' in text or any(g in low for g in SHAPE_EXACT):
        return None
    return _GATES.search(low) is not None


def redacts(text: str) -> bool:
    """Whether a secret pattern whose gate the line holds may match a line of its key (masked.impossible): if not,
    redaction leaves the line's key alone and numbers may fold as in a line without gates."""
    low = text.lower()
    if "akia" in low or "asia" in low:
        return True
    return any(not impossible(rx.pattern, text) for gate, rx, _ in PATTERNS if any(g in low for g in gate.split("|")))


def lines_of(records: list[Any], make: Callable[[int, str], Line]) -> list[tuple[bytes, int, Line, Line | None, Line]]:
    """The records with their lines made (one Line a line number)."""
    out = []
    for key, count, first, prev, last in records:
        made: dict[int, Line] = {}

        def line(at: Any, made: dict[int, Line] = made) -> Line:
            got = made.get(at[0])
            if got is None:
                got = made[at[0]] = make(at[0], at[1].decode("ascii"))
            return got

        out.append((key, count, line(first), line(prev) if prev is not None else None, line(last)))
    return out
