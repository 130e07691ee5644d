"""Trainer metric records in bounded memory: exact summaries of every series, and a bounded set of the records.

A long run's trainer log holds hundreds of thousands of metric records (a slime/MILES run prints a step, a perf
and a rollout dict per step); keeping each as Python objects cost ~1.4 kB a record (issue 16). The store keeps:
- per raw key, per canonical series (parsers/vocabulary.py: the preferred alias of each record) and per reward
  function, a Summary updated as records stream in: count, non-finite count with the first and last non-finite
  point, count of non-zero values, lowest and highest finite value (the first record reaching each), first and
  last point. Exact whatever the log's length.
- the records those points are in (pinned, counted by reference), the first and last record of each
  (framework, tag), and the last TAIL records: the evidence lines every check cites.
- a sample of the other records, at most `cap`: a record is kept while a hash of its position is under a
  threshold that halves whenever the sample outgrows `cap` (every key of a record is kept or dropped together, so
  checks that read several keys of one record see them all; Fibonacci hashing spreads the kept positions evenly,
  whatever period the log's record kinds repeat with).
- how many records hold each set of keys (a run prints a few shapes of record), so "records holding any of
  these keys" is an exact count.
Records also come in bulk (add_rows): the rows of a line shape the C prefilter kept as columns (scan/columns.py),
whose summaries, sample, tail, pins, tags and shapes come out as if each row had been added by itself, at the cost of
a few operations per column (the column's statistics are computed in C, _linescan.c col_stats); only the records
kept (sampled, pinned, in the tail) become Event objects, with their line read back from the file when asked.
While a run has no more than `cap` records nothing is dropped: the view is every record, in log order, and the
checks see exactly what they saw when every record was kept.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable
from itertools import compress
from operator import truediv
from types import MappingProxyType
from typing import Any, cast

from triage.model import Event, Line
from triage.parsers.vocabulary import canonical, reward_function

STEP_LIMIT = 1 << 53  # whole numbers below it a double holds exactly (metrics.Records' int keys and spans of steps)

CAP = 4096  # sampled records (their full values), whatever the log's length
TAIL = 256  # the last records, kept whole (the last steps of a series, the last evidence)
TOP = 16  # the highest values of each series, with their records: rare records over a threshold stay in view
MAX_SHAPES = 4096  # distinct key sets counted exactly; a run prints a handful
HASH = 0x9E3779B1  # 2^32 / golden ratio: consecutive positions hash far apart and evenly
FULL = 1 << 32

SHARE = "response_length/share_of_max"  # derived: a record's mean response length / its longest response
Point = tuple[int, float, str]  # (record position in the store, value, raw key)
# ((raw key, summary it updates, whether once a record) in add()'s order, (mean, longest) response length keys)
Plan = tuple[list[tuple[str, "Summary", bool]], tuple[str, str] | None]


class Summary:
    """One series' exact streaming summary; points are (position, value, raw key)."""

    __slots__ = ("n", "bad", "nonzero", "first", "last", "lo", "hi", "bad_first", "bad_last", "top")

    def __init__(self) -> None:
        self.n = 0
        self.bad = 0  # NaN or infinite values
        self.nonzero = 0  # values != 0 (NaN included, as `v != 0` says)
        self.first: Point | None = None
        self.last: Point | None = None
        self.lo: Point | None = None  # lowest finite value (first record reaching it)
        self.hi: Point | None = None  # highest finite value (first record reaching it)
        self.bad_first: Point | None = None
        self.bad_last: Point | None = None
        self.top: list[tuple[float, int, str]] = []  # the TOP highest finite values (value, position, key), a heap


def _takes(old: Point | None, pos: int, drop: list[int]) -> int:
    """A slot of a summary that held `old` takes a point of position pos: the references to pos it adds (none when
    old is pos's already), old's position put in `drop`."""
    if old is None:
        return 1
    if old[0] == pos:
        return 0
    drop.append(old[0])
    return 1


def _step(s: Summary, pos: int, v: float, key: str, drop: list[int]) -> int:
    """Record position pos's value v of `key` into summary s (MetricStore.add): returns the references to pos it
    takes, and appends to `drop` the positions whose references it gives up (pos itself when its heap lets go of a
    value this record gave it before)."""
    s.n += 1
    point = (pos, v, key)
    refs = 0
    if s.first is None:
        s.first = point
        refs += 1
    old = s.last  # every value moves `last`: _takes written out, a call less
    if old is None:
        refs += 1
    elif old[0] != pos:
        drop.append(old[0])
        refs += 1
    s.last = point
    if v != 0:
        s.nonzero += 1
    if v - v != 0:  # NaN or +-inf (inf - inf is NaN)
        s.bad += 1
        if s.bad_first is None:
            s.bad_first = point
            refs += 1
        refs += _takes(s.bad_last, pos, drop)
        s.bad_last = point
        return refs
    if s.lo is None or v < s.lo[1]:
        refs += _takes(s.lo, pos, drop)
        s.lo = point
    if s.hi is None or v > s.hi[1]:
        refs += _takes(s.hi, pos, drop)
        s.hi = point
    top = s.top
    if len(top) < TOP:
        heapq.heappush(top, (v, pos, key))
        refs += 1
    elif v > top[0][0]:
        drop.append(heapq.heapreplace(top, (v, pos, key))[1])
        refs += 1
    return refs


