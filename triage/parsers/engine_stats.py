"""Per-engine timelines of engine batch stats (SGLang and vLLM), kept as compact arrays (not one object per line).

One EngineStats per engine origin (file, Ray pid, DP group or vLLM engine index). Rows come from SGLang
`Decode batch`/`Prefill batch` lines and vLLM's periodic stats lines (V0 `metrics.py`, V1 `loggers.py`); every
parser gives the same normalized fields: `usage` (0..1, the KV pool's share in use), `#running-req`,
`#queue-req` (requests waiting, swapped ones included), a throughput and the row's time (`t`, seconds; vLLM and
old SGLang stamps have no year, so times only compare within one log). Checks read the arrays (pressure
episodes, lone stragglers) and reports draw them as timelines.

The arrays hold every row of a small log read line for line. Of a log the C prefilter reads (scan/prefiltered.py)
they hold an evenly spaced sample of the rows (about 1000 per file, every row up to 1 MiB) and the rows Python
parses; the plain rows with a pool usage of 0.9 or more it folds into records (EngineStats.fold: pressure rows,
episodes, peaks and ends, as if each had been added), so memory stays flat whatever the log's size; `total` counts
every row seen, stored or not.
"""

from __future__ import annotations

import calendar
import heapq
import re
from array import array
from collections.abc import Callable
from datetime import datetime
from typing import Any

from triage.model import Event, Line

PRESSURE_USAGE = 0.9  # a pool this full with requests waiting: admission is bound by the KV pool

# Row stamps, whatever the program: ISO (container runtimes, SGLang `[2025-12-12 08:43:59 TP0]`),
# vLLM `INFO 12-13 10:31:12` / `(APIServer pid=1) INFO 06-02 11:03:11 [loggers.py:…]`, old SGLang `[17:15:07 TP0]`.
STAMP = re.compile(r"(?:(?P<Y>\d{4})-)?(?P<m>\d\d)-(?P<d>\d\d)[ T](?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
                   r"|\[(?P<h2>\d\d):(?P<M2>\d\d):(?P<S2>\d\d)[\].,\s]")


_LAST_STAMP: list[Any] = ["", -1.0]  # the last stamp read and its seconds: rows of one second share it
_DAYS: dict[tuple[int, int, int], float] = {}  # midnight of each date seen, in seconds (UTC arithmetic)


def row_time(text: str) -> float:
    """Seconds of the first time stamp in the line's first 80 characters (a year-less stamp is put in 2001), or -1."""
    m = STAMP.search(text, 0, 80)
    if m is None:
        return -1.0
    stamp = m.group(0)
    if stamp == _LAST_STAMP[0]:
        return _LAST_STAMP[1]
    if m.group("h2") is not None:
        t = int(m.group("h2")) * 3600 + int(m.group("M2")) * 60 + int(m.group("S2")) * 1.0
    else:
        day = (int(m.group("Y") or 2001), int(m.group("m")), int(m.group("d")))
        midnight = _DAYS.get(day)
        if midnight is None:
            try:
                midnight = _DAYS[day] = float(calendar.timegm((*day, 0, 0, 0)))
                datetime(*day)  # a real date (13-45 is not one)
            except (ValueError, OverflowError):
                midnight = _DAYS[day] = -1.0
        if midnight < 0:
            return -1.0
        t = midnight + int(m.group("H")) * 3600 + int(m.group("M")) * 60 + int(m.group("S"))
    _LAST_STAMP[0], _LAST_STAMP[1] = stamp, t
    return t


def engine_key(file: str, pid: str, text: str) -> str:
    """One timeline per engine: the file, the Ray actor pid, and the DP group (each DP-attention group logs its
    own stats from its attention-TP rank 0, `[time DP3 TP3]`). The DP tag is read as _linescan.c reads it
    when it counts rows per origin: ` DP<digits>` inside the leading bracket."""
    key = file + (f" pid={pid}" if pid else "")
    at = text.find("Engine ", 0, 120)  # vLLM V1: one API server logs the rows of each data-parallel engine
    if at >= 0 and text[at + 7:at + 10].isdigit() and text[at + 10:at + 11] == ":":
        return f"{key} Engine {text[at + 7:at + 10]}"
    if text.startswith("["):
        close = text.find("]")
        at = text.find(" DP", 0, close)
        if at >= 0 and text[at + 3:at + 4].isdigit():
            end = at + 4
            while end < close and text[end] != " ":
                end += 1
            return f"{key} {text[at + 1:end]}"
    return key


