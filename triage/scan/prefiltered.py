"""The fast path of `Scanner.scan` for files on disk: a native literal prefilter over raw bytes.

Python never sees most lines of a large log. The C helper `_linescan` (built from _linescan.c when a
compiler is available) reads each 4 MiB chunk of bytes once and returns only:
- candidate lines: those holding any anchor (rule anchors, parser anchors, error words), with the
  anchors found, so `Scanner.line` skips its loop over every anchor;
- stats lines that must be parsed: SGLang `Decode batch`/`Prefill batch` rows whose pool usage is
  not plainly below 0.9 and that the C side cannot fold (odd values, a lone decode), rows that look odd;
- records of the plain high-usage rows it folded (K_FOLD): runs of pressure rows and the rows that end
  them, in line order with the other lines, which EngineStats.fold applies as if each row had been
  added (so pressure rows, episodes and saturation counts stay exact, and a saturated pool costs a
  record per episode, not a Python call per row). Each record names its origin (Ray pid + DP tag: the engine
  timeline, RowOwners.key_of): the rows of several engines in one file (a Ray driver log, DP-attention groups)
  fold apart, each into its own episodes;
- batches of closed pressure episodes (K_BATCH: totals, evidence, and the episodes Python may keep, those
  that beat the longest its engine already has, Bars), where a pool flips in and out of pressure row after row;
- counts of the candidate lines of one family (K_FAMILY): in one process, the C side is told before each chunk
  which line the parser kept last (origins.Families.native) and counts the lines of its family, so a storm of
  `Retract requests` lines costs a count, not a Python call per line;
- a sample of the other stats rows for the timelines: all of them in files up to SAMPLE_ALL_BELOW,
  otherwise about TIMELINE_ROWS rows per file, evenly spaced, and the count of those not sampled;
- error-like lines no rule can claim, counted per key (K_ERRS: scan/errfold.py): the reading stage registers a key
  once it has judged a line of it, and the C side counts the later lines of that key, handed over as one record
  per key at the file's end (a chunk of no bytes before the line count);
- rows of numeric line shapes as columns (K_COLS): once Python has parsed the first line of a shape that is pure data
  (a metric dict, a Timer line: scan/columns.py), the C side appends each later line of it to columns (line index,
  bounds, numbers), written out before the next line it returns, so a trainer log's metric records reach the metric
  and timer stores in bulk (series_store.MetricStore.add_rows), not as a Python call per line. Files read from disk
  only (a row's text is read back from the file when a finding cites it).

Colour codes and NUL bytes are removed from a chunk's bytes (as read.normalise would) and the chunk is
scanned again. When one file holds the stats rows of several engines (a Ray driver log with actor
prefixes, DP-attention groups), the C side counts the rows it skips per origin, so each engine's row
count stays exact (RowOwners); a chunk of a file read as one engine's that turns out to hold a second one is scanned
again that way. A chunk the prefilter cannot vouch for (`\\r` redraws, more than 64 origins) is
decoded and scanned by the pure-Python path, line for line, so behaviour never depends on which path ran.
Without the C helper, `native.available()` is False and scanner.py uses the Python path only. This module drives
the C helper (its interface: native.py) for a scanner it knows only as a filescan.LineScanner, into a FileScan.

Two stages, which one process runs one after the other (scan_file) or two processes side by side
(parallel.Staged, for one big file): read_chunks reads and prefilters, yielding a Chunk per chunk (its
candidate lines and sampled rows, the rows it counted per timeline); parse_chunks turns those lines into
the file's result. Both stages see the same chunks, so the result is the same either way.
"""

from __future__ import annotations

import heapq
import mmap
import re
import threading
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from triage.input.decompress import safe_open
from triage.input.read import (
    ANSI,
    CHUNK,
    MAX_LINE,
    SYSLOG_ANSI,
    SYSLOG_ESC,
    TRUNCATED,
    iter_chunks,
    line_text,
    normalise,
)
from triage.model import Line
from triage.parsers import sglang
from triage.parsers.engine_stats import KEEP_EPISODES, KEEP_PRESSURE_LINES, ROW_GAP, RowRef, engine, engine_key
from triage.parsers.series_store import RowLine, RowPart, Rows
from triage.scan.columns import Shapes
from triage.scan.errfold import ERRFOLD_FROM, KNOWN, ErrFold, enabled, lines_of
from triage.scan.native import (
    F_CR,
    F_ESC,
    F_MANY,
    F_NUL,
    F_RAY,
    K_BATCH,
    K_CAND,
    K_COLS,
    K_ERRS,
    K_FAMILY,
    K_FOLD,
    K_KNOWN,
    K_SAMPLED,
    K_STATS,
    ORIGIN_SAMPLE,
    PAIR_SAMPLE,
    Needles,
    _linescan,
    columns,
    several_origins,
)
from triage.scan.origins import RAY_PREFIX, Runs, split_ray

if TYPE_CHECKING:
    from triage.model import LogFile
    from triage.scan.filescan import FileResult, FileScan, LineScanner
    from triage.scan.progress import Progress