class MetricStore:
    """The merged metric records of one file (or, joined, of a run) in bounded memory."""

    def __init__(self, cap: int = CAP, tail: int = TAIL) -> None:
        self.cap = cap
        self.total = 0  # records added
        self.threshold = FULL  # a record is sampled while hash(position) < threshold
        self._sample: dict[int, tuple[int, Event | Later]] = {}  # position -> (hash of its position in its file,
        # record): a row's record is made when an answer first reads it (most are thinned away before)
        self._tail: deque[tuple[int, Event]] = deque(maxlen=tail)
        self._lazy: tuple[Rows, int, int, dict[int, Event]] | None = None  # the tail's last rows, not yet made:
        # (their write-out, its first position, how many of its last rows, the events made of it so far)
        self._pins: dict[int, list[Any]] = {}  # position -> [record, references]
        self.sums: dict[str, Summary] = {}  # raw key -> Summary
        self.canon: dict[str, Summary] = {}  # canonical series -> Summary (the record's preferred alias)
        self.fns: dict[str, Summary] = {}  # reward function -> Summary (each of its keys a record holds)
        self.shapes: dict[tuple[str, ...], int] = {}  # the keys of a record, in order -> records
        self.shapes_full = False  # more distinct shapes than MAX_SHAPES: counts of holders are estimates
        self.tags: dict[tuple[str, str], list[Any]] = {}  # (framework, tag) -> [records, first pos, last pos]
        self._view: list[tuple[int, Event]] | None = None
        self._plans: dict[tuple[str, ...], Plan] = {}  # raw keys of a record -> the summaries it updates (_plan)

    # -- ingest -------------------------------------------------------------------------------------------
    def _pin(self, pos: int, ev: Event) -> None:
        pin = self._pins.get(pos)
        if pin is None:
            self._pins[pos] = [ev, 1]
        else:
            pin[1] += 1

    def _unpin(self, pos: int) -> None:
        pin = self._pins[pos]
        pin[1] -= 1
        if not pin[1]:
            del self._pins[pos]

    def _set(self, s: Summary, slot: str, point: Point, ev: Event) -> None:
        old = getattr(s, slot)
        if old is not None:
            if old[0] == point[0]:
                setattr(s, slot, point)
                return
            self._unpin(old[0])
        setattr(s, slot, point)
        self._pin(point[0], ev)

    def add(self, ev: Event) -> None:
        """One merged record (parsers/metrics.py), in log order. Every reference this record's summaries, tag and
        heaps take is to its own position, the newest: they are counted here and pinned once at the end, after the
        older positions they replace are unpinned (the pins' dict ends as _pin/_unpin one by one would leave it).
        A raw key's summary that holds a finite value already takes a finite value here, written out (_step's
        branches for a first, a non-finite or a repeated point cannot be taken: each raw key is once in a record,
        and every earlier point is at a lower position); the summaries a record of these keys updates are worked
        out once per set of keys (_plan)."""
        if self._lazy is not None:
            self._settle(1)
        pos = self.total
        self.total += 1
        self._view = None
        f = ev.fields
        values: dict[str, float] = f["values"]
        shape = tuple(values)
        plan = self._plans.get(shape)
        if plan is None:
            plan = self._plan(shape)
        steps, share = plan
        drop: list[int] = []  # older positions a summary, heap or tag of this record no longer refers to
        refs = 0  # references to pos
        # the `last` points this record takes over: most were the record before of the same keys, one position
        # given up many times (a pin's count lowered once by all of them, not once each)
        lastp, lastn = -1, 0
        for k, s, once in steps:
            v = values[k]
            lo = s.lo
            if not once or lo is None or v - v != 0:
                refs += _step(s, pos, v, k, drop)
            else:  # _step, for a summary with a finite point before and a finite value
                s.n += 1
                point = (pos, v, k)
                old = s.last[0]  # type: ignore[index]  # (set with lo); an earlier record's (one value a record)
                if old == lastp:
                    lastn += 1
                elif not lastn:
                    lastp, lastn = old, 1
                else:
                    drop.append(old)
                s.last = point
                refs += 1
                if v != 0:
                    s.nonzero += 1
                if v < lo[1]:
                    drop.append(lo[0])
                    s.lo = point
                    refs += 1
                else:
                    hi = s.hi
                    if v > hi[1]:  # type: ignore[index]  # (set with lo)
                        drop.append(hi[0])  # type: ignore[index]
                        s.hi = point
                        refs += 1
                top = s.top
                if len(top) < TOP:
                    heapq.heappush(top, (v, pos, k))
                    refs += 1
                elif v > top[0][0]:
                    drop.append(heapq.heapreplace(top, (v, pos, k))[1])
                    refs += 1
        if share is not None:
            # the mean response length as a share of the step's longest (checks/series.mean_length_at_cap): its
            # highest values keep the steps nearest the cap in view, however rare
            mean, longest = values[share[0]], values[share[1]]
            if longest > 0 and mean - mean == 0:
                refs += _step(self.canon.setdefault(SHARE, Summary()), pos, mean / longest, SHARE, drop)
        held = self.shapes.get(shape)
        if held is not None:
            self.shapes[shape] = held + 1
        elif len(self.shapes) < MAX_SHAPES:
            self.shapes[shape] = 1
        else:
            self.shapes_full = True
        tag = (f.get("framework", ""), f.get("tag", ""))
        t = self.tags.get(tag)
        if t is None:
            self.tags[tag] = [1, pos, pos]
            refs += 2
        else:
            t[0] += 1
            drop.append(t[2])
            t[2] = pos
            refs += 1
        pins = self._pins
        if lastn:
            pin = pins[lastp]
            pin[1] -= lastn
            if not pin[1]:
                del pins[lastp]
        for p in drop:
            if p == pos:  # a heap of a summary this record updated twice (two keys of one reward function)
                refs -= 1
                continue
            pin = pins[p]
            pin[1] -= 1
            if not pin[1]:
                del pins[p]
        if refs:
            pins[pos] = [ev, refs]
        self._tail.append((pos, ev))
        h = (pos * HASH) % FULL
        if h < self.threshold:
            self._sample[pos] = (h, ev)
            if len(self._sample) > self.cap:
                self._thin()

    def _plan(self, keys: tuple[str, ...]) -> Plan:
        """The summaries a record of these raw keys updates, in add()'s order, each with the raw key whose value it
        takes and whether it takes one value of a record only (a reward function's may take two): each key's, the
        reward function's it holds, each canonical series' (its preferred alias's key); and the keys of the mean and
        longest response length when it holds both (their share's summary is made once a record gives it a value).
        The summaries are made now, as add() of this first record of the keys would make them."""
        steps: list[tuple[str, Summary, bool]] = []
        best: dict[str, tuple[int, str]] = {}
        for k in keys:
            s = self.sums.get(k)
            if s is None:
                s = self.sums[k] = Summary()
            steps.append((k, s, True))
            c = canonical(k)
            if c is None:
                fn = reward_function(k)
                if fn is not None:
                    steps.append((k, self.fns.setdefault(fn, Summary()), False))
            elif c[0] not in best or c[1] < best[c[0]][0]:
                best[c[0]] = (c[1], k)
        steps.extend((k, self.canon.setdefault(name, Summary()), True) for name, (_, k) in best.items())
        share = ((best["response_length"][1], best["response_length_max"][1])
                 if "response_length" in best and "response_length_max" in best else None)
        plan = (steps, share)
        if len(self._plans) < MAX_SHAPES:
            self._plans[keys] = plan
        return plan

    def _thin(self) -> None:
        while len(self._sample) > self.cap:
            self.threshold //= 2
            limit = self.threshold
            self._sample = {p: he for p, he in self._sample.items() if he[0] < limit}

    # -- ingest in bulk: a write-out of the C prefilter's columns ------------------------------------------------
    def add_rows(self, rows: Rows) -> None:
        """The metric records of `rows` (each a line of a registered shape), in log order: what add() of each would
        leave, summaries, pins, sample, tail, tags and shapes alike."""
        n = rows.n
        if not n:
            return
        self._settle(n)
        base = self.total
        self.total += n
        self._view = None
        made: dict[int, Event] = {}

        def event_at(pos: int) -> Event:
            got = made.get(pos)
            if got is None:
                got = made[pos] = rows.event(pos - base)
            return got

        parts = sorted(rows.parts, key=lambda p: p.ords[0])
        series: dict[tuple[int, str], tuple[dict[str, Summary], str, list[Column]]] = {}  # in add()'s order
        for part in parts:
            for dest, name, col in part.contributions(self, base):
                got = series.get((id(dest), name))
                if got is None:
                    series[(id(dest), name)] = (dest, name, [col])
                else:
                    got[2].append(col)
        for dest, name, cols in series.values():
            self._merge(dest, name, cols, event_at)
        for part in parts:
            shape = part.shape.keys
            if shape in self.shapes:
                self.shapes[shape] += part.n
            elif len(self.shapes) < MAX_SHAPES:
                self.shapes[shape] = part.n
            else:
                self.shapes_full = True
            f = part.shape.fields
            tag = (f.get("framework", ""), f.get("tag", ""))
            first, last = base + part.ords[0], base + part.ords[part.n - 1]
            t = self.tags.get(tag)
            if t is None:
                self.tags[tag] = [part.n, first, last]
                self._pin(first, event_at(first))
                self._pin(last, event_at(last))
            else:  # the parts of one tag need not come in log order (a shape learnt by two processes is two
                t[0] += part.n  # shapes, each its own part): the first and last positions are the least and greatest
                if first < t[1]:
                    self._unpin(t[1])
                    t[1] = first
                    self._pin(first, event_at(first))
                if last > t[2]:
                    self._unpin(t[2])
                    t[2] = last
                    self._pin(last, event_at(last))
        maxlen = self._tail.maxlen or TAIL
        if n >= maxlen:
            self._tail.clear()
        self._lazy = (rows, base, min(n, maxlen), made)

        def later(pos: int) -> Event | Later:
            got = made.get(pos)
            return got if got is not None else Later(*rows.locate(pos - base))

        self._sample_rows(base, n, later)

    def _sample_rows(self, base: int, n: int, event_at: Callable[[int], Event | Later]) -> None:
        """The sample after positions base..base+n-1 were added one by one: the threshold halves while more than `cap`
        positions would be under it (whatever the order they came in, the last halving is the same)."""
        limit = self.threshold
        new = sampled(base, n, limit)
        if len(self._sample) + len(new) > self.cap:
            while len(self._sample) + len(new) > self.cap:
                limit //= 2
                new = [p for p in new if (p * HASH) % FULL < limit]
                self._sample = {p: he for p, he in self._sample.items() if he[0] < limit}
            self.threshold = limit
        for p in new:
            self._sample[p] = ((p * HASH) % FULL, event_at(p))

    def _merge(self, dest: dict[str, Summary], name: str, cols: list[Column], event_at: Callable[[int], Event]) -> None:
        """The columns of one series in a write-out (rows of several shapes, interleaved) into its Summary, as add()
        of each value in log order would: every earlier point is at a lower position, so each slot takes the column
        point that wins by (value, position), and the candidates for the highest values go through the heap in order."""
        s = dest.get(name)
        if s is None:
            s = dest[name] = Summary()
        cands: list[Point] = []
        heap = s.top
        floor = heap[0][0] if len(heap) >= TOP else None  # a full heap's lowest only rises: what is not above it stays out
        for c in cols:
            nonzero, bad, bad0, bad1, lo, hi, top, _ = c.stats
            s.n += c.n
            s.nonzero += nonzero
            s.bad += bad
            p = c.point(0)
            if s.first is None or p[0] < s.first[0]:
                self._move(s, "first", p, event_at)
            p = c.point(c.n - 1)
            if s.last is None or p[0] > s.last[0]:
                self._move(s, "last", p, event_at)
            if bad:
                p = c.point(bad0)
                if s.bad_first is None or p[0] < s.bad_first[0]:
                    self._move(s, "bad_first", p, event_at)
                p = c.point(bad1)
                if s.bad_last is None or p[0] > s.bad_last[0]:
                    self._move(s, "bad_last", p, event_at)
            if lo >= 0:
                p = c.point(lo)
                if s.lo is None or (p[1], p[0]) < (s.lo[1], s.lo[0]):
                    self._move(s, "lo", p, event_at)
                p = c.point(hi)
                if s.hi is None or (-p[1], p[0]) < (-s.hi[1], s.hi[0]):
                    self._move(s, "hi", p, event_at)
            if floor is None:
                cands.extend(c.point(i) for i in top)
            else:
                value = c.value
                cands.extend(c.point(i) for i in top if value(i) > floor)
        if len(cols) > 1:
            cands.sort()
        added: set[int] = set()
        removed: list[int] = []
        for pos, v, key in cands:
            if len(heap) < TOP:
                heapq.heappush(heap, (v, pos, key))
                added.add(pos)
            elif v > heap[0][0]:
                out = heapq.heapreplace(heap, (v, pos, key))[1]
                if out in added:
                    added.discard(out)
                else:
                    removed.append(out)
                added.add(pos)
        for pos in removed:
            self._unpin(pos)
        for pos in sorted(added):
            self._pin(pos, event_at(pos))

    def _move(self, s: Summary, slot: str, point: Point, event_at: Callable[[int], Event]) -> None:
        old = getattr(s, slot)
        if old is not None and old[0] == point[0]:
            setattr(s, slot, point)
            return
        self._set(s, slot, point, event_at(point[0]))

    def _settle(self, coming: int) -> None:
        """Make the tail's rows not yet made that stay in it once `coming` more records are appended."""
        lazy = self._lazy
        if lazy is None:
            return
        self._lazy = None
        rows, base, count, made = lazy
        maxlen = self._tail.maxlen or TAIL
        keep = min(count, maxlen - coming)
        for pos in range(base + rows.n - keep, base + rows.n):
            ev = made.get(pos)
            if ev is None:
                ev = made[pos] = rows.event(pos - base)
            self._tail.append((pos, ev))

    def __getstate__(self) -> dict[str, Any]:
        """A worker's result is pickled to go back to the parent: the tail's and the sample's rows travel made."""
        self.view()
        return {**self.__dict__, "_plans": {}}  # (worked out again from the summaries that travel)

    # -- answers ------------------------------------------------------------------------------------------
    @property
    def thinned(self) -> bool:
        """Some records are in no answer but the summaries and counts."""
        return self.threshold < FULL

    def view(self) -> list[tuple[int, Event]]:
        """(position, record) of every record kept, in log order: every record of the run unless thinned."""
        self._settle(0)
        if self._view is None:
            sample = self._sample
            kept: dict[int, Event] = {}
            for p, (h, ev) in sample.items():
                if isinstance(ev, Later):
                    ev = ev.make()
                    sample[p] = (h, ev)
                kept[p] = ev
            kept.update(self._tail)
            kept.update((p, pin[0]) for p, pin in self._pins.items())
            self._view = sorted(kept.items(), key=lambda pe: pe[0])
        return self._view

    def sampled_positions(self) -> set[int]:
        """Positions of the evenly spread sample (not the pinned extremes nor the tail)."""
        return set(self._sample)

    def record(self, pos: int) -> Event:
        """The record at a summary's point (pinned, so always kept)."""
        return self._pins[pos][0]

    def count_holding(self, keys: Iterable[str]) -> int:
        """Records holding any of `keys` (exact unless the run printed more than MAX_SHAPES record shapes)."""
        wanted = set(keys)
        if self.shapes_full:  # an estimate: at least the most frequent key's count
            return max((self.sums[k].n for k in wanted if k in self.sums), default=0)
        return sum(n for shape, n in self.shapes.items() if not wanted.isdisjoint(shape))

    def event(self) -> Event | None:
        """This store as one `metric_series` event on the line of its last record (None when empty)."""
        self._settle(0)
        return Event("metric_series", self._tail[-1][1].line, {"store": self}) if self.total else None

    def retained(self) -> int:
        """Records this store holds as objects (sampled, last, pinned): bounded by cap + tail + pins."""
        return len(self.view())

    # -- a run's files ------------------------------------------------------------------------------------
    @classmethod
    def join(cls, stores: list[MetricStore]) -> MetricStore:
        """The stores of a run's files as one, in file order (positions offset by the records before)."""
        if len(stores) == 1:
            return stores[0]
        out = cls(cap=min((s.cap for s in stores), default=CAP))
        out.threshold = min((s.threshold for s in stores), default=FULL)
        for s in stores:
            out._absorb(s)
        out._thin()
        return out

    def _absorb(self, other: MetricStore) -> None:
        other._settle(0)
        self._settle(0)
        off = self.total
        self.total += other.total
        self._view = None
        limit = self.threshold
        # a record keeps the hash of its position in its own file: each file's kept records stay evenly spread
        self._sample.update((p + off, he) for p, he in other._sample.items() if he[0] < limit)
        self._tail.extend((p + off, ev) for p, ev in other._tail)
        for p, (ev, refs) in other._pins.items():
            self._pins[p + off] = [ev, refs]
        self._plans.clear()  # (its summaries are replaced)
        for mine, theirs in ((self.sums, other.sums), (self.canon, other.canon), (self.fns, other.fns)):
            for k, s in theirs.items():
                mine[k] = _joined(mine.get(k), s, off, self)
        for shape, n in other.shapes.items():
            self.shapes[shape] = self.shapes.get(shape, 0) + n
        self.shapes_full = self.shapes_full or other.shapes_full or len(self.shapes) > MAX_SHAPES
        for tag, (n, first, last) in other.tags.items():
            t = self.tags.get(tag)
            if t is None:
                self.tags[tag] = [n, first + off, last + off]
            else:
                self._unpin(t[2])
                self._unpin(first + off)
                t[0] += n
                t[2] = last + off