def engine(res: Any, key: str) -> EngineStats:
    """The timeline `key` of a file's result, made on first use."""
    es = res.engines.get(key)
    if es is None:
        es = res.engines[key] = EngineStats(key)
    return es


KEEP_PRESSURE_LINES = 20  # evidence lines kept of rows with a full pool and a waiting queue
KEEP_EPISODES = 256  # episodes kept per engine and kind (the longest are what checks report)
ROW_GAP = 500  # lines: two stored rows further apart than this are not consecutive (rows between were not kept)
LONE_RUNNING = 2  # "one or a few requests decoding alone": at most this many running, none waiting


class RowRef:
    """A row the C prefilter folded, as its Line once someone asks for it: episodes keep their first, last and peak
    rows, and most episodes of a long run are dropped (Episodes._prune) before anyone does."""

    __slots__ = ("lineno", "_make", "_line")

    def __init__(self, lineno: int, make: Callable[[], Line]):
        self.lineno = lineno
        self._make: Callable[[], Line] | None = make
        self._line: Line | None = None

    def get(self) -> Line:
        if self._line is None:
            assert self._make is not None
            self._line, self._make = self._make(), None
        return self._line

    def __reduce__(self) -> tuple[Any, tuple[int, Line]]:
        """A worker's result is pickled to go back to the parent: the row travels as its Line (the closure that
        would make it cannot be pickled)."""
        return (_made_ref, (self.lineno, self.get()))


def _made_ref(lineno: int, line: Line) -> RowRef:
    ref = RowRef(lineno, _no_maker)
    ref._line, ref._make = line, None
    return ref


def _no_maker() -> Line:
    raise AssertionError("a RowRef rebuilt from a pickle holds its Line")


def _real(row: Line | RowRef | None) -> Any:
    return row.get() if type(row) is RowRef else row


class Episode:
    """Consecutive rows of one engine that share a condition (pool pressure, a lone straggler)."""

    __slots__ = ("_first", "_last", "_peak", "rows", "peak_usage", "peak_queue", "peak_running", "t0", "t1",
                 "peak_row_queue")

    def __init__(self, first: Line | RowRef, last: Line | RowRef, rows: int = 1, t0: float = -1.0, t1: float = -1.0):
        self._first, self._last = first, last
        self._peak: Line | RowRef | None = None  # the first row of the highest usage (the most waiting among equals)
        self.rows = rows
        self.peak_usage = -1.0
        self.peak_queue = 0.0
        self.peak_running = 0.0
        self.t0, self.t1 = t0, t1
        self.peak_row_queue = 0.0  # the queue of the peak row

    @property
    def first(self) -> Line:
        return _real(self._first)

    @property
    def last(self) -> Line:
        return _real(self._last)

    @property
    def peak(self) -> Line | None:
        return _real(self._peak)

    @property
    def seconds(self) -> float:
        """From the first row's time to the last's (0 when the rows have no time stamps)."""
        return self.t1 - self.t0 if self.t0 >= 0 and self.t1 >= self.t0 else 0.0


