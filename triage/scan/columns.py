"""Numeric line shapes: the lines of a long trainer log that differ only in their numbers, handed over as columns.

A slime/MILES trainer log repeats a few lines per step (Timer lines, the step, perf and rollout dicts) and a verl log
one `step:N - key:value - ...` line; only their numbers change. A line's shape is its text with each number token
masked (`NUMBER`: a token starts where the byte before is not a letter, digit, `_` or `.`, so `lr-pg_0` holds none
and `2026-05-24` three; `nan` and `inf` are words, so a line holding them is of another shape and reaches the parser
as a line). The C prefilter (_linescan.c, Columns) tokenizes the same way.

Python parses the first line of each shape as any other line; Shapes.learn then decides whether the shape may be
registered, so that the C side appends each later line of it to columns (line index, bounds, the numbers) instead of
handing it over:
- the line is pure data: its event is a metric record (parsers/metrics.py) that opens no join (not a fragment, an
  open dict, a wandb or NeMo-RL block, a dataset filter) or a timer event (parsers/lifecycle.py); no error word, no
  signal, level or shutdown anchor among its needles; no Ray prefix or repeat count; its message does not start with
  a blank (an echoed source line under a traceback frame);
- no rule can claim it: every rule whose anchor it holds is an `errors_only` rule, which never judges a metric record
  (Scanner.line: a record is data, never an error line); a timer line holds no rule anchor at all;
- a timer line is context (`near` windows, side lookups, traceback headers): no rule's `near`/`not_near` pattern, no
  side marker, no traceback or exception pattern matches it (the C side returns the rows next to a returned line);
  the rows of a timer of a Ray actor with a side (its prefix is literal text in the shape, so every row names that
  actor) answer side lookups from the file's origins.SideRows, as its lines would from the Context;
- which number is which value: the line is parsed again with a distinct sentinel in each slot (`_renders`); each
  value must be one slot's sentinel or a constant the first line holds too, the step a slot or a constant, every
  other field equal. The token classes (sign, fraction, exponent) each slot accepts are tried the same way: a row
  whose token a parser would read otherwise (a `-` where the regex wants `\\d+`) is handed over as a line.
A shape that fails any of these is remembered as refused, so its lines are looked at once. At most MAX_SHAPES shapes
are registered per file (the C side's COL_SHAPES) and MAX_TRIED tried.
"""

from __future__ import annotations

import re
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple

from triage.model import Line
from triage.parsers import series_store
from triage.parsers.metrics import BLOCKS
from triage.parsers.series_store import RowShape
from triage.parsers.signals import EXC_LINE, FRAME, NOT_FATAL_HEAD, TRACEBACK
from triage.scan.native import _linescan
from triage.scan.origins import RAY_PREFIX, split_ray

Scanner = Any  # scanner.Scanner (its needles, plans, rules and sides), which imports this module through prefiltered