def _moved(p: Point | None, off: int) -> Point | None:
    return (p[0] + off, p[1], p[2]) if p is not None else None


def _joined(a: Summary | None, b: Summary, off: int, store: MetricStore) -> Summary:
    """a (the earlier files) followed by b (a later file, positions moved by `off`); pins of slots that lose
    are released."""
    s = Summary()
    drop: list[Point | None] = []
    s.n, s.bad, s.nonzero = b.n, b.bad, b.nonzero
    s.first, s.last, s.lo, s.hi = _moved(b.first, off), _moved(b.last, off), _moved(b.lo, off), _moved(b.hi, off)
    s.bad_first, s.bad_last = _moved(b.bad_first, off), _moved(b.bad_last, off)
    s.top = [(v, p + off, k) for v, p, k in b.top]
    if a is None:
        return s
    both = sorted(a.top + s.top, reverse=True)
    s.top = both[:TOP]
    heapq.heapify(s.top)
    drop.extend((p, v, k) for v, p, k in both[TOP:])
    s.n += a.n
    s.bad += a.bad
    s.nonzero += a.nonzero
    s.first, lost = (a.first, s.first) if a.first is not None else (s.first, None)
    drop.append(lost)
    drop.append(a.last if s.last is not None else None)
    s.last = s.last if s.last is not None else a.last
    for slot, better in (("lo", lambda x, y: y[1] < x[1]), ("hi", lambda x, y: y[1] > x[1])):
        old, new = getattr(a, slot), getattr(s, slot)
        if old is None:
            continue
        if new is not None and better(old, new):
            drop.append(old)
        else:
            drop.append(new)
            setattr(s, slot, old)
    if a.bad_first is not None:
        drop.append(s.bad_first)
        s.bad_first = a.bad_first
    if s.bad_last is None:
        s.bad_last = a.bad_last
    else:
        drop.append(a.bad_last)
    for p in drop:
        if p is not None:
            store._unpin(p[0])
    return s