ANSI_BYTES = re.compile(ANSI.pattern.encode() + b"|" + SYSLOG_ANSI.pattern.encode())  # the syslog-escaped form too
SYSLOG_ESC_BYTES = SYSLOG_ESC.encode()
SAMPLE_ALL_BELOW = 1 << 20  # bytes: smaller files keep every stats row
FIRST_PART = 64 << 10  # bytes of the first chunk scanned alone (one process): the parser has kept the first line of
# a storm before the C prefilter reads on, so it counts the rest of the chunk (Families.native) instead of handing
# over every line of it
COLUMNS_FROM = 256 << 10  # bytes: a smaller file learns no shapes of its own (a shape is learnt from a line Python
# parsed, so in a file this small most lines would come before their shape is known): it scans with the shapes every
# small file of the process shares (shapes_for), learnt from the files before it
AHEAD_FROM = 64 << 20  # bytes: a file this big is read a chunk ahead by a thread once it is read rows_chunk at a time
# (_Ahead): a second buffer of rows_chunk bytes for a read that overlaps the scan of the chunk before
ROWS_CHUNK = 8 << 20  # bytes read at a time from a file once line shapes are registered (its lines come as columns):
# its rows reach the stores in write-outs of a chunk at most, each costing Python a fixed few milliseconds (a 750 MB
# trainer log: ~180 write-outs -> ~90; 16 MiB halved that again but added ~30 MB of peak PSS at 1 GiB)
# What read_chunks reads at a time in this process: read_size (None: CHUNK), then rows_chunk once shapes are
# registered. A forked worker reads less at a time (parallel.WORKER_READ): its read buffer is its own memory beside
# the parent's
read_size: int | None = None
rows_chunk = ROWS_CHUNK
RESCAN_PER_MIB = 500  # lines a chunk returned per MiB of it above which it is scanned again once new error keys are
# registered (a scan costs about a millisecond a MiB, a line reaching Python some 20 us: the first part of a file,
# FIRST_PART, is scanned again for a few dozen lines)
TIMELINE_ROWS = 1000  # stats rows sampled per larger file (plus every row with usage >= 0.9): one point each on
# a chart (they draw up to figures.MAX_POINTS); a sample twice as large would only be folded two rows a point


class _Prepend:
    """A stream that first returns `head` bytes: hands a chunk back to the line-for-line reader."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self.head, self.rest = head, rest

    def read(self, n: int = -1) -> bytes:
        if self.head:
            out, self.head = self.head, b""
            return out
        return self.rest.read(n)


class RowOwners:
    """Which engine timelines the stats rows the C side skips (counts, does not return) and folds belong to.

    A file of one engine (the usual case) needs nothing more: they belong to the timeline its sampled rows
    go to. When a file holds several engines, the C side counts them per origin (Ray pid + DP tag),
    which costs a look at each row's line start; that mode starts when the head shows several origins, when a
    chunk's sampled rows do (that chunk's count is split in proportion to its sampled rows), or when the C side
    meets a second origin among the rows it folds (it says F_MANY, and the chunk is scanned again per origin).
    Fold records name their origin (`key_of`)."""

    def __init__(self, file: str, head: bytes | memoryview):
        self.file = file
        self.per_origin = several_origins(head[:ORIGIN_SAMPLE])
        self.key = ""  # the timeline of the rows so far, while there is one
        self.keys: dict[bytes, str] = {}  # origin -> timeline, of the origins seen

    def key_of(self, origin: bytes) -> str:
        """The engine timeline of an origin the C side names."""
        key = self.keys.get(origin)
        if key is None:
            key = self.keys[origin] = origin_key(self.file, origin)
        return key

    def skips(self, quiet: int, per_origin: dict[bytes, int] | None, sampled: Counter[str]) -> dict[str, int]:
        """The rows of a chunk the C side counted but did not return, per engine timeline."""
        if not quiet and per_origin is None and not sampled:  # no stats rows (most chunks of most small files)
            self.key = self.key or self.file
            return {}
        counts: Counter[str] = Counter()
        if per_origin is not None:
            for origin, n in per_origin.items():
                counts[self.key_of(origin)] += n
        elif len(sampled) > 1 or (sampled and self.key and self.key not in sampled):
            self.per_origin = True
            unsampled = quiet - sum(sampled.values())
            for key, n in sampled.items():
                counts[key] = n + unsampled * n // sum(sampled.values())
        else:
            self.key = next(iter(sampled), "") or self.key or self.file
            counts[self.key] = quiet
        return {key: n - sampled[key] for key, n in counts.items() if n > sampled[key]}


class Bars:
    """What a batched pressure episode must beat to be handed over as one of the longest (_linescan.c, Batch): per
    engine timeline, the KEEP_EPISODES longest (seconds, rows) of the episodes handed over so far. Python keeps the
    longest of those and more (Episodes), so its own bar is never lower: nothing it would keep is held back."""

    def __init__(self) -> None:
        self.heaps: dict[str, list[tuple[float, int]]] = {}

    def bar(self, key: str) -> tuple[float, int]:
        heap = self.heaps.get(key, [])
        return heap[0] if len(heap) >= KEEP_EPISODES else (-1.0, -1)

    def of_origins(self, owners: RowOwners) -> dict[bytes, tuple[float, int]]:
        """The bars of the origins seen (by the origin the C side names), those that have one."""
        return {origin: self.heaps[key][0] for origin, key in owners.keys.items()
                if len(self.heaps.get(key, ())) >= KEEP_EPISODES}

    def saw(self, key: str, episodes: Iterable[tuple[Any, ...]]) -> None:
        heap = self.heaps.setdefault(key, [])
        for first, last, _, rows, *_ in episodes:
            t0, t1 = first[1], last[1]
            item = (t1 - t0 if t0 >= 0 and t1 >= t0 else 0.0, rows)
            if len(heap) < KEEP_EPISODES:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)


class Chunk(NamedTuple):
    """What reading a chunk (stage 1: the C prefilter) hands to parsing it (stage 2: Python)."""

    base: int  # lines before it
    data: Any  # the chunk's bytes (a view of the read buffer, valid until the next chunk is read)
    hits: list[tuple[int, int, int, int, Any]]  # (kind, line index, start, end in data, needle ids | row timeline)
    python: bool  # the whole chunk goes through the line-for-line path (`\r` redraws, too many engines)
    skips: dict[str, int]  # rows counted but not returned, per engine timeline
    shapes: tuple[Any, ...] = ()  # line shapes registered after this chunk (columns.Shape), in order

    def packed(self) -> Chunk:
        """The chunk with only the bytes of its lines, in bytes of its own (to send to another process)."""
        if self.python:
            return self._replace(data=bytes(self.data))
        parts, hits, at = [], [], 0
        for kind, rel, start, end, tag in self.hits:
            parts.append(self.data[start:end])
            hits.append((kind, rel, at, at + end - start, tag))
            at += end - start
        return self._replace(data=b"".join(parts), hits=hits)


class Rest(NamedTuple):
    """From `offset` on, the file goes through the line-for-line reader (a line longer than a chunk)."""

    base: int
    offset: int
    head: bytes  # the bytes from offset that stage 1 already read


def candidates_per_mib(needles: Needles, path: str) -> float:
    """Candidate lines per MiB in the file's head (its first PAIR_SAMPLE bytes); 0 when it cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(PAIR_SAMPLE)
    except OSError:
        return 0.0
    head = head[:head.rfind(b"\n") + 1]
    if not head:
        return 0.0
    hits = _linescan.scan(needles.matcher(head), head, 0, 0, False, ROW_GAP, KEEP_PRESSURE_LINES)[4]  # rows folded
    return sum(1 for h in hits if h[0] == K_CAND) * (1 << 20) / len(head)