NUMBER = re.compile(rb"(?<![A-Za-z0-9_.])-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
TOKEN = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")  # what the C side's col_match reads in a slot
MAX_SHAPES = _linescan.COL_SHAPES if _linescan is not None else 64
MAX_TOKENS = _linescan.COL_TOKENS if _linescan is not None else 64
LINE_MAX = _linescan.COL_LINE_MAX if _linescan is not None else 4096
MAX_IDS = 128  # needle occurrences a shape's line may hold (_linescan.c COL_IDS)
MAX_TRIED = 256  # distinct shapes looked at per file (registered or refused); past it, no more are tried
SETTLED = 64  # lines of one set of needles whose shape was tried already: past it, that set's lines are not looked at
NEG, FRAC, EXP = 1, 2, 4  # token classes: bits of a class number (0..7)
ALL = 0xFF
CONTEXT_PATTERNS = (NOT_FATAL_HEAD, FRAME, EXC_LINE)  # what makes a context line matter to a traceback
NO_COLUMN = 255
CHAIN_ANCHORS = ("Traceback", 'File "')  # with any anchor holding `Error` (RayTaskError): see Shapes._chain_ids
TOKEN_BYTES = frozenset(b"0123456789.eE+-")  # every byte a number token (NUMBER) may hold
series_store.COL_JOIN = _linescan.col_join if _linescan is not None else None  # rows of small write-outs joined


def _ray_end(raw: bytes) -> int:
    """Where a line's Ray actor prefix ends (0: none)."""
    if not raw.startswith(b"("):
        return 0
    m = RAY_PREFIX.match(raw.decode("ascii", "replace"))
    return m.end() if m else 0


def token_class(tok: bytes) -> int:
    return (NEG if tok[:1] == b"-" else 0) | (FRAC if b"." in tok else 0) | (EXP if tok.lower().find(b"e") >= 0 else 0)


def template(line: bytes, fixed: int = 0) -> tuple[tuple[bytes, ...], list[bytes]]:
    """(the literal segments between the number tokens, the tokens) of a line; the tokens in its first `fixed` bytes
    (a Ray prefix: its pid and address say which process printed the line) are literal text."""
    segs, toks, at = [], [], 0
    for m in NUMBER.finditer(line, fixed):
        segs.append(line[at:m.start()])
        toks.append(m.group())
        at = m.end()
    segs.append(line[at:])
    return tuple(segs), toks


def sentinel(slot: int, cls: int) -> tuple[str, float]:
    """A number token of class `cls` distinct for each slot: (its text, the value float() reads)."""
    whole = 7000 + slot
    text = f"{whole}.5" if cls & FRAC else str(whole)
    value = whole + 0.5 if cls & FRAC else float(whole)
    if cls & EXP:
        text += "e0"
    if cls & NEG:
        text, value = "-" + text, -value
    return text, value


class Shape(NamedTuple):
    """A registered shape: what the C side matches (segments, allow, cols, ids, record, ctx) and what its rows mean."""

    segments: tuple[bytes, ...]
    allow: bytes  # per slot: the token classes accepted (bit c = class c)
    cols: bytes  # per slot: its output column, NO_COLUMN when the number is not needed
    ids: tuple[int, ...]
    record: bool  # rows are metric records
    ctx: bool  # rows are context lines in Python (timers)
    rows: RowShape
    stable: bool = False  # no needle can occur across a number of a line of it (stable())
    side: str = ""  # a timer shape's: the side of its Ray actor (its prefix is literal text), '' for none

    def spec(self) -> tuple[Any, ...]:
        """What _linescan.shapes takes: with the output columns of the mean and longest response length, whose share
        the C side works out (-1: not two columns; then RowPart.contributions does), and of a timer's seconds, whose
        distinct values it counts (TimerStore.add_rows)."""
        rows = self.rows
        rows.plan()
        mean_i, max_i = rows.share
        mean, longest = (rows.cols[mean_i], rows.cols[max_i]) if mean_i >= 0 else (-1, -1)
        if mean < 0 or longest < 0 or mean == longest:
            mean = longest = -1
        tally = rows.num_col if self.ctx and mean < 0 else -1  # a timer's seconds, counted per distinct value
        return (self.segments, self.allow, self.cols, self.ids, self.record, self.ctx, self.stable, mean, longest, tally)


@lru_cache(maxsize=4)
def _overlaps(needles: tuple[bytes, ...]) -> dict[tuple[int, int], list[tuple[bytes, bytes]]]:
    """How each needle could occur across a number token: every split of it into (a, t, b), t a non-empty run of
    bytes a token may hold, a the text just before the token's part and b the text just after, as (a, b), filed under
    (a's last byte, b's first byte) (-1: empty)."""
    out: dict[tuple[int, int], list[tuple[bytes, bytes]]] = {}
    for nd in needles:
        i = 0
        while i < len(nd):
            if nd[i] not in TOKEN_BYTES:
                i += 1
                continue
            e = i
            while e < len(nd) and nd[e] in TOKEN_BYTES:
                e += 1
            for s in range(i, e):
                for k in range(s + 1, e + 1):
                    a, b = nd[:s], nd[k:]
                    out.setdefault((a[-1] if a else -1, b[0] if b else -1), []).append((a, b))
            i = e
    return out


def _fits_after(b: bytes, segs: tuple[bytes, ...], j: int) -> bool:
    """Whether some line of the shape can hold `b` right where segment j starts (the text after token j - 1)."""
    y = segs[j]
    if len(b) <= len(y):
        return y.startswith(b)
    if not b.startswith(y) or j + 1 >= len(segs):  # another text, or the line ends
        return False
    rest = b[len(y):]
    if all(c in TOKEN_BYTES for c in rest):  # the start of a token (conservative)
        return True
    return any(TOKEN.fullmatch(rest, 0, k) and _fits_after(rest[k:], segs, j + 1) for k in range(1, len(rest)))


def _fits_before(a: bytes, segs: tuple[bytes, ...], j: int) -> bool:
    """Whether some line of the shape can hold `a` right where segment j ends (the text before token j)."""
    x = segs[j]
    if len(a) <= len(x):
        return x.endswith(a)
    if not a.endswith(x) or j == 0:  # another text, or the line starts
        return False
    rest = a[:len(a) - len(x)]
    if all(c in TOKEN_BYTES for c in rest):  # the end of a token (conservative)
        return True
    return any(TOKEN.fullmatch(rest, k) and _fits_before(rest[:k], segs, j - 1) for k in range(1, len(rest)))


def stable(segs: tuple[bytes, ...], needles: tuple[bytes, ...]) -> bool:
    """Whether no needle can occur across a number token of any line of this shape (its literal segments), so that
    every line of it holds exactly the needles of its literal text: an occurrence that takes part of token j takes a
    run of token bytes, with what comes before it ending where segment j ends and what comes after it starting where
    segment j + 1 starts (past them, through the tokens and segments further on). Conservative: a part that could be
    the start or end of a token counts as possible."""
    table = _overlaps(needles)
    for j in range(len(segs) - 1):
        x, y = segs[j], segs[j + 1]
        keys_a = (x[-1], -1) if x else tuple({ka for ka, _ in table} | {-1})
        keys_b = (y[0], -1) if y else tuple({kb for _, kb in table} | {-1})
        for ka in keys_a:
            for kb in keys_b:
                for a, b in table.get((ka, kb), ()):
                    if (not a or _fits_before(a, segs, j)) and (not b or _fits_after(b, segs, j + 1)):
                        return False
    return True


def _event(scanner: Scanner, text: str, plan: Any) -> Any:
    """What Scanner.line's parser loop makes of the line (None: nothing)."""
    msg, actor, pid, repeat = split_ray(text)
    line = Line("", 1, text, msg, actor, pid, repeat)
    for parser in plan.parsers:
        ev = parser.parse(line)
        if ev is not None:
            return ev
    return None


def _mapping(ev0: Any, ev: Any, sentinels: list[float], kind: str) -> dict[str, Any] | None:
    """How the event of a rendering relates to the first line's: {field or ('values', key): slot or None (constant)};
    None when it does not (another kind, another field, a value that is neither a sentinel nor the constant)."""
    if ev is None or ev.kind != ev0.kind:
        return None
    f0, f = ev0.fields, ev.fields
    if list(f) != list(f0):
        return None
    where = {v: j for j, v in enumerate(sentinels)}
    out: dict[Any, Any] = {}
    numeric = ("step",) if kind == "metrics" else ("seconds",)
    for name, v0 in f0.items():
        v = f[name]
        if name == "values" and kind == "metrics":
            if list(v) != list(v0):
                return None
            for k, x in v.items():
                j = where.get(x) if type(x) is float else None
                if j is None and not (type(x) is float and x == v0[k] and type(x) is type(v0[k])):
                    return None
                out[("values", k)] = j
        elif name in numeric and v is not None and type(v) in (int, float) and v in where:
            out[name] = where[v]
        elif v != v0 or type(v) is not type(v0):
            return None
        else:
            out[name] = None
    return out


def _numbers_agree(ev0: Any, mapping: dict[Any, Any], toks: list[bytes]) -> bool:
    """The first line's own numbers are what the mapping says (slot j holds the value it names)."""
    f0 = ev0.fields
    for where, j in mapping.items():
        if j is None:
            continue
        got = f0["values"].get(where[1]) if isinstance(where, tuple) else f0.get(where)
        if got is None or float(toks[j]) != got:
            return False
    return True


class Shapes:
    """One file's registered shapes (stage 1 learns them from the lines it hands over, stage 2 reads their rows)."""

    def __init__(self, scanner: Scanner, shared: bool = False) -> None:
        self.scanner = scanner
        self.shared = shared  # the registry of every small file of a process (prefiltered.shapes_for), not one file's
        self.shapes: list[Shape] = []
        self.tried: set[tuple[tuple[bytes, ...], tuple[int, ...]]] = set()
        self.data_ids: dict[tuple[int, ...], Any] = {}  # needle indices -> their plan when a line of them may be data
        self.armed: Any = None  # the C side's shapes (_linescan.shapes), None while there are none
        self.again: dict[tuple[int, ...], int] = {}  # needle indices -> lines of them whose shape was tried before
        self.full = False

    def learn(self, data: Any, hits: list[Any]) -> list[Shape]:
        """Look at the candidate lines of a chunk (kind 0 hits); returns the shapes newly registered."""
        if self.full:
            return []
        new: list[Shape] = []
        for kind, _, start, end, ids in hits:
            if kind != 0 or end - start > LINE_MAX:
                continue
            plan = self.data_ids.get(ids, False)
            if plan is False:
                plan = self.data_ids[ids] = self._data_plan(ids)
            if plan is None:
                continue
            raw = bytes(data[start:end])
            segs, toks = template(raw, _ray_end(raw))
            key = (segs, ids)
            if key in self.tried:
                seen = self.again[ids] = self.again.get(ids, 0) + 1
                if seen > SETTLED:  # lines of these needles keep coming as shapes already refused: stop looking
                    self.data_ids[ids] = None
                continue
            self.tried.add(key)
            shape = self._known(raw, segs, toks, ids, plan)
            if shape is not None:
                new.append(shape)
                self.shapes.append(shape)
            if len(self.shapes) >= MAX_SHAPES or len(self.tried) >= MAX_TRIED:
                self.full = True
                break
        if new:
            try:
                self.armed = _linescan.shapes([s.spec() for s in self.shapes], self._chain_ids())
            except (ValueError, TypeError, OverflowError):  # a shape the C side cannot hold: stop learning, keep the rest
                self.shapes = self.shapes[:len(self.shapes) - len(new)]
                self.full = True
                return []
        return new

    def _chain_ids(self) -> tuple[int, ...]:
        """The needles of lines a traceback chain may start at (signals.chains: a `Traceback` line, a frame, a
        RayTaskError line): the context rows just before such a line are handed over as lines (its header)."""
        anchors = self.scanner.needles.anchor_of
        return tuple(i for i, a in enumerate(anchors) if a is not None and (a in CHAIN_ANCHORS or "Error" in a))

    def _data_plan(self, ids: tuple[int, ...]) -> Any:
        """The scanner's plan for lines of these needles when such a line may be data (a metrics or lifecycle
        parser among its parsers, no error word, no signal anchor, every rule of its anchors errors_only)."""
        sc = self.scanner
        assert sc.needles is not None
        plan = sc.plan(frozenset(sc.needles.anchor_of[i] for i in ids))
        names = {p.__name__.rsplit(".", 1)[-1] for p in plan.parsers}
        if not names & {"metrics", "lifecycle"} or plan.errorish or plan.signal:
            return None
        if any(not r.errors_only for a in plan.anchors for r in sc.by_anchor[a]):
            return None
        return plan

    def _known(self, raw: bytes, segs: tuple[bytes, ...], toks: list[bytes], ids: tuple[int, ...],
               plan: Any) -> Shape | None:
        """_consider's answer, worked out once per run for a shape, its needles and its first line's token classes
        (the scanner's shape_cache: a run of many small trainer logs repeats the same few shapes in every file, and
        trying the renderings costs milliseconds). A shape learnt in another file still checks this file's first
        line: its numbers must be where the mapping says."""
        key = (segs, ids, tuple(token_class(t) for t in toks))
        cache = self.scanner.shape_cache
        got = cache.get(key, False)
        if got is False:
            got = cache[key] = self._consider(raw, segs, toks, ids, plan)
            if len(cache) > 4 * MAX_TRIED:
                cache.clear()
            return got[0] if got is not None else None
        if got is None:
            return None
        shape, mapping = got
        ev0 = _event(self.scanner, raw.decode("ascii"), plan)
        return shape if ev0 is not None and _numbers_agree(ev0, mapping, toks) else None

    def _consider(self, raw: bytes, segs: tuple[bytes, ...], toks: list[bytes], ids: tuple[int, ...],
                  plan: Any) -> tuple[Shape, dict[str, Any]] | None:
        if len(toks) > MAX_TOKENS or len(ids) > MAX_IDS or not raw.isascii() or not raw.decode("ascii").isprintable():
            return None
        text = raw.decode("ascii")
        msg, actor, pid, repeat = split_ray(text)
        if repeat != 1 or msg[:1].isspace() or text.startswith("(") and not _ray_end(raw):
            return None
        ev0 = _event(self.scanner, text, plan)
        if ev0 is None:
            return None
        kind = ev0.kind
        f0 = ev0.fields
        side = ""
        if kind == "metrics":
            if f0.get("tag") == "continued" or f0.get("framework") in BLOCKS or "open" in f0 or "closes" in f0 \
                    or "lines" in f0 or f0.get("framework") == "dataset":
                return None
        elif kind == "timer":
            if plan.anchors or not self._quiet_context(msg):
                return None
            side = self.scanner.sides.of_actor(actor)  # its rows answer side lookups from the file's SideRows
            if side and any(rx.search(msg) for rx in self.scanner.sides.trailing.values()):
                return None
        else:
            return None
        n = len(toks)

        def render(classes: list[int]) -> tuple[Any, list[float], str]:
            parts, values = [segs[0]], []
            for j, c in enumerate(classes):
                t, v = sentinel(j, c)
                parts += [t.encode(), segs[j + 1]]
                values.append(v)
            line = b"".join(parts).decode("ascii")
            return _event(self.scanner, line, plan), values, line

        base, values, line0 = render([0] * n)
        mapping = _mapping(ev0, base, values, kind)
        if mapping is None or (kind == "timer" and not self._quiet_context(split_ray(line0)[0])):
            return None
        slots = sorted({j for j in mapping.values() if j is not None})
        if not _numbers_agree(ev0, mapping, toks):
            return None
        allow = bytearray([ALL] * n)
        for cls in range(1, 8):
            if self._renders(render, [cls if j in slots else 0 for j in range(n)], ev0, kind, mapping):
                continue
            for j in slots:  # which slots refuse the class
                if not self._renders(render, [cls if i == j else 0 for i in range(n)], ev0, kind, mapping):
                    allow[j] &= ~(1 << cls)
        free = [j for j in range(n) if j not in slots]
        if free:
            for cls in range(1, 8):
                if not self._renders(render, [cls if j in free else 0 for j in range(n)], ev0, kind, mapping):
                    for j in free:
                        allow[j] &= ~(1 << cls)
        for j, tok in enumerate(toks):  # the first line's own classes (it parsed as it is)
            allow[j] |= 1 << token_class(tok)
        col_of = {j: c for c, j in enumerate(slots)}
        cols = bytes(col_of.get(j, NO_COLUMN) for j in range(n))
        rows = self._row_shape(ev0, mapping, col_of, segs, len(slots))
        needles = tuple(nd for nd, _ in self.scanner.needles.items if len(nd) > 1)  # single bytes: not printable
        return Shape(segs, bytes(allow), cols, ids, kind == "metrics", kind == "timer", rows,
                     stable(segs, needles), side), mapping

    def _renders(self, render: Any, classes: list[int], ev0: Any, kind: str, mapping: dict[str, Any]) -> bool:
        ev, values, line = render(classes)
        if _mapping(ev0, ev, values, kind) != mapping:
            return False
        return kind != "timer" or self._quiet_context(split_ray(line)[0])

    def _quiet_context(self, msg: str) -> bool:
        """A context line nothing but its own parse reads: no rule's near/not_near, no side marker, no traceback part."""
        sc = self.scanner
        if TRACEBACK in msg or "RayTaskError" in msg or any(p.search(msg) for p in CONTEXT_PATTERNS):
            return False
        for rule in sc.line_rules:
            for pat in (rule.near, rule.not_near):
                if pat is not None and pat.search(msg):
                    return False
        return not any(rx.search(msg) for rx in sc.sides.markers.values())

    @staticmethod
    def _row_shape(ev0: Any, mapping: dict[Any, Any], col_of: dict[int, int], segs: tuple[bytes, ...],
                   nout: int) -> RowShape:
        f0 = ev0.fields
        keys: tuple[str, ...] = tuple(f0["values"]) if ev0.kind == "metrics" else ()
        cols = tuple(col_of[mapping[("values", k)]] if mapping[("values", k)] is not None else -1 for k in keys)
        consts = tuple(f0["values"][k] for k in keys)
        num = "step" if ev0.kind == "metrics" else "seconds"
        at = mapping.get(num)
        fields = dict(f0)
        if ev0.kind == "metrics":
            fields["values"] = None
        return RowShape(ev0.kind, fields, keys, cols, consts, num, col_of[at] if at is not None else -1,
                        isinstance(f0, MappingProxyType), segs, nout)