def sampled(base: int, n: int, limit: int) -> list[int]:
    """Positions base..base+n-1 whose hash is under `limit` (as MetricStore.add samples them), found without hashing
    each: the positions whose hash (p * HASH mod 2^32: a rotation of the circle by HASH) falls in [0, limit) follow
    each other at no more than three distinct distances (the three-gap theorem), which _gaps finds once per limit."""
    if limit >= FULL:
        return list(range(base, base + n))
    end = base + n
    p = base
    while p < end and (p * HASH) % FULL >= limit:
        p += 1
    gaps = _gaps(limit)
    out = []
    while p < end:
        out.append(p)
        for g in gaps:
            if ((p + g) * HASH) % FULL < limit:
                p += g
                break
        else:  # not one of the distances seen: look one by one (never needed, but never wrong)
            p += 1
            while p < end and (p * HASH) % FULL >= limit:
                p += 1
    return out


_GAPS: dict[int, tuple[int, ...]] = {}


def _gaps(limit: int) -> tuple[int, ...]:
    """The distances between consecutive positions whose hash is under `limit`, smallest first."""
    got = _GAPS.get(limit)
    if got is None:
        seen: set[int] = set()
        last, p, hits = 0, 1, 0
        while hits < 200 and p < 1 << 24 and len(seen) < 3:  # three distances: there is no other (Slater's theorem)
            if (p * HASH) % FULL < limit:
                seen.add(p - last)
                last = p
                hits += 1
            p += 1
        got = _GAPS[limit] = tuple(sorted(seen))
    return got


