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
While a run has no more than `cap` records nothing is dropped: the view is every record, in log order, and the
checks see exactly what they saw when every record was kept.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable
from typing import Any

from triage.model import Event
from triage.parsers.vocabulary import canonical, reward_function

CAP = 4096  # sampled records (their full values), whatever the log's length
TAIL = 256  # the last records, kept whole (the last steps of a series, the last evidence)
TOP = 16  # the highest values of each series, with their records: rare records over a threshold stay in view
MAX_SHAPES = 4096  # distinct key sets counted exactly; a run prints a handful
HASH = 0x9E3779B1  # 2^32 / golden ratio: consecutive positions hash far apart and evenly
FULL = 1 << 32

SHARE = "response_length/share_of_max"  # derived: a record's mean response length / its longest response
Point = tuple[int, float, str]  # (record position in the store, value, raw key)


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


class MetricStore:
    """The merged metric records of one file (or, joined, of a run) in bounded memory."""

    def __init__(self, cap: int = CAP, tail: int = TAIL) -> None:
        self.cap = cap
        self.total = 0  # records added
        self.threshold = FULL  # a record is sampled while hash(position) < threshold
        self._sample: dict[int, tuple[int, Event]] = {}  # position -> (hash of its position in its file, record)
        self._tail: deque[tuple[int, Event]] = deque(maxlen=tail)
        self._pins: dict[int, list[Any]] = {}  # position -> [record, references]
        self.sums: dict[str, Summary] = {}  # raw key -> Summary
        self.canon: dict[str, Summary] = {}  # canonical series -> Summary (the record's preferred alias)
        self.fns: dict[str, Summary] = {}  # reward function -> Summary (each of its keys a record holds)
        self.shapes: dict[tuple[str, ...], int] = {}  # the keys of a record, in order -> records
        self.shapes_full = False  # more distinct shapes than MAX_SHAPES: counts of holders are estimates
        self.tags: dict[tuple[str, str], list[Any]] = {}  # (framework, tag) -> [records, first pos, last pos]
        self._view: list[tuple[int, Event]] | None = None

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

    def _update(self, s: Summary, pos: int, v: float, key: str, ev: Event) -> None:
        s.n += 1
        point = (pos, v, key)
        if s.first is None:
            self._set(s, "first", point, ev)
        self._set(s, "last", point, ev)
        if v != 0:
            s.nonzero += 1
        if v - v != 0:  # NaN or +-inf (inf - inf is NaN)
            s.bad += 1
            if s.bad_first is None:
                self._set(s, "bad_first", point, ev)
            self._set(s, "bad_last", point, ev)
            return
        if s.lo is None or v < s.lo[1]:
            self._set(s, "lo", point, ev)
        if s.hi is None or v > s.hi[1]:
            self._set(s, "hi", point, ev)
        top = s.top
        if len(top) < TOP:
            heapq.heappush(top, (v, pos, key))
            self._pin(pos, ev)
        elif v > top[0][0]:
            self._unpin(heapq.heapreplace(top, (v, pos, key))[1])
            self._pin(pos, ev)

    def add(self, ev: Event) -> None:
        """One merged record (parsers/metrics.py), in log order."""
        pos = self.total
        self.total += 1
        self._view = None
        f = ev.fields
        values: dict[str, float] = f["values"]
        sums = self.sums
        best: dict[str, Any] = {}
        for k, v in values.items():
            s = sums.get(k)
            if s is None:
                s = sums[k] = Summary()
            self._update(s, pos, v, k, ev)
            c = canonical(k)
            if c is not None:
                if c[0] not in best or c[1] < best[c[0]][0]:
                    best[c[0]] = (c[1], k)
            else:
                fn = reward_function(k)
                if fn is not None:
                    self._update(self.fns.setdefault(fn, Summary()), pos, v, k, ev)
        for name, (_, k) in best.items():
            self._update(self.canon.setdefault(name, Summary()), pos, values[k], k, ev)
        if "response_length" in best and "response_length_max" in best:
            # the mean response length as a share of the step's longest (checks/series.mean_length_at_cap): its
            # highest values keep the steps nearest the cap in view, however rare
            mean, longest = values[best["response_length"][1]], values[best["response_length_max"][1]]
            if longest > 0 and mean - mean == 0:
                self._update(self.canon.setdefault(SHARE, Summary()), pos, mean / longest, SHARE, ev)
        shape = tuple(values)
        if shape in self.shapes:
            self.shapes[shape] += 1
        elif len(self.shapes) < MAX_SHAPES:
            self.shapes[shape] = 1
        else:
            self.shapes_full = True
        tag = (f.get("framework", ""), f.get("tag", ""))
        t = self.tags.get(tag)
        if t is None:
            self.tags[tag] = [1, pos, pos]
            self._pin(pos, ev)
            self._pin(pos, ev)
        else:
            t[0] += 1
            self._unpin(t[2])
            t[2] = pos
            self._pin(pos, ev)
        self._tail.append((pos, ev))
        h = (pos * HASH) % FULL
        if h < self.threshold:
            self._sample[pos] = (h, ev)
            if len(self._sample) > self.cap:
                self._thin()

    def _thin(self) -> None:
        while len(self._sample) > self.cap:
            self.threshold //= 2
            limit = self.threshold
            self._sample = {p: he for p, he in self._sample.items() if he[0] < limit}

    # -- answers ------------------------------------------------------------------------------------------
    @property
    def thinned(self) -> bool:
        """Some records are in no answer but the summaries and counts."""
        return self.threshold < FULL

    def view(self) -> list[tuple[int, Event]]:
        """(position, record) of every record kept, in log order: every record of the run unless thinned."""
        if self._view is None:
            kept = {p: he[1] for p, he in self._sample.items()}
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
        off = self.total
        self.total += other.total
        self._view = None
        limit = self.threshold
        # a record keeps the hash of its position in its own file: each file's kept records stay evenly spread
        self._sample.update((p + off, he) for p, he in other._sample.items() if he[0] < limit)
        self._tail.extend((p + off, ev) for p, ev in other._tail)
        for p, (ev, refs) in other._pins.items():
            self._pins[p + off] = [ev, refs]
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

