"""Many small files, scanned in batches that any process may take (parallel.py), with the answer one process gives.

A run of per-rank and per-sample logs holds tens of thousands of files of a few KB: one process scanning them all
left every other core idle. They are cut into batches of neighbours, in file order. What a file's scan gives the
run-level stores (scan/series.py RunSeries: each finished metric record, each timer reading) depends on the order
the files come in (the store samples records by their position in the run; a timer reading keeps the first line
that printed it), so a batch's scan does not give them to the stores: it writes them on a Tape, which travels
with the batch's results, and this process plays the tapes into the run's stores in batch order once every batch
before is in. The stores so get the records in file order whichever process scanned which batch: the report is
the report of one process (tests/test_small_files.py). A batch that never comes back (its worker died) is skipped,
and its files are reported as not scanned.

Only files smaller than prefiltered.COLUMNS_FROM go in batches. Their rows of registered line shapes (scan/columns.py:
the shapes every small file of a process shares) go on the tape: metric records as the write-outs of rows they came in
(pickled as their columns' bytes and the rows' texts: parallel.py), which the run's store takes joined (RunStore);
timer readings as the events they stand for, one by one, most of them a reading again (TIMER_AGAIN)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from triage.input.decompress import safe_open
from triage.parsers.series_store import Rows, _joined_part
from triage.scan.native import SMALL_HEAD
from triage.scan.prefiltered import COLUMNS_FROM, JoinedLines

if TYPE_CHECKING:
    from triage.model import LogFile
    from triage.scan.native import Needles
    from triage.scan.series import RunSeries

SMALL = COLUMNS_FROM  # bytes: files below this go in batches ...
MANY = 256  # ... when a run has this many of them (fewer take less time than starting a worker)
FILES = 128  # files in a batch at most: a batch's results travel back as one message
BYTES = 4 << 20  # bytes in a batch at most

SAMPLE_FILES = 32  # small files whose text picks the byte pairs of the matcher they share (Needles.share) ...
SAMPLE_EACH = 8 << 10  # ... bytes of each at most

RECORD, RECORD_ROWS, TIMER, TIMER_ROWS, TIMER_AGAIN = range(5)  # what a tape entry gives (RunSeries.store / .timers
# method); TIMER_AGAIN: the timer reading of an earlier entry of the tape again (its index), printed by another line


def split(files: list[LogFile]) -> tuple[list[LogFile], list[list[LogFile]]]:
    """(the files that are not batched, batches of the small files in file order), or (files, []) when the run
    has fewer than MANY small files."""
    small = [lf for lf in files if lf.size < SMALL and lf.path != "-"]
    if len(small) < MANY:
        return list(files), []
    out: list[list[LogFile]] = [[]]
    size = 0
    for lf in small:
        if len(out[-1]) >= FILES or out[-1] and size + lf.size > BYTES:
            out.append([])
            size = 0
        out[-1].append(lf)
        size += lf.size
    ids = {id(lf) for lf in small}
    return [lf for lf in files if id(lf) not in ids], out


def sample(files: list[LogFile]) -> bytes:
    """Text of SAMPLE_FILES files spread evenly over a run's small files (heads under native.SMALL_HEAD share one
    matcher), or b"" when the run has fewer than MANY. Evenly spread: a run of per-rank trainer logs then per-sample
    verifier logs gives pairs rare in both (pairs picked from the trainer logs alone scan a verifier log 2x slower,
    from the verifier logs alone a trainer log 4x slower)."""
    small = [lf for lf in files if lf.size < SMALL_HEAD and lf.path != "-" and not lf.compression]
    if len(small) < MANY:
        return b""
    parts = []
    for i in range(SAMPLE_FILES):
        try:
            with safe_open(small[i * len(small) // SAMPLE_FILES].path) as f:
                parts.append(f.read(SAMPLE_EACH))
        except OSError:  # the scan reports it
            continue
    return b"\n".join(parts)


def teach(needles: Needles | None, files: list[LogFile]) -> bytes:
    """Give the matcher small files share pairs picked from their own text, when the run has many of them; the text
    it was given (b"": none), for workers forked before (parallel.soon) to be given it too."""
    if needles is not None and (text := sample(files)):
        needles.share(text)
        return text
    return b""


class _Side:
    """One side of a tape (the metric store's or the timers'): add() and add_rows() written down in order."""

    __slots__ = ("entries", "one", "rows")

    def __init__(self, entries: list[tuple[int, Any]], one: int, rows: int) -> None:
        self.entries, self.one, self.rows = entries, one, rows

    def add(self, item: Any) -> None:
        self.entries.append((self.one, item))

    def add_rows(self, rows: Any) -> None:
        self.entries.append((self.rows, rows))  # a write-out of rows: pickled as their columns' bytes and the
        # rows' texts (parallel.py), played into the run's store, which joins them with the rows around (RunStore)


class _Records(_Side):
    """The metric store's side of a tape. The write-outs of rows of the batch's files are joined as they come, by shape
    (series_store._joined_part, as the run's store joins them: RunStore), and written down as one write-out once a
    record or the tape's end comes: a batch of 128 per-rank logs gave 128 write-outs of three parts each, and their
    pickling and unpickling (~20 us a part) cost more than their scan. The store gets the same records in the same
    order (MetricStore.add_rows is exact however the rows are cut into write-outs); the joined rows' lines are where
    they are in their files (prefiltered.JoinedLines)."""

    __slots__ = ("held", "n")

    def __init__(self, entries: list[tuple[int, Any]]) -> None:
        super().__init__(entries, RECORD, RECORD_ROWS)
        self.held: dict[int, list[tuple[Any, int]]] = {}  # id(shape) -> (part, ordinal of its write-out's first row)
        self.n = 0  # rows held

    def add(self, item: Any) -> None:
        self.flush()
        self.entries.append((RECORD, item))

    def add_rows(self, rows: Any) -> None:
        for part in rows.parts:
            self.held.setdefault(id(part.shape), []).append((part, self.n))
        self.n += rows.n

    def flush(self) -> None:
        if not self.n:
            return
        parts = []
        for held in self.held.values():
            joined = _joined_part(held)
            if len(held) > 1 and len(joined) == 1:  # its lines made by a closure over the parts: where they are instead
                starts = list(itertools.accumulate((p.n for p, _ in held[:-1]), initial=0))
                lines = JoinedLines.of([p.line_of for p, _ in held], starts)
                if lines is not None:
                    joined[0].line_of = lines
            parts.extend(joined)
        self.held, self.n = {}, 0
        self.entries.append((RECORD_ROWS, Rows(parts)))


class _Timers(_Side):
    """The timers' side of a tape. A reading printed again (the same name, phase, seconds, ok and actor as an earlier
    entry of the tape: 86 % of the timer lines of a run of per-rank logs) is written down as that entry's index, so
    the line that printed it does not travel. TimerStore.add (parsers/metrics.py) does the same with either event:
    it counts the reading's line, the event it keeps being the first one's. Not when the store, near its bound
    (TIMER_READINGS), would round the seconds to 3 significant figures and so make a reading of its own: only
    readings that rounding leaves as they are are written as an index. The tape's last timer entry is always
    written in full (done()): the store's `last` is the line of the last reading it was given."""

    __slots__ = ("first", "last")

    def __init__(self, entries: list[tuple[int, Any]]) -> None:
        super().__init__(entries, TIMER, TIMER_ROWS)
        self.first: dict[tuple[Any, ...], int] = {}  # reading -> index of its first entry in the tape
        self.last: tuple[int, Any] | None = None  # (index, event) of the last timer entry; (index, (part, row)) when
        # it was a row's reading again (its event is made only should it stay the last: done())

    def add(self, item: Any) -> None:
        f = item.fields
        seconds = f.get("seconds")
        key = (f.get("name"), f.get("phase"), seconds, f.get("ok", True), f.get("actor"))
        at = self.first.get(key)
        self.last = (len(self.entries), item)
        if at is not None:
            self.entries.append((TIMER_AGAIN, at))
        else:
            if seconds is None or isinstance(seconds, float) and float(f"{seconds:.3g}") == seconds:
                self.first[key] = len(self.entries)
            self.entries.append((TIMER, item))

    def add_rows(self, rows: Any) -> None:
        """A write-out's timer rows (series_store.RowPart, one per shape) as their readings, in line order, as
        TimerStore.add_rows takes them (as add() of each in line order would). A row's reading is worked out from its
        shape's fields and its seconds' column, as its event would hold them: a reading again (most rows) is written
        as its first entry's index without making the row's event."""
        order = sorted((part.lineno(i), j, part, i) for j, part in enumerate(rows) for i in range(part.n))
        first, entries = self.first, self.entries
        for _, _, part, i in order:
            sh = part.shape
            f = sh.fields
            seconds = part.value(sh.num_col, i) if sh.num_col >= 0 else f.get(sh.num)
            at = first.get((f.get("name"), f.get("phase"), seconds, f.get("ok", True), f.get("actor")))
            if at is None:
                self.add(part.event(i))
            else:
                self.last = (len(entries), (part, i))
                entries.append((TIMER_AGAIN, at))

    def done(self) -> None:
        if self.last is not None:
            at, item = self.last
            if isinstance(item, tuple):  # a row's reading again
                part, i = item
                item = part.event(i)
            self.entries[at] = (TIMER, item)