class RowShape:
    """What the rows of one registered line shape mean (scan/columns.py decides): the event kind, the fields of its
    first line (values and the number field are filled per row), the value keys in order with the output column of
    each (-1: a constant, the first line's), the number field (step or seconds) and its column (-1: constant)."""

    __slots__ = ("kind", "fields", "keys", "cols", "consts", "num", "num_col", "proxy", "segments", "nout", "_plan",
                 "share")

    def __init__(self, kind: str, fields: dict[str, Any], keys: tuple[str, ...], cols: tuple[int, ...],
                 consts: tuple[Any, ...], num: str, num_col: int, proxy: bool, segments: tuple[bytes, ...], nout: int):
        self.kind, self.fields, self.keys, self.cols, self.consts = kind, fields, keys, cols, consts
        self.num, self.num_col, self.proxy, self.segments, self.nout = num, num_col, proxy, segments, nout
        self._plan: list[tuple[str, str, str, int]] | None = None
        self.share = (-1, -1)  # the key indices of the mean and the longest response length, when plan() has both

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, k) for k in self.__slots__[:-2])

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for k, v in zip(self.__slots__[:-2], state):
            setattr(self, k, v)
        self._plan, self.share = None, (-1, -1)

    def plan(self) -> list[tuple[str, str, str, int]]:
        """Where MetricStore.add puts each value of a record of this shape: (summary table, series, raw key, index
        of the key), in the order add() creates the series; ("share", ...) for the derived response-length share."""
        if self._plan is None:
            plan: list[tuple[str, str, str, int]] = []
            best: dict[str, tuple[int, str, int]] = {}
            for i, k in enumerate(self.keys):
                plan.append(("sums", k, k, i))
                c = canonical(k)
                if c is not None:
                    if c[0] not in best or c[1] < best[c[0]][0]:
                        best[c[0]] = (c[1], k, i)
                else:
                    fn = reward_function(k)
                    if fn is not None:
                        plan.append(("fns", fn, k, i))
            for name, (_, k, i) in best.items():
                plan.append(("canon", name, k, i))
            if "response_length" in best and "response_length_max" in best:
                plan.append(("share", SHARE, SHARE, -1))
                self.share = (best["response_length"][2], best["response_length_max"][2])
            self._plan = plan
        return self._plan