def scan_file(scanner: LineScanner, fs: FileScan, stream: BinaryIO, progress: Progress | None = None) -> int:
    """Scan one file's bytes into fs (its result, pending claims, context): both stages here. `progress` is told
    the bytes read. Returns the number of lines read."""
    assert scanner.needles is not None
    shapes = shapes_for(scanner, fs.lf)
    if shapes is not None and shapes.shared:
        fs.shapes = list(shapes.shapes)  # armed before this file's first chunk: the C side's indices from the start
    chunks = read_chunks(scanner.needles, fs.lf, stream, progress, lambda base: fs.family.native(fs.ctx, base),
                         shapes, rows_chunk)
    return parse_chunks(scanner, fs, chunks, lambda rest: _Prepend(rest.head, stream))


def shapes_for(scanner: Any, lf: LogFile) -> Shapes | None:
    """The shape registry of a file read from disk: a file of its own for a file of COLUMNS_FROM bytes or more (its
    rows' text is read back from it); for a smaller one, the registry every small file this process scans shares
    (Scanner.small_shapes), armed before the file's first byte with the shapes learnt in the files before it. A run
    of many small per-rank trainer logs repeats the same few shapes in every file, and a file's own would learn them
    too late: most of its lines come in its first chunk, before any shape could be known. Their rows' text is kept
    from the chunk (_rows): a small file is read whole in one chunk or two. None for stdin and compressed files."""
    if lf.path == "-" or lf.compression or not columns():
        return None
    if lf.size >= COLUMNS_FROM:
        return Shapes(scanner)
    if scanner.small_shapes is None:
        scanner.small_shapes = Shapes(scanner, shared=True)
    return scanner.small_shapes