class Tape:
    """Stands in for the run's stores while a batch is scanned (Scanner.scan takes it as its `series`): what the
    batch's files give them, in order, to be played into the real ones later (play)."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, Any]] = []
        self.store = _Records(self.entries)
        self.timers = _Timers(self.entries)

    def here(self) -> bool:
        return True  # whichever process scans the batch, its files give their records to this tape

    def done(self) -> list[tuple[int, Any]]:
        """The tape's entries, once the batch is scanned."""
        self.store.flush()
        self.timers.done()
        return self.entries


def play(entries: list[tuple[int, Any]], series: RunSeries) -> None:
    """A tape's entries into the run's stores, as the files would have given them. A reading printed again
    (TIMER_AGAIN) counts one more line of the reading its first entry put in the store, as TimerStore.add would: the
    store keeps every reading it was given, and the first entry's seconds are ones its rounding leaves as they are
    (_Timers), so the reading is the same one however full the store is by now."""
    store, timers = series.store, series.timers
    again: dict[int, list[Any]] = {}  # index of a first entry -> the store's [event, lines] of its reading
    for what, item in entries:
        if what == RECORD:
            store.add(item)
        elif what == TIMER:
            timers.add(item)
        elif what == TIMER_AGAIN:
            ev = entries[item][1]
            got = again.get(item)
            if got is None:
                f = ev.fields
                key = (f.get("name"), f.get("phase"), f.get("seconds"), f.get("ok", True), f.get("actor"))
                got = again[item] = timers.kept[key]
            got[1] += 1
            timers.last = ev.line
        elif what == RECORD_ROWS:
            store.add_rows(item)
        else:
            timers.add_rows(item)


class InOrder:
    """Plays the tapes of batches first..first+count-1 into `series` in batch order, as they come in any order."""

    def __init__(self, series: RunSeries | None, first: int) -> None:
        self.series = series
        self.next = first
        self.waiting: dict[int, list[tuple[int, Any]] | None] = {}  # batch -> its tape (None: lost)

    def put(self, i: int, entries: list[tuple[int, Any]] | None) -> None:
        """Batch i's tape (None: the batch is lost); it and any batches after it that were waiting are played."""
        self.waiting[i] = entries
        while self.next in self.waiting:
            tape = self.waiting.pop(self.next)
            self.next += 1
            if tape and self.series is not None:
                play(tape, self.series)

    def finish(self, end: int) -> None:
        """Every batch up to `end` has come or is lost: play what is still waiting."""
        while self.next < end:
            self.put(self.next, self.waiting.get(self.next))