class Column:
    """One series' values in one shape's rows: n values, at positions `at(i)`, with their statistics (col_stats)."""

    __slots__ = ("n", "value", "pos", "key", "stats")

    def __init__(self, n: int, value: Callable[[int], float], pos: Callable[[int], int], key: str,
                 stats: tuple[Any, ...]) -> None:
        self.n, self.value, self.pos, self.key, self.stats = n, value, pos, key, stats

    def point(self, i: int) -> Point:
        return (self.pos(i), self.value(i), self.key)


def column_stats(values: list[float]) -> tuple[Any, ...]:
    """What _linescan.c col_stats gives, for a column made in Python (a constant, the derived share); whether the
    values rise is said of one value only (no caller asks it of a longer column made here)."""
    n = len(values)
    inc = n == 1 and 0 <= values[0] < STEP_LIMIT and values[0] == int(values[0])
    total = sum(values)
    if n and total - total == 0:  # every value finite (else the sum is not, or overflowed: the general way below)
        if n <= TOP:
            top = list(range(n))
        else:
            b = heapq.nlargest(TOP, values)[-1]
            top, ties = [], 0
            for i in list(compress(range(n), map(b.__le__, values))):  # the indices of values >= b
                if values[i] > b:
                    top.append(i)
                elif ties < TOP:
                    ties += 1
                    top.append(i)
        return (n - values.count(0.0), 0, -1, -1, values.index(min(values)), values.index(max(values)), top, inc)
    nonzero = sum(1 for v in values if v != 0)
    bad = [i for i, v in enumerate(values) if v - v != 0]
    fin = [i for i, v in enumerate(values) if v - v == 0]
    if not fin:
        return (nonzero, len(bad), bad[0] if bad else -1, bad[-1] if bad else -1, -1, -1, [], inc)
    lo = min(fin, key=lambda i: (values[i], i))
    hi = min(fin, key=lambda i: (-values[i], i))
    if len(fin) <= TOP:
        top = fin
    else:
        b = heapq.nlargest(TOP, (values[i] for i in fin))[-1]
        top, ties = [], 0
        for i in fin:
            v = values[i]
            if v > b:
                top.append(i)
            elif v == b and ties < TOP:
                ties += 1
                top.append(i)
    return (nonzero, len(bad), bad[0] if bad else -1, bad[-1] if bad else -1, lo, hi, top, inc)


def const_stats(const: float, n: int) -> tuple[Any, ...]:
    """column_stats of n copies of `const`."""
    nonzero, bad, bad0, _, lo, hi, top, inc = column_stats([const] * min(n, TOP + 1))
    if bad:
        return (n if const != 0 else 0, n, 0, n - 1, -1, -1, [], False)
    return (n if const != 0 else 0, 0, -1, -1, lo, hi, top, inc and n <= 1)


def _at(base: int, ords: Any, rows: Any) -> Callable[[int], int]:
    return lambda k: base + ords[rows[k]]


def _column(vals: Any, start: int) -> Callable[[int], float]:
    return lambda r: vals[start + r]


def _constant(const: float) -> Callable[[int], float]:
    return lambda r: const


def row_event(sh: RowShape, row: list[float], line: Line) -> Event:
    """A row of shape sh (its number in each output column) as the Event its line's parser makes."""
    fields = sh.fields.copy()
    if sh.kind == "metrics":
        if -1 in sh.cols:
            fields["values"] = {k: (row[c] if c >= 0 else const) for k, c, const in zip(sh.keys, sh.cols, sh.consts)}
        else:
            fields["values"] = {k: row[c] for k, c in zip(sh.keys, sh.cols)}
        if sh.num_col >= 0:
            fields[sh.num] = int(row[sh.num_col])
    elif sh.num_col >= 0:
        fields[sh.num] = row[sh.num_col]
    return Event(sh.kind, line, MappingProxyType(fields) if sh.proxy else fields)  # type: ignore[arg-type]


class Later:
    """A sampled row's record, made when an answer first reads it: in a long log most sampled rows are thinned away
    before then. It holds the row's shape, line (its text still in the file) and numbers, not its write-out."""

    __slots__ = ("shape", "line", "row")

    def __init__(self, part: RowPart, i: int) -> None:
        self.shape = part.shape
        self.line = part.line_of(part, i)
        self.row = part.vals[i::part.n].tolist() if part.shape.nout else []

    def make(self) -> Event:
        return row_event(self.shape, self.row, self.line)