class Episodes:
    """Episodes of one condition, built as rows arrive (no second pass, no line kept but their ends).

    Kept: the first episode, the last, the first of the highest peak (usage, then queue) and the KEEP_EPISODES
    longest (seconds, then rows; the earlier among equals). Each is a choice over all episodes that a part of the
    log can make alone and that the parts' choices give again, so the C prefilter can hand over many closed
    episodes at once (`batch`) and keep the same ones as adding them row by row."""

    def __init__(self) -> None:
        self.cur: Episode | None = None  # the episode rows may still extend
        self._first: Episode | None = None
        self._last: Episode | None = None
        self._top: Episode | None = None  # of the closed ones (the open one is the last)
        self._longest: list[tuple[float, int, int, int, Episode]] = []  # heap: (seconds, rows, -line, seq, episode)
        self._seq = 0
        # over every episode, kept or not
        self.count = 0
        self.total_rows = 0
        self.total_seconds = 0.0
        self.peak_usage = -1.0
        self.peak_queue = 0.0

    @property
    def items(self) -> list[Episode]:
        """The episodes kept, in log order."""
        kept = {id(e): e for e in (self._first, self._top, self._last) if e is not None}
        kept.update((id(x[4]), x[4]) for x in self._longest)
        return sorted(kept.values(), key=lambda e: e._first.lineno)

    @property
    def dropped(self) -> int:
        return self.count - len(self.items)

    def bar(self) -> tuple[float, int]:
        """(seconds, rows) a closed episode must beat to be one of the longest kept (-1, -1 while there is room)."""
        if len(self._longest) < KEEP_EPISODES:
            return -1.0, -1
        return self._longest[0][0], self._longest[0][1]

    def close(self) -> None:
        """The open episode, if any, is over: it takes its place among the kept ones."""
        cur, self.cur = self.cur, None
        if cur is not None:
            self._retire(cur)

    def _retire(self, e: Episode) -> None:
        top = self._top
        if top is None or (e.peak_usage, e.peak_queue) > (top.peak_usage, top.peak_queue):
            self._top = e
        self._seq += 1
        item = (e.seconds, e.rows, -e._first.lineno, self._seq, e)
        if len(self._longest) < KEEP_EPISODES:
            heapq.heappush(self._longest, item)
        elif item[:3] > self._longest[0][:3]:
            heapq.heapreplace(self._longest, item)

    def _new(self, e: Episode) -> None:
        self.close()
        self.count += 1
        self.total_seconds += e.seconds
        if self._first is None:
            self._first = e
        self._last = self.cur = e

    def row(self, on: bool, line: Line | RowRef, t: float, usage: float, queue: float, running: float,
            fresh: bool = False) -> None:
        """One stored row; `fresh`: it starts a new episode even if the previous row was in one."""
        if not on:
            self.close()
            return
        self.run(line, line, line, 1, t, t, usage, queue, queue, running, fresh)

    def run(self, first: Line | RowRef, last: Line | RowRef, peak: Line | RowRef, rows: int, t0: float, t1: float,
            usage: float, peak_queue: float, queue: float, running: float, fresh: bool = False) -> None:
        """`rows` consecutive rows in the condition, no two more than ROW_GAP lines apart (one row, or a run the C
        prefilter folded): the same as adding them one by one. `usage` is their highest, `peak` the first row of
        it (with the most waiting, `peak_queue`, among equals); `queue` and `running` their highest."""
        cur = self.cur
        if cur is not None and not fresh and first.lineno - cur._last.lineno <= ROW_GAP:
            before = cur.seconds
            cur._last, cur.t1 = last, t1
            cur.rows += rows
            self.total_seconds += cur.seconds - before
        else:
            cur = Episode(first, last, rows=rows, t0=t0, t1=t1)
            self._new(cur)
        self.total_rows += rows
        self.peak_usage = max(self.peak_usage, usage)
        self.peak_queue = max(self.peak_queue, queue)
        if usage > cur.peak_usage or (usage == cur.peak_usage and peak_queue > cur.peak_row_queue):
            cur._peak, cur.peak_row_queue = peak, peak_queue
        cur.peak_usage = max(cur.peak_usage, usage)
        cur.peak_queue = max(cur.peak_queue, queue)
        cur.peak_running = max(cur.peak_running, running)

    def batch(self, count: int, rows: int, seconds: float, usage: float, queue: float, sent: list[Episode]) -> None:
        """`count` closed episodes in a row, none of them continuing the open one (which they close): `rows`, `seconds`,
        `usage` and `queue` over all of them; `sent` (log order) holds their first, last and top episodes and every
        one of them that may be among the longest kept (all that beat `bar()`, or at least KEEP_EPISODES of them)."""
        self.close()
        if self._first is None:
            self._first = sent[0]
        seen: set[int] = set()
        for e in sent:  # in log order: the top among equal peaks is the earliest
            if id(e) not in seen:
                seen.add(id(e))
                self._retire(e)
        self._last = sent[-1]
        self.count += count
        self.total_rows += rows
        self.total_seconds += seconds
        self.peak_usage = max(self.peak_usage, usage)
        self.peak_queue = max(self.peak_queue, queue)

    def rows(self) -> int:
        return self.total_rows