class _Ahead:
    """The next read of a big file's stream, done by a thread while this one scans and parses the chunk before (the
    read's copy out of the page cache is ~a fifth of what a 750 MB trainer log costs this process: the C scan holds
    the GIL, the read does not). The reads are the ones read_chunks would make, in the same order, into the same
    places (a second buffer, the carried-over line at its front): the chunks are the same bytes. The stream is the
    thread's alone while a read is out; a read's error is raised where read_chunks would have read."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.asked = threading.Lock()  # held while no read is asked for
        self.asked.acquire()
        self.begun = threading.Lock()  # released by the thread as it begins a read
        self.begun.acquire()
        self.done = threading.Lock()  # released by the thread once the read is over
        self.done.acquire()
        self.view: Any = None
        self.got: int | BaseException = 0
        self.out = False  # a read is asked for and not taken yet
        self.thread: threading.Thread | None = None  # started by the first read asked for

    def _run(self) -> None:
        while True:
            self.asked.acquire()
            view = self.view
            self.begun.release()
            if view is None:
                return
            try:
                self.got = self.stream.readinto(view) or 0  # type: ignore[attr-defined]
            except BaseException as e:  # noqa: BLE001 - raised by take(), in the reading thread
                self.got = e
            self.done.release()

    def ask(self, view: Any) -> None:
        """Start reading into view (a memoryview, released once taken); returns once the thread has begun (it holds
        the GIL only until its read call)."""
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="triage-read-ahead", daemon=True)
            self.thread.start()
        self.view = view
        self.out = True
        self.asked.release()
        self.begun.acquire()

    def take(self) -> int:
        """The bytes the read asked for put into its view (or its error, raised)."""
        self.done.acquire()
        self.out = False
        got, self.got = self.got, 0
        self.view.release()
        self.view = None
        if isinstance(got, BaseException):
            raise got
        return got

    def close(self) -> None:
        """Wait for a read still out (the stream and the buffer outlive it), then end the thread."""
        if self.thread is None:
            return
        if self.out:
            self.done.acquire()
            self.out = False
            self.view.release()
        self.view = None
        self.asked.release()
        self.begun.acquire()
        self.thread.join()


def read_chunks(needles: Needles, lf: LogFile, stream: BinaryIO, progress: Progress | None = None,
                family: Callable[[int], Any] | None = None, shapes: Shapes | None = None,
                rows_chunk: int = ROWS_CHUNK) -> Iterator[Chunk | Rest | int]:
    """Stage 1: each chunk's candidate lines, sampled rows, fold records and skipped-row counts; then a Rest, or
    the line count of the file. Python never sees the other lines. `family(lines before the chunk)`: what the C side
    may count into the line Python kept last (origins.Families.native), asked before each chunk once stage 2 has
    parsed the one before (one process only). `shapes`: the file's line shapes, learnt from each chunk's candidate
    lines; their later lines come as columns (K_COLS), read rows_chunk bytes at a time once shapes are registered.
    A big file of this process's own (not a worker's: read_size) is then read a chunk ahead (_Ahead)."""
    if read_size is None and lf.size >= AHEAD_FROM and not lf.compression and lf.path != "-":
        return _read_ahead(needles, lf, stream, progress, family, shapes, rows_chunk)
    return _read_chunks(needles, lf, stream, progress, family, shapes, rows_chunk, None)


def _read_ahead(needles: Needles, lf: LogFile, stream: BinaryIO, progress: Progress | None,
                family: Callable[[int], Any] | None, shapes: Shapes | None, rows_chunk: int) -> Iterator[Chunk | Rest | int]:
    """read_chunks with reads ahead; the thread ends with the file (or when the chunks are no longer wanted)."""
    pre = _Ahead(stream)
    try:
        yield from _read_chunks(needles, lf, stream, progress, family, shapes, rows_chunk, pre)
    finally:
        pre.close()


def _read_chunks(needles: Needles, lf: LogFile, stream: BinaryIO, progress: Progress | None,
                 family: Callable[[int], Any] | None, shapes: Shapes | None, rows_chunk: int,
                 pre: _Ahead | None) -> Iterator[Chunk | Rest | int]:
    """read_chunks; `pre`: reads ahead once reads are rows_chunk big (> CHUNK: not a reading stage that reads CHUNK
    bytes throughout, parallel._read_stage)."""
    step = 0 if lf.size <= SAMPLE_ALL_BELOW else lf.size // TIMELINE_ROWS
    # a file of known size smaller than a chunk reads into a buffer its size (zeroing 4 MiB for each of 200 k small
    # files is most of their cost); should it grow meanwhile, a line the buffer cannot hold goes to the line reader
    size = read_size or CHUNK
    known = not lf.compression and lf.path != "-" and 0 < lf.size < size
    buf = _buffer((lf.size + 1 if known else size) + MAX_LINE + 1)
    mv = memoryview(buf)
    have = 0  # bytes carried over from the previous read (a partial last line)
    offset = 0  # file offset of buf[0]
    next_sample = 0  # file offset from which the next stats row is sampled
    lines = 0
    matcher = None
    syslog_esc = False
    owners: RowOwners | None = None
    bars = Bars()
    errs = (ErrFold(needles.errs, needles.anchor_of) if needles.errs is not None and lf.size >= ERRFOLD_FROM and enabled()
            else None)
    spare: Any = None  # the buffer reads ahead go into, swapped with buf (pre), and its view
    spare_mv: Any = None
    while True:
        if pre is not None and pre.out:  # read ahead into this buffer (swapped in after the chunk before)
            n = pre.take()
        else:
            n = stream.readinto(mv[have:have + size]) or 0  # type: ignore[attr-defined]
        if progress is not None and not lf.compression:
            progress.add(n)
        end = have + n
        final = n == 0
        cut = end if final else buf.rfind(b"\n", 0, end) + 1
        if final and not end:  # the file ended with its last newline: nothing left (not a line without one)
            if errs is not None:
                yield _counted(errs, lines)
            yield lines
            return
        if cut == 0:  # no newline in a whole chunk: let the line-for-line reader bound this line
            if errs is not None:
                yield _counted(errs, lines)
            yield Rest(lines, offset, bytes(mv[:end]))
            return
        if matcher is None:
            head = mv[:min(cut, PAIR_SAMPLE)]  # a view: a 1 MiB copy was part of a worker's peak, with the buffer
            matcher = needles.matcher(head)
            # colour codes as a syslog daemon writes them out (`#033[36m`) are the writer's habit: a file whose head
            # holds none is never searched for them again (a chunk search cost as much as the whole scan of a
            # healthy run); its candidate lines are still cleaned one by one (line_text)
            syslog_esc = buf.find(SYSLOG_ESC_BYTES, 0, len(head)) >= 0
            owners = RowOwners(lf.rel, head)
            head.release()
            first = buf.rfind(b"\n", 0, FIRST_PART) + 1
            if (family is not None or shapes is not None or errs is not None) and 0 < first < cut:  # the head first: a storm in it is
                cut = first  # counted from its end on, the shapes of its lines registered
        assert owners is not None
        cols = shapes.armed if shapes is not None else None
        ahead = 0  # lines after the chunk that read nothing (errfold.ErrFold.ahead): once a key is registered (the C side
        # counts lines of no other; the first part's end stays where it is) and while no shape is (nor any with them)
        if errs is not None and errs.shapes and cols is None:
            cut, ahead = (cut, errs.rules.reach) if final else errs.ahead(matcher, buf, cut, line_text)
        if pre is not None and not final and cols is not None and size == rows_chunk > CHUNK:  # the next read, now
            if spare is None:
                spare = _buffer(size + MAX_LINE + 1)
                spare_mv = memoryview(spare)
            spare_mv[:end - cut] = mv[cut:end]  # the partial last line first, as below
            pre.ask(spare_mv[end - cut:end - cut + size])
        raw = mv[:cut]
        chunk: Any = raw
        at = max(0, next_sample - offset)
        fam = family(lines) if family is not None else None
        args = [matcher, chunk, at, step, owners.per_origin, ROW_GAP, KEEP_PRESSURE_LINES, KEEP_EPISODES, -1.0, -1, fam,
                bars.of_origins(owners), cols, errs.arg(lines, ahead) if errs is not None else None]
        nl, flags, quiet, ns, hits, per_origin = _linescan.scan(*args)
        if (flags & (F_ESC | F_NUL) or syslog_esc and buf.find(SYSLOG_ESC_BYTES, 0, cut) >= 0) and not flags & F_CR:  # colour codes
            # (Ray colours its prefixes; a syslog daemon writes them out as text), NULs
            chunk = args[1] = memoryview(ANSI_BYTES.sub(b"", chunk).replace(b"\x00", b""))  # what normalise removes
            args[12] = None  # rows are read back from the file by their offsets: not in a cleaned chunk
            nl, flags, quiet, ns, hits, per_origin = _linescan.scan(*args)
            flags &= ~(F_ESC | F_NUL)  # an ESC left over is text as the line-for-line reader sees it too
        if flags & F_MANY and not flags & F_CR and not owners.per_origin:  # rows of a second engine: per origin now
            owners.per_origin = args[4] = True
            nl, flags, quiet, ns, hits, per_origin = _linescan.scan(*args)
            flags &= ~(F_ESC | F_NUL)
        if flags & ~F_RAY:  # `\r` redraws, or more engines than the C side keeps apart
            if errs is not None:
                errs.mark(lines + nl)  # its lines reach Python, counted nothing (may hold a shutdown): no more counting
            yield Chunk(lines, chunk, [], True, {})
        else:
            # new keys: the lines the chunk returned for them (or for their neighbours) are counted instead; a
            # line of a key judged now to be claimable makes its neighbours Python's (errfold.ErrFold.settle)
            while errs is not None and errs.settle(chunk, errs.learn(chunk, hits, line_text) > 0
                                                and len(hits) > RESCAN_PER_MIB * len(chunk) >> 20):
                nl, flags, quiet, ns, hits, per_origin = _linescan.scan(*args)
                flags &= ~(F_ESC | F_NUL)
            if errs is not None:
                errs.commit()
                errs.known(chunk, hits)
            next_sample = offset + cut + ns - len(chunk)  # ns counts in the (maybe cleaned) chunk
            for i, (kind, rel, start, stop, ids) in enumerate(hits):  # a row's timeline, for RowOwners and the fold
                if kind in (K_FOLD, K_BATCH):
                    key = owners.key_of(ids[0])
                    hits[i] = (kind, rel, start, stop, (key, ids[1]))
                    if kind == K_BATCH:
                        bars.saw(key, ids[1][6])
                elif kind == K_COLS:
                    hits[i] = (kind, rel, start, stop, (offset, ids))  # where the chunk starts in the file
                elif kind not in (K_CAND, K_FAMILY, K_KNOWN):  # a sampled row (K_KNOWN: errfold.ErrFold.known)
                    # its timeline, and the values the C side read of it (None: Python parses it)
                    key = row_key(lf.rel, chunk[start:stop]) if ids is None else owners.key_of(ids[0])
                    hits[i] = (kind, rel, start, stop, (key, ids))
            sampled = Counter(tag[0] for kind, _, _, _, tag in hits if kind in (K_STATS, K_SAMPLED))
            new = tuple(shapes.learn(chunk, hits)) if shapes is not None else ()
            yield Chunk(lines, chunk, hits, False, owners.skips(quiet, per_origin, sampled), new)
        lines += nl
        if final:
            if errs is not None:
                yield _counted(errs, lines)
            yield lines + (1 if cut and buf[cut - 1:cut] != b"\n" else 0)
            return
        chunk.release()
        raw.release()
        rest = end - cut
        # the partial last line moves to the front through memoryviews (memmove: no temporary copy; after the head
        # alone, FIRST_PART, it is nearly the whole chunk, and a 4 MiB temporary left its pages to the heap)
        if pre is not None and pre.out:  # to the spare buffer's, which the next read is going into: swapped
            buf, spare = spare, buf
            mv, spare_mv = spare_mv, mv
        elif size < rows_chunk and not known and shapes is not None and shapes.armed is not None:  # rows: bigger reads
            size, old = rows_chunk, mv
            buf = _buffer(size + MAX_LINE + 1)
            mv = memoryview(buf)
            mv[:rest] = old[cut:end]
            old.release()
        else:
            mv[:rest] = mv[cut:end]
        have = rest
        offset += cut


def _buffer(n: int) -> Any:
    """A read buffer of n bytes. One of a chunk or more is anonymous mapped memory: its pages cost only once read
    into, and they go back to the system as soon as the file is done (a freed bytearray that size raised malloc's
    threshold, so the next file's came from the heap and stayed there: ~4 MiB more RSS in a process that reads
    several big files, a worker's engine logs)."""
    if n >= (read_size or CHUNK) and hasattr(mmap, "MAP_PRIVATE"):
        return mmap.mmap(-1, n, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # private: a worker forked meanwhile has its own
    return bytearray(n)


def _counted(errs: ErrFold, lines: int) -> Chunk:
    """The file's error-like lines the C side counted (K_ERRS), as a chunk of no bytes."""
    return Chunk(lines, b"", [(K_ERRS, 0, 0, 0, errs.records())], False, {})


def parse_chunks(scanner: LineScanner, fs: FileScan, chunks: Iterable[Chunk | Rest | int],
                 reopen: Callable[[Rest], Any]) -> int:
    """Stage 2: the lines stage 1 returned, into res. `reopen(rest)` gives the stream of the file from
    rest.offset on (its head first). Returns the number of lines read."""
    for item in chunks:
        if isinstance(item, int):
            return item
        if isinstance(item, Rest):
            return item.base + _python_rest(scanner, fs, reopen(item), item.base)
        if item.python:
            _python_chunk(scanner, fs, str(item.data, "utf-8", "replace"), item.base)
        else:
            fs.shapes.extend(item.shapes)
            _fast_hits(scanner, fs, item.data, item.hits, item.base)
            for key, n in item.skips.items():
                engine(fs.res, key).skip(n)
    raise EOFError("the reading stage ended without the file's line count")


def row_key(file: str, text: Any) -> str:
    """The engine timeline of a sampled stats row (its bytes)."""
    line = str(text, "utf-8", "replace")
    _, actor, pid, _ = split_ray(line)
    return engine_key(file, pid, RAY_PREFIX.sub("", line, count=1) if actor else line)


def _fast_hits(scanner: LineScanner, fs: FileScan, data: Any, hits: list[Any], base: int) -> None:
    """Feed the prefilter's lines to the scanner."""
    assert scanner.needles is not None
    anchor_of = scanner.needles.anchor_of
    lf, res, ctx = fs.lf, fs.res, fs.ctx
    plans: dict[tuple[int, ...], Any] = {}  # needle ids -> the scanner's plan for them
    runs = Runs()
    for kind, rel, start, end, tag in hits:
        text = line_text(data[start:end]) if kind != K_COLS else ""
        lineno = base + rel + 1
        if kind == 0 or kind == K_KNOWN:
            if len(text) > MAX_LINE:
                text = text[:MAX_LINE] + TRUNCATED
            if runs.folds(lineno, text):
                continue
            plan: Any
            known = None
            if kind == K_KNOWN:
                plan = KNOWN
                tag, known = tag  # (needle ids, its key's shape: errfold.ErrFold.known)
            else:
                plan = plans.get(tag)
                if plan is None:
                    plan = plans[tag] = scanner.plan(frozenset(anchor_of[i] for i in tag))
            scanner.line(fs, lineno, text, plan, known)
            runs.after(ctx, lineno, text)
            fs.near.runs_after(runs, lineno, text)  # a held claim line (scan/nearfold.py)
            if fs.family.line is not None and fs.family.line.lineno == lineno:
                fs.family.ids = tag  # the C side may count the lines of its family (Families.native)
        elif kind == K_FAMILY:
            fs.family.counted(tag[0], tag[1], lineno)
        elif kind == K_ERRS:
            newest = fs.errorish.natives(lines_of(tag, lambda no, text: _row_line(lf, no, text)))
            if newest is not None and (not ctx.lines or ctx.lines[-1].lineno < newest.lineno):
                fs.near.end(fs)  # the held claim lines come before it (scan/nearfold.py)
                ctx.add(newest)  # a traceback the log ends in ends before it (signals.chains)
        elif kind == K_COLS:
            if _rows(fs, tag[0], tag[1], base, data):  # context rows (Timer lines) came between the lines around them
                fs.family.kept(None, None, None)  # type: ignore[arg-type]
                runs.line = None
        elif kind in (K_FOLD, K_BATCH):
            key, rec = tag
            made: dict[int, RowRef] = {}  # one per row (evidence compares lines by identity)

            def line(row: tuple[Any, ...], made: dict[int, RowRef] = made) -> RowRef:
                got = made.get(row[0])
                if got is None:
                    lineno, text = base + row[0] + 1, row[4]
                    got = made[row[0]] = RowRef(lineno, lambda: _row_line(lf, lineno, text.decode("ascii")))
                return got

            if kind == K_FOLD:
                engine(res, key).fold(rec, base, line)
            else:
                engine(res, key).fold_batch(rec, base, line)
        else:
            key, vals = tag
            if vals is None:
                _stats_row(lf, lineno, text, key, res, kind == K_SAMPLED)
            else:
                ref = RowRef(lineno, partial(_row_line, lf, lineno, text))
                engine(res, key).add_row(ref, vals, kind == K_SAMPLED)


def _rows(fs: FileScan, offset: int, payload: tuple[Any, ...], base: int, data: Any) -> bool:
    """A write-out of the C side's columns (K_COLS) into the file's metric and timer stores. Returns whether it holds
    context rows (they end a family and a run of identical lines, as those lines would). `data`: the chunk's bytes."""
    lf = fs.lf
    records: list[RowPart] = []
    timers: list[RowPart] = []
    ctx = False
    sides: list[tuple[int, str]] = []
    kept = bytes(data) if lf.size < COLUMNS_FROM else None  # a small file's rows: their text from the chunk
    path = lf.path if fs.own_bytes else None  # ... which are the file's own at their offsets: read back when pickled
    for k, n, lines, bols, eols, ords, vals, stats in payload:
        shape = fs.shapes[k]
        starts, ends = memoryview(bols).cast("q"), memoryview(eols).cast("q")
        part = RowPart(shape.rows, n, base + 1, memoryview(lines).cast("q"), memoryview(ords).cast("q"),
                       memoryview(vals).cast("d"), stats,
                       _line_maker(lf, offset, starts, ends) if kept is None
                       else KeptLines(lf.rel, kept, starts, ends, path, offset))
        (records if shape.record else timers).append(part)
        ctx = ctx or shape.ctx
        if shape.side:  # rows of a timer of an actor with a side: side lookups read them (origins.SideRows)
            side = shape.side
            sides.extend((part.lineno(i), side) for i in range(n))
    if records:
        fs.metrics.append_rows(Rows(records), lf.rel)
    if timers:
        fs.timers.add_rows(timers)
    if sides:
        fs.ctx.side_rows.add(sides)
    return ctx


def _line_maker(lf: LogFile, offset: int, bols: Any, eols: Any) -> Callable[[RowPart, int], Line]:
    def line_of(part: RowPart, i: int) -> Line:
        lineno, start, end = part.lineno(i), offset + bols[i], offset + eols[i]
        segments = part.shape.segments
        return RowLine(lf.rel, lineno, lambda: _row_line(lf, lineno, _read_row(lf.path, start, end, segments)))

    return line_of


class KeptLines:
    """The lines of a write-out's rows, their text cut from the chunk they came in (a small file's, held while its rows
    are): each line holds its own text's bytes, not the chunk's, so a line the stores keep keeps nothing more. Pickled
    (a batch's tape) as where the rows are in their file (FileLines) when the chunk held the file's own bytes at
    `offset` (`path`: read whole, decompress.read_small), else as the rows' texts (TextLines)."""

    __slots__ = ("file", "data", "bols", "eols", "path", "offset")

    def __init__(self, file: str, data: bytes, bols: Any, eols: Any, path: str | None = None, offset: int = 0) -> None:
        self.file, self.data, self.bols, self.eols, self.path, self.offset = file, data, bols, eols, path, offset

    def __call__(self, part: RowPart, i: int) -> Line:
        lineno = part.lineno(i)
        return RowLine(self.file, lineno, partial(text_line, self.file, lineno, self.data[self.bols[i]:self.eols[i]]))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self.path is not None:
            return FileLines, (self.file, self.path, self.offset, bytes(self.bols), bytes(self.eols))
        data = self.data
        return TextLines, ((self.file,), tuple(data[b:e] for b, e in zip(self.bols, self.eols)))


class FileLines:
    """The lines of a write-out's rows of a small file as where they are in it (a batch's tape: the rows' texts made
    most of what a worker sent back, 0.5 MB a batch of 128 per-rank logs, and a run reads back a handful of them). A
    line's text is read back from the file when asked (file_line); should the file have changed meanwhile (rotated,
    rewritten), the row's shape with `#` for each number, as _read_row gives for a big file's rows."""

    __slots__ = ("file", "path", "offset", "bols", "eols")

    def __init__(self, file: str, path: str, offset: int, bols: bytes, eols: bytes) -> None:
        self.file, self.path, self.offset = file, path, offset
        self.bols, self.eols = memoryview(bols).cast("q"), memoryview(eols).cast("q")

    def __call__(self, part: RowPart, i: int) -> Line:
        lineno = part.lineno(i)
        return RowLine(self.file, lineno, partial(file_line, self.file, lineno, self.path, self.offset + self.bols[i],
                                                  self.offset + self.eols[i], part.shape.segments))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return FileLines, (self.file, self.path, self.offset, bytes(self.bols), bytes(self.eols))


class JoinedLines:
    """The lines of a part joined from the parts of several small files' write-outs (series_store._joined_part, in a
    batch's tape: batches._Records), each file's rows as where they are in it (FileLines): row i is row i - starts[j]
    of the j-th part joined, at the line the joined part gives it."""

    __slots__ = ("files", "starts")

    def __init__(self, files: tuple[FileLines, ...], starts: tuple[int, ...]) -> None:
        self.files, self.starts = files, starts

    @classmethod
    def of(cls, makers: list[Any], starts: list[int]) -> JoinedLines | None:
        """The lines of parts whose lines are made by `makers` (their first rows at `starts` in the joined part), or
        None when one of them does not know where its rows are in their file."""
        files = []
        for m in makers:
            if isinstance(m, KeptLines) and m.path is not None:
                m = FileLines(m.file, m.path, m.offset, bytes(m.bols), bytes(m.eols))
            if not isinstance(m, FileLines):
                return None
            files.append(m)
        return cls(tuple(files), tuple(starts))

    def __call__(self, part: RowPart, i: int) -> Line:
        j = bisect_right(self.starts, i) - 1
        f, k = self.files[j], i - self.starts[j]
        lineno = part.lineno(i)
        return RowLine(f.file, lineno, partial(file_line, f.file, lineno, f.path, f.offset + f.bols[k],
                                               f.offset + f.eols[k], part.shape.segments))


def file_line(file: str, lineno: int, path: str, start: int, end: int, segments: tuple[bytes, ...]) -> Line:
    """A small file's row as text_line makes it from the row's bytes, read back from the file (FileLines)."""
    try:
        with safe_open(path) as f:
            f.seek(start)
            data = f.read(end - start + 1)
        raw = data[:end - start]
        if len(raw) == end - start and b"\n" not in raw and data[end - start:] in (b"\n", b""):
            return text_line(file, lineno, raw)
    except OSError:
        pass
    return text_line(file, lineno, b"#".join(segments))


class TextLines:
    """The lines of a write-out's rows from their texts (bytes, by row) and files (one for all, or one a row)."""

    __slots__ = ("files", "texts")

    def __init__(self, files: tuple[str, ...], texts: tuple[bytes, ...]) -> None:
        self.files, self.texts = files, texts

    def __call__(self, part: RowPart, i: int) -> Line:
        lineno = part.lineno(i)
        file = self.files[0] if len(self.files) == 1 else self.files[i]
        return RowLine(file, lineno, partial(text_line, file, lineno, self.texts[i]))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return TextLines, (self.files, self.texts)


def text_line(file: str, lineno: int, raw: bytes) -> Line:
    msg, actor, pid, repeat = split_ray(text := raw.decode("ascii", "replace"))
    return Line(file, lineno, text, msg, actor, pid, repeat)


def _read_row(path: str, start: int, end: int, segments: tuple[bytes, ...]) -> str:
    """A row's text, read back from its file; should the file have changed meanwhile (rotated, rewritten), its
    shape with `#` for each number."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start + 1)
        text = data[:end - start]
        if len(text) == end - start and b"\n" not in text and data[end - start:] in (b"\n", b"") and text.isascii():
            return text.decode("ascii")
    except OSError:
        pass
    return "#".join(s.decode("ascii", "replace") for s in segments)


def _row_line(lf: LogFile, lineno: int, text: str) -> Line:
    msg, actor, pid, repeat = split_ray(text)
    return Line(lf.rel, lineno, text, msg, actor, pid, repeat)


def _stats_row(lf: LogFile, lineno: int, text: str, key: str, res: FileResult, folded: bool = False) -> None:
    """A stats line with no anchor, of timeline `key`: only its row matters (what `_line` would do, minus the
    rest). `folded`: the C side folded the row already; it goes only into the timeline."""
    ev = sglang.parse(_row_line(lf, lineno, text))
    if ev is not None and ev.kind == "stats":
        es = engine(res, key)
        if folded:
            es.store(ev)
        else:
            es.add(ev)


def origin_key(file: str, origin: bytes) -> str:
    """The engine timeline of a stats-row origin the C side names (_linescan.c, Origins): `pid=N` of its Ray prefix,
    a blank, its DP tag (either may be missing), as engine_key writes them after the file."""
    return f"{file} {origin.decode('ascii')}" if origin else file


def _python_chunk(scanner: LineScanner, fs: FileScan, text: str, base: int) -> None:
    for lineno, t in scanner.candidates([normalise(text)], fs, first_lineno=base + 1):
        scanner.line(fs, lineno, t)


def _python_rest(scanner: LineScanner, fs: FileScan, stream: Any, base: int) -> int:
    """The rest of the file through the line-for-line reader; returns its line count."""
    for lineno, t in scanner.candidates(iter_chunks(stream), fs, first_lineno=base + 1):
        scanner.line(fs, lineno, t)
    return fs.lines_seen - base