class RowPart:
    """The rows of one shape in one write-out of the C prefilter (kind 6): their line numbers, ordinals among the
    write-out's records, the numbers of each output column, the columns' statistics, and how to make a row's line."""

    __slots__ = ("shape", "n", "lineno0", "lines", "ords", "vals", "stats", "line_of")

    def __init__(self, shape: RowShape, n: int, lineno0: int, lines: Any, ords: Any, vals: Any, stats: tuple[Any, ...],
                 line_of: Callable[[RowPart, int], Line]) -> None:
        self.shape, self.n, self.lineno0, self.lines, self.ords = shape, n, lineno0, lines, ords
        self.vals, self.stats, self.line_of = vals, stats, line_of

    def lineno(self, i: int) -> int:
        return self.lineno0 + self.lines[i]

    def value(self, col: int, i: int) -> float:
        return self.vals[col * self.n + i]

    def event(self, i: int) -> Event:
        """Row i as the Event its line's parser makes."""
        sh = self.shape
        return row_event(sh, self.vals[i::self.n].tolist() if sh.nout else [], self.line_of(self, i))

    def contributions(self, store: MetricStore, base: int) -> list[tuple[dict[str, Summary], str, Column]]:
        """(summary table, series, its column) for each series a record of this shape updates, in add()'s order."""
        sh = self.shape
        n, ords = self.n, self.ords
        out: list[tuple[dict[str, Summary], str, Column]] = []
        tables = {"sums": store.sums, "fns": store.fns, "canon": store.canon, "share": store.canon}

        def pos(i: int) -> int:
            return base + ords[i]

        for table, name, key, i in sh.plan():
            if table == "share" and len(self.stats) > sh.nout:  # worked out by the C side (_linescan.c col_share)
                share_b, rows_b, stats = self.stats[sh.nout]
                if share_b:
                    where = pos if rows_b is None else _at(base, ords, memoryview(rows_b).cast("q"))
                    out.append((tables[table], name, Column(len(share_b) // 8, memoryview(share_b).cast("d").__getitem__,
                                                            where, key, stats)))
                continue
            if table == "share":  # mean / longest response, where the longest is > 0 and the mean finite
                mean_i, max_i = sh.share
                means, longs = self.key_column(mean_i), self.key_column(max_i)
                total = sum(means) + sum(longs)  # finite: every value is (NaN, an infinity or an overflow: not)
                if total - total == 0 and min(longs) > 0:  # every row counts (the usual case): in bulk
                    share: list[float | None] = list(map(truediv, means, longs))
                else:
                    share = [mean / longest if longest > 0 and mean - mean == 0 else None
                             for mean, longest in zip(means, longs)]
                at: Callable[[int], int] = pos
                if None in share:
                    rows = [r for r, v in enumerate(share) if v is not None]
                    share = [share[r] for r in rows]
                    at = _at(base, ords, rows)
                vals = cast("list[float]", share)  # no None left
                if vals:
                    out.append((tables[table], name, Column(len(vals), vals.__getitem__, at, key, column_stats(vals))))
                continue
            c = sh.cols[i]
            if c >= 0:
                col = Column(n, _column(self.vals, c * n), pos, key, self.stats[c])
            else:
                const = sh.consts[i]
                col = Column(n, _constant(const), pos, key, const_stats(const, n))
            out.append((tables[table], name, col))
        return out

    def key_column(self, i: int) -> list[float]:
        """The values of key i (of the shape's keys) in every row."""
        c = self.shape.cols[i]
        return self.vals[c * self.n:(c + 1) * self.n].tolist() if c >= 0 else [self.shape.consts[i]] * self.n


class Rows:
    """The metric records of one write-out of the C prefilter, in parts by shape; `n` records in all, ordinal k being
    the k-th record in log order."""

    __slots__ = ("parts", "n", "first", "passed")

    def __init__(self, parts: list[RowPart]) -> None:
        self.parts = parts
        self.n = sum(p.n for p in parts)
        self.first = 0  # the number of records before them (metrics.Records)
        self.passed = False  # passed on to the store (metrics.Records)

    def locate(self, k: int) -> tuple[RowPart, int]:
        """The part holding ordinal k and its index there. Each part's ordinals rise: a bisection of each, on the
        memoryview itself (the few rows a write-out samples are not worth a list of every ordinal)."""
        for p in self.parts:
            o = p.ords
            if p.n and o[0] <= k <= o[p.n - 1]:
                i = bisect_left(o, k)
                if o[i] == k:
                    return p, i
        raise IndexError(k)

    def event(self, k: int) -> Event:
        part, i = self.locate(k)
        return part.event(i)


_TEXT, _MSG, _CUT, _ACTOR, _PID = (Line.__dict__[k] for k in ("text", "_msg", "_cut", "actor", "pid"))


