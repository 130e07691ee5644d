"""The trainer metric records and timer readings of every file one process scans, in one store of each.

A store per file (parsers/series_store.py MetricStore, parsers/metrics.py TimerStore) is bounded per file, not per
run: a run of 12,570 small per-rank trainer logs kept 12,570 stores, every record of each (502 MB for the bench's
`small` profile), and joining them at the end cost more than filling them. Here each file's records are still
joined per file as they come (Records: verl fragments, MILES's duplicate prints), but every finished record goes
into the one store of the process, whose cap then holds across the run; timer readings likewise go into one
TimerStore, so a reading printed in many files is one event with its count.

The store samples records by their position in the run (not in their file): a run of many short files keeps an
evenly spread sample instead of the first records of every file. A forked worker (parallel.py) scans with a copy of
the scanner; its files keep a store of their own each, which its results carry back (a `metric_series` event per
file), and Run.store() joins them with this one."""

from __future__ import annotations

import os
from typing import Any

from triage.model import Event
from triage.parsers.metrics import BULK_MIN, Records, StoredRecords, TimerStore
from triage.parsers.series_store import Joiner, MetricStore, Rows


class RunSeries:
    """The run-level stores of the process that made it (see the module note)."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # a forked worker's copy is not this process's: its files keep their own stores
        self.store = RunStore()
        self.events: list[Event] = []  # the stores as events, once closed
        self.timers = TimerStore(self.events)

    def here(self) -> bool:
        """Whether files scanned now go into these stores (this is the process that made them)."""
        return os.getpid() == self.pid

    def close(self) -> list[Event]:
        """The stores as a `metric_series` and a `timer_series` event (when not empty); the stores start again."""
        ev = self.store.event()
        if ev is not None:
            self.events.append(ev)
        self.timers.close()
        out, self.events = self.events, []
        self.store = RunStore()
        self.timers = TimerStore(self.events)
        return out


class RunStore:
    """The run's MetricStore, taking the rows of many files' write-outs joined (series_store.Joiner): a small file's
    few rows (a per-rank log's dozen records) would each cost the store an add() (~10 us), and a bulk add of them alone
    a pass over every series; joined across files, JOIN_ROWS rows cost one bulk add. A record (add) goes in after the
    rows held before it: the store gets every record in run order, as add() of each would leave it."""

    __slots__ = ("inner", "joiner")

    def __init__(self) -> None:
        self.inner = MetricStore()
        self.joiner = Joiner(self.inner.add, self.inner.add_rows, BULK_MIN)

    def add(self, ev: Event) -> None:
        self.joiner.flush()
        self.inner.add(ev)

    def add_rows(self, rows: Rows) -> None:
        self.joiner.add(rows)

    def event(self) -> Event | None:
        self.joiner.flush()
        return self.inner.event()


class JoinedRecords(StoredRecords):
    """One file's records, joined as they come (Records), into a run's store instead of a store of the file's own:
    close() adds no event; `last` is the line of the file's last record (0: none)."""

    def __init__(self, store: Any) -> None:  # a RunStore, or the store side of a batch's tape (batches.Tape)
        into = _Into(store)  # not a method of its own: that would be a reference cycle, which only the cyclic
        Records.__init__(self, into, into.rows)  # collector (off during an analysis) frees, keeping the run's store
        self.store = store  # alive; rows of registered shapes (scan/columns.py) go in whole, as into a file's store
        self.events = []
        # each write-out's rows straight on: the run's store (RunStore), or a batch's tape played into one, joins
        # them with the rows of the files before and after
        self.joiner = Joiner(into, into.rows, 0)

    @property
    def last(self) -> int:
        return int(self.sink.last)

    def close(self) -> None:
        Records.close(self)


class _Into:
    """Where JoinedRecords passes a finished record: the run's store, noting its line."""

    __slots__ = ("store", "last")

    def __init__(self, store: Any) -> None:  # a RunStore, or the store side of a batch's tape (batches.Tape)
        self.store = store
        self.last = 0

    def __call__(self, ev: Event) -> None:
        self.last = ev.line.lineno
        self.store.add(ev)

    def rows(self, rows: Rows) -> None:
        """A write-out of rows (the records of registered line shapes), in bulk, as MetricStore.add_rows takes it."""
        if rows.n:
            part, i = rows.locate(rows.n - 1)
            self.last = max(self.last, part.lineno(i))
            self.store.add_rows(rows)