class EngineStats:
    def __init__(self, origin: str):
        self.origin = origin
        self.engine = ""  # which program printed the rows: sglang, vllm
        self.lineno = array("l")
        self.decode = array("b")  # 1 decode (or a vLLM row), 0 prefill
        self.usage = array("f")
        self.running = array("f")
        self.queue = array("f")
        self.throughput = array("f")  # gen (decode) or input (prefill) tokens/s
        self.mamba_usage = array("f")
        self.time = array("d")  # the row's time stamp in seconds, -1 when it has none
        self.preempted = 0  # preemptions the rows themselves report (vLLM V1 `Preemptions: N` per interval)
        self.preempt_rows: tuple[Line | None, Line | None] = (None, None)  # first and last row reporting some
        # rows with usage >= 0.9 and a waiting queue, for evidence: (line, usage, queue); first few and the last
        self.pressure: list[tuple[Line, float, float]] = []
        self._last_pressure: tuple[Line | RowRef, float, float] | None = None
        self.pressure_episodes = Episodes()  # usage >= 0.9 while requests wait
        self.lone_episodes = Episodes()  # 1..LONE_RUNNING requests decoding, nothing waiting
        self.first_line: Line | None = None
        self.total = 0  # rows seen, including those not kept in the arrays
        # rows the C prefilter folded (not in the arrays): their highest usage and queue (as the arrays keep
        # them, float32), and the first and last of them as (line number, time)
        self.folded_usage = -1.0
        self.folded_queue = -1.0
        self.folded_ends: list[tuple[int, float]] = []

    def skip(self, rows: int) -> None:
        """Rows seen but not stored (below the pressure threshold, not sampled)."""
        self.total += rows

    def add(self, ev: Event) -> None:
        """One row: stored in the arrays and judged (pressure, lone decode)."""
        usage, queue, running, decode, t = self.store(ev)
        self._judge(ev.line, usage, queue, running, decode, t, bool(ev.fields.get("prompt throughput (token/s)")))

    def add_row(self, line: RowRef, vals: tuple[Any, ...], folded: bool) -> None:
        """A sampled SGLang row whose values the C prefilter read (_linescan.c, sample_vals: origin, usage, queue,
        running, time, decode, throughput, mamba usage), as `add` (`store` when `folded`) would take its event. A
        folded one may come before the records of the rows before it (sample_settle): their record, which folds it
        too, names the first line."""
        _, usage, queue, running, t, decode, throughput, mamba = vals
        self._put(line.lineno, decode, usage, running, queue, throughput, mamba, t)
        self.engine = self.engine or "sglang"
        if not folded:
            if self.first_line is None:
                self.first_line = line.get()
            self._judge(line, usage, queue, running, bool(decode), t, False)

    def _judge(self, line: Line | RowRef, usage: float, queue: float, running: float, decode: bool, t: float,
               fresh: bool) -> None:
        """A stored row judged: pressure, lone decode (`fresh`: it starts a lone episode anew)."""
        pressed = usage >= PRESSURE_USAGE and queue > 0
        if pressed:
            if len(self.pressure) < KEEP_PRESSURE_LINES:
                self.pressure.append((_real(line), usage, queue))
            self._last_pressure = (line, usage, queue)
        episodes = self.pressure_episodes
        if pressed or episodes.cur is not None:
            episodes.row(pressed, line, t, usage, queue, running)
        # A straggler decodes alone: no request waits and none is admitted (an SGLang prefill row, a vLLM interval
        # with prompt throughput, starts over: one request after another is not one request taking minutes).
        lone = decode and 0 < running <= LONE_RUNNING and queue == 0
        episodes = self.lone_episodes
        if lone or episodes.cur is not None:
            episodes.row(lone, line, t, usage, queue, running, fresh=fresh)

    def store(self, ev: Event) -> tuple[float, float, float, bool, float]:
        """One row into the arrays (a row the C prefilter folded and sampled goes only here); returns its usage,
        queue, running, whether it decodes, and its time."""
        f: dict[str, Any] = ev.fields
        usage = float(f.get("usage", -1.0))
        queue = float(f.get("#queue-req", 0))
        running = float(f.get("#running-req", 0))
        decode = f["phase"] != "prefill"
        t = f.get("t")
        if t is None:
            t = row_time(ev.line.text)
        self._put(ev.line.lineno, decode, usage, running, queue,
                  float(f.get("gen throughput (token/s)", f.get("input throughput (token/s)", -1.0))),
                  float(f.get("mamba usage", -1.0)), t)
        preempted = f.get("preempted")
        if preempted:
            self.preempted += int(preempted)
            self.preempt_rows = (self.preempt_rows[0] or ev.line, ev.line)
        if not self.engine:
            self.engine = f.get("engine", "sglang")
        if self.first_line is None:
            self.first_line = ev.line
        return usage, queue, running, decode, t

    def _put(self, lineno: int, decode: bool, usage: float, running: float, queue: float, throughput: float,
             mamba: float, t: float) -> None:
        """One row into the arrays."""
        self.total += 1
        self.lineno.append(lineno)
        self.decode.append(1 if decode else 0)
        self.usage.append(usage)
        self.running.append(running)
        self.queue.append(queue)
        self.throughput.append(throughput)
        self.mamba_usage.append(mamba)
        self.time.append(t)

    @property
    def last_pressure(self) -> tuple[Line, float, float] | None:
        """The last row with usage >= 0.9 and a waiting queue: (line, usage, queue)."""
        last = self._last_pressure
        return None if last is None else (_real(last[0]), last[1], last[2])

    def fold(self, rec: tuple[Any, ...], base: int, line: Callable[[tuple[Any, ...]], RowRef]) -> None:
        """A record of the C prefilter (_linescan.c, Fold): rows it folded, as if each had been added in turn
        (EngineStats.add), but for the arrays. Its rows are (line index in the chunk, time, usage, queue, bytes);
        `base`: lines before the chunk; `line(row)` makes the RowRef of a row (one per row)."""
        (fresh, closed, close_lone, rows, first, last, peak, usage, queue, running, evidence,
         n_all, all_first, all_last, all_usage, all_queue) = rec
        self._folded(n_all, all_first, all_last, all_usage, all_queue, base, line)
        if close_lone:
            self.lone_episodes.close()  # a folded row never decodes alone
        episodes = self.pressure_episodes
        if fresh:
            episodes.close()
        if rows:
            for row in evidence:
                if len(self.pressure) >= KEEP_PRESSURE_LINES:
                    break
                self.pressure.append((line(row).get(), row[2], row[3]))
            self._last_pressure = (line(last), last[2], last[3])
            episodes.run(line(first), line(last), line(peak), rows, first[1], last[1], usage, peak[3], queue, running)
        if closed:
            episodes.close()

    def _folded(self, n_all: int, all_first: Any, all_last: Any, all_usage: float, all_queue: float, base: int,
                line: Callable[[tuple[Any, ...]], RowRef]) -> None:
        """What `n_all` folded rows (pressed or not) add beyond the episodes: first line, ends, peaks."""
        if n_all:
            self.engine = self.engine or "sglang"
            if self.first_line is None:
                self.first_line = line(all_first).get()
            self.folded_ends = [self.folded_ends[0] if self.folded_ends else (base + all_first[0] + 1, all_first[1]),
                                (base + all_last[0] + 1, all_last[1])]
            self.folded_usage = max(self.folded_usage, array("f", [all_usage])[0])
            self.folded_queue = max(self.folded_queue, array("f", [all_queue])[0])

    def fold_batch(self, rec: tuple[Any, ...], base: int, line: Callable[[tuple[Any, ...]], RowRef]) -> None:
        """A batch of the C prefilter (_linescan.c, Batch): closed pressure episodes in a row, each starting anew, as
        if their rows had been added in turn (EngineStats.add), but for the arrays. An episode is (first, last, peak,
        rows, highest usage, queue and running); rows as in `fold`."""
        count, rows, seconds, usage, queue, close_lone, eps, evidence, n_all, all_first, all_last, all_u, all_q = rec
        self._folded(n_all, all_first, all_last, all_u, all_q, base, line)
        if close_lone:
            self.lone_episodes.close()
        for row in evidence:
            if len(self.pressure) >= KEEP_PRESSURE_LINES:
                break
            self.pressure.append((line(row).get(), row[2], row[3]))
        sent = []
        for first, last, peak, n, peak_usage, peak_queue, running in eps:
            e = Episode(line(first), line(last), rows=n, t0=first[1], t1=last[1])
            e._peak, e.peak_row_queue = line(peak), peak[3]
            e.peak_usage, e.peak_queue, e.peak_running = peak_usage, peak_queue, running
            sent.append(e)
        last = eps[-1][1]
        self._last_pressure = (line(last), last[2], last[3])
        self.pressure_episodes.batch(count, rows, seconds, usage, queue, sent)

    def __len__(self) -> int:
        return len(self.lineno)

    def _ends(self) -> list[tuple[int, float]]:
        """(line number, time) of the first and last rows kept, stored or folded."""
        ends = list(self.folded_ends)
        if len(self.lineno):
            ends += [(self.lineno[0], self.time[0]), (self.lineno[-1], self.time[-1])]
        return sorted(ends)

    def last_lineno(self) -> int:
        """The line of the last row kept (0 when none)."""
        ends = self._ends()
        return ends[-1][0] if ends else 0

    def peak_usage(self) -> float | None:
        """The highest usage of the rows kept (stored or folded), None without rows."""
        if not len(self.usage) and not self.folded_ends:
            return None
        return max(max(self.usage, default=-1.0), self.folded_usage)

    def peak_queue(self) -> float | None:
        if not len(self.queue) and not self.folded_ends:
            return None
        return max(max(self.queue, default=-1.0), self.folded_queue)

    def seconds(self) -> float:
        """Time the kept rows span (0 without time stamps)."""
        ends = self._ends()
        if not ends:
            return 0.0
        t0, t1 = ends[0][1], ends[-1][1]
        return t1 - t0 if 0 <= t0 <= t1 else 0.0