class RowLine(Line):
    """A row's line (a line of a registered shape the C prefilter kept as columns): its file and number now, its text
    (read back from the file by scan/prefiltered.py) made when first asked. Most rows are never asked: a long log's
    records are summarized, and only the kept ones that a finding cites show their text."""

    __slots__ = ("_make",)

    def __init__(self, file: str, lineno: int, make: Callable[[], Line]) -> None:  # noqa: D107 - no Line.__init__
        self.file, self.lineno, self.repeat, self.until = file, lineno, 1, 0
        self._make: Callable[[], Line] | None = make

    def _load(self) -> None:
        make = self._make
        if make is not None:
            self._make = None
            line = make()
            for slot, value in ((_TEXT, line.text), (_MSG, line._msg), (_CUT, line._cut), (_ACTOR, line.actor),
                                (_PID, line.pid)):
                slot.__set__(self, value)

    @property
    def text(self) -> str:
        self._load()
        return _TEXT.__get__(self)

    @text.setter
    def text(self, value: str) -> None:
        _TEXT.__set__(self, value)

    @property
    def msg(self) -> str:
        self._load()
        return Line.msg.fget(self)  # type: ignore[attr-defined]

    @property
    def actor(self) -> str:
        self._load()
        return _ACTOR.__get__(self)

    @actor.setter
    def actor(self, value: str) -> None:
        _ACTOR.__set__(self, value)

    @property
    def pid(self) -> str:
        self._load()
        return _PID.__get__(self)

    @pid.setter
    def pid(self, value: str) -> None:
        _PID.__set__(self, value)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled (a worker's result) as the Line it stands for."""
        return (Line, (self.file, self.lineno, self.text, self.msg, self.actor, self.pid, self.repeat, self.until))


JOIN_ROWS = 256  # rows of small write-outs joined (Joiner) before they go to the store as one bulk add
COL_JOIN: Callable[..., Any] | None = None  # _linescan.col_join, given by scan/columns.py (the C helper is the scan's)


class Joiner:
    """The rows of small write-outs passed on one after another (metrics.Records), joined before they reach the
    store: a Ray driver log's trainer lines come a few at a time between other processes' lines, so each write-out
    holds a few rows, and a bulk add per write-out costs a pass over every series (~0.5 ms), one record at a time
    ~30 us a record. Joined, the rows of each shape are one part (_joined_part) and JOIN_ROWS rows cost one bulk add.
    A write-out of `bulk` rows or more goes in whole as it is (after the rows held before it), and so does an event
    (flush first): the store gets every record in log order, as add() of each would leave it (add_rows is exact)."""

    __slots__ = ("sink", "sink_rows", "bulk", "parts", "n")

    def __init__(self, sink: Callable[[Event], None], sink_rows: Callable[[Rows], None], bulk: int) -> None:
        self.sink, self.sink_rows, self.bulk = sink, sink_rows, bulk
        self.parts: dict[int, list[tuple[RowPart, int]]] = {}  # id(shape) -> (part, ordinal of its write-out's first)
        self.n = 0  # rows held

    def add(self, rows: Rows) -> None:
        if rows.n >= self.bulk:
            self.flush()
            self.sink_rows(rows)
            return
        for part in rows.parts:
            self.parts.setdefault(id(part.shape), []).append((part, self.n))
        self.n += rows.n
        if self.n >= JOIN_ROWS:
            self.flush()

    def flush(self) -> None:
        """The rows held, to the store: in bulk when there are `bulk` or more, else one record each."""
        if not self.n:
            return
        parts: list[RowPart] = []
        for held in self.parts.values():
            parts.extend(_joined_part(held))
        rows = Rows(parts)
        self.parts, self.n = {}, 0
        if rows.n >= self.bulk:
            self.sink_rows(rows)
        else:
            for k in range(rows.n):
                self.sink(rows.event(k))


def _joined_part(held: list[tuple[RowPart, int]]) -> list[RowPart]:
    """The parts of one shape from consecutive write-outs (each with the ordinal of its write-out's first row among
    the rows joined) as one part: line numbers from the first's, ordinals among the joined rows, each column's values
    one after another with the statistics (and the share of the longest response) the C side works out for them as
    for one write-out (_linescan.c col_join); a row's line made by the part it came from."""
    first = held[0][0]
    if len(held) == 1 and held[0][1] == 0:
        return [first]
    sh, nout = first.shape, first.shape.nout
    extra = {len(p.stats) - nout for p, _ in held}
    if COL_JOIN is None or nout == 0 or extra != {0} and (extra != {1} or sh.kind != "metrics"):  # each its own
        return [_shifted(p, at) for p, at in held]
    lineno0 = first.lineno0
    lines, ords, starts = array("q"), array("q"), []
    for p, at in held:
        starts.append(len(lines))
        d = p.lineno0 - lineno0
        lines.extend([x + d for x in p.lines.tolist()] if d else p.lines.tolist())
        ords.extend([o + at for o in p.ords.tolist()])
    mean = longest = -1
    if extra == {1}:  # the C side works out the share of the longest response (as Shape.spec asks it)
        sh.plan()
        mean_i, max_i = sh.share
        mean, longest = (sh.cols[mean_i], sh.cols[max_i]) if mean_i >= 0 else (-1, -1)
        if mean < 0 or longest < 0 or mean == longest:
            return [_shifted(p, at) for p, at in held]
    vals, stats = COL_JOIN([p.vals for p, _ in held], nout, mean, longest)
    parts = [p for p, _ in held]
    return [RowPart(sh, len(lines), lineno0, memoryview(lines), memoryview(ords), memoryview(vals).cast("d"), stats,
                    _line_by_part(parts, starts))]


def _shifted(p: RowPart, at: int) -> RowPart:
    """Part p with its ordinals `at` later."""
    ords = array("q", [o + at for o in p.ords.tolist()])
    return RowPart(p.shape, p.n, p.lineno0, p.lines, memoryview(ords), p.vals, p.stats, p.line_of)


def _line_by_part(parts: list[RowPart], starts: list[int]) -> Callable[[RowPart, int], Line]:
    def line_of(_: RowPart, i: int) -> Line:
        j = bisect_right(starts, i) - 1
        return parts[j].line_of(parts[j], i - starts[j])

    return line_of
