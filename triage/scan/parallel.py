"""Scan files on all cores: this process and a forked worker for each other core, sharing one queue of files.

Each file is scanned whole by one process (a file's lines depend on each other: tracebacks, `near` windows),
so the gain comes from runs with several big logs: the engines of one run. Workers are forked, so they share
the parent's compiled rule library instead of loading it again.

Who scans what: a result comes back from a worker pickled, which is cheap for an engine log (its FileResult
holds a few candidate lines and bounded timelines) but not for a trainer or driver log, whose result holds
every metric record and timer event (a 43 MB trainer log's: 0.5 s to pickle and unpickle, twice its scan).
So this process scans every file that is not a big engine log, first; the big engine logs wait in one
queue, longest first, and each process takes the next one whenever it is free: the workers from the start,
this process once its own files are done. No estimate of each file's cost is needed to balance the load,
and with one process per core none of them shares a core with another.

A run with no such logs to share but one big plain file of its own (a Ray driver log that holds every
process's lines) splits that file's scan in two stages instead: a worker reads it and runs the C prefilter,
sending each chunk's candidate lines as it goes, and this process parses them meanwhile (Staged).
Many small files (a run of per-rank and per-sample logs) are shared too, in batches of neighbours in file order
(scan/batches.py): a batch's results come back with a tape of what its files gave the run's metric and timer
stores, and this process plays the tapes in batch order, so the report is the one a single process gives.
Discovery shares the sniffing of many files the same way (map_shared: chunks of files any process may take).
A run of many files gets its workers early (soon: once discovery's walk has found batches.MANY files) and sends them
each job down a pipe (_pooled), so that they hold no object of the files discovery finds after (see _Pool).
Set TRIAGE_JOBS=1 to scan in this process only.
"""

from __future__ import annotations

import copyreg
import dataclasses
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import wait
from queue import Empty, Queue
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from triage.input.read import CHUNK, open_stream
from triage.model import Event, Hit, Line, LogFile, counted, own_path
from triage.parsers.series_store import RowPart
from triage.scan import batches
from triage.scan import prefiltered as fastscan
from triage.scan.filescan import FileResult

if TYPE_CHECKING:
    from triage.scan.scanner import Scanner

BIG = 16 << 20  # bytes: engine logs smaller than this are not worth a process
STAGED_ABOVE = 128 << 20  # bytes: a file of this process's own this big is read by a worker while it parses
# ... unless its head holds more candidate lines than this per MiB: then parsing is the work, and in one process the
# C prefilter counts a storm of one line family itself (it needs to know which line the parser kept last; a worker
# reading ahead cannot), where two processes hand every line over: 20x the CPU on a retraction storm
STAGED_MAX_CANDIDATES = 500
AHEAD = 4  # chunks a reading stage may run ahead of the parsing (bounds the memory they take meanwhile)
TOOK = -1  # a worker's message (TOOK, i): it is scanning shared job i
RESULTS_AHEAD = 8  # results a worker may have made that this process has not read (a batch's tape waits here)
ENGINE_KINDS = ("sglang", "vllm")
WORKER_READ = 1 << 20  # bytes a worker reads at a time (prefiltered.read_size), not CHUNK then ROWS_CHUNK as this
# process does: the read buffer is the worker's own memory beside this process's (a 1 GiB trainer run, peak PSS summed
# over both: 67.5 -> 64.6 MB, CPU alike: a chunk's fixed cost is small beside an engine log's rows)
POLL = 0.05  # seconds given a worker to exit once its pipe is closed
DIED = "the process scanning it died (killed or out of memory?)"
DIED_READING = "the process reading it died (killed or out of memory?)"

# What forked workers inherit from the parent: the scanner, the shared jobs (an engine log each, then from index
# _first_batch on the batches of small files), the counter of jobs taken.
_scanner: Scanner | None = None
_shared: list[list[LogFile]] = []
_first_batch = 0
_taken: Any = None


def _read_only(d: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(d)


def _proxy(m: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return _read_only, (dict(m),)


# Results come back pickled; the read-only fields that timer events share (parsers/lifecycle.py) are mapping
# proxies, which pickle does not know by itself: they travel as a dict and come back read-only.
copyreg.pickle(MappingProxyType, _proxy)


def _made_line(file: str, lineno: int, text: str, msg: str | None, cut: int, actor: str, pid: str, repeat: int,
               until: int, new: Callable[[type], Any] = object.__new__) -> Line:
    line: Any = new(Line)
    line.file, line.lineno, line.text, line._msg, line._cut = file, lineno, text, msg, cut
    line.actor, line.pid, line.repeat, line.until = actor, pid, repeat, until
    return line


def _line(line: Any) -> tuple[Any, tuple[Any, ...]]:
    return _made_line, (line.file, line.lineno, line.text, line._msg, line._cut, line.actor, line.pid, line.repeat,
                        line.until)


LINE_SLOTS = ("file", "lineno", "text", "_msg", "_cut", "actor", "pid", "repeat", "until")  # what _line sends


def _event(ev: Event) -> tuple[type, tuple[Any, ...]]:
    return Event, (ev.kind, ev.line, ev.fields)


def _hit(hit: Hit) -> tuple[type, tuple[Any, ...]]:
    return Hit, (hit.rule, hit.line, hit.numbers, hit.side, hit.extra)


# The lines and events a batch of small files sends back (its results, its tape: tens of thousands a second) as
# their values in a tuple, each attribute named: pickle's own way with a class of __slots__ asks each slot by name
# through copyreg, and a loop over the slots (getattr, setattr) took three times as long both ways.
copyreg.pickle(Line, _line)
copyreg.pickle(Event, _event)
copyreg.pickle(Hit, _hit)


def _made_file(path: str | None, rel: str, kind: str, status: str, reason: str, size: int, lines: int,
               compression: str, node: str, root: str) -> LogFile:
    lf = LogFile(path, rel, kind, status, reason, counted(size), counted(lines), compression,  # type: ignore[arg-type]
                 node)
    lf._dir = root
    return lf


def _file(lf: LogFile) -> tuple[Any, tuple[Any, ...]]:
    """A file as it travels: its path only when it has one of its own (a file of a walk is made of its root and rel,
    and the root is one string a message: pickle sends it once)."""
    return _made_file, (own_path(lf), lf.rel, lf.kind, lf.status, lf.reason, lf.size, lf.lines,
                        lf.compression, lf.node, lf._dir)


copyreg.pickle(LogFile, _file)


def _made_part(shape: Any, n: int, lineno0: int, lines: bytes, ords: bytes, vals: bytes, stats: tuple[Any, ...],
               line_of: Any) -> RowPart:
    return RowPart(shape, n, lineno0, memoryview(lines).cast("q"), memoryview(ords).cast("q"),
                   memoryview(vals).cast("d"), stats, line_of)


def _row_part(p: RowPart) -> tuple[Any, tuple[Any, ...]]:
    """A write-out's rows of one shape (a batch's tape: batches.py) as the bytes of their columns and their lines'
    maker; a maker that does not pickle (a closure) travels as the rows' texts."""
    line_of: Any = p.line_of
    if not isinstance(line_of, (fastscan.KeptLines, fastscan.TextLines, fastscan.FileLines, fastscan.JoinedLines)):
        made = [line_of(p, i) for i in range(p.n)]
        line_of = fastscan.TextLines(tuple(ln.file for ln in made), tuple(ln.text.encode() for ln in made))
    return _made_part, (p.shape, p.n, p.lineno0, bytes(p.lines), bytes(p.ords), bytes(p.vals), p.stats, line_of)


copyreg.pickle(RowPart, _row_part)


def cores() -> int:
    wanted = os.environ.get("TRIAGE_JOBS")
    if wanted and wanted.isdigit():
        return max(1, int(wanted))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def split(files: list[LogFile], n: int) -> tuple[list[LogFile], list[LogFile]]:
    """(files only this process scans, files any process may take: the big engine logs, longest first)."""
    if n < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return list(files), []
    ids = {id(lf) for lf in files if lf.kind in ENGINE_KINDS and lf.size >= BIG}
    here = [lf for lf in files if id(lf) not in ids]
    if len(ids) < 2 and not here:
        return list(files), []  # one file and nothing to do meanwhile: a worker would only add its cost
    return here, sorted((lf for lf in files if id(lf) in ids), key=lambda lf: -lf.size)


def _take() -> int:
    """The index of the next shared file to scan (len(_shared) or more: none left)."""
    with _taken.get_lock():
        i = _taken.value
        _taken.value += 1
    return int(i)


def _lost(lf: LogFile, why: str) -> FileResult:
    lf.status = "unreadable"
    lf.reason = (lf.reason + "; " if lf.reason else "") + f"not scanned: {why}"
    res = FileResult(lf)
    res.errors.append(f"{lf.rel}: not scanned: {why}")
    return res


def _scan_one(lf: LogFile) -> FileResult:
    assert _scanner is not None
    return _scanner.scan(lf)


def _scan_batch(files: list[LogFile]) -> tuple[list[FileResult | tuple[int, str, str] | str], list[tuple[int, Any]] | None]:
    """(each file's result (_notes_only) or why it has none, the tape of what they gave the run's stores: None when the scanner
    has no run-level stores, and each result holds its file's)."""
    assert _scanner is not None
    was = _scanner.series
    tape = batches.Tape() if was is not None else None
    out: list[FileResult | tuple[int, str, str] | str] = []
    try:
        _scanner.series = tape  # type: ignore[assignment]  # a Tape stands in for a RunSeries
        for lf in files:
            try:
                out.append(_notes_only(_scanner.scan(lf)))
            except Exception as e:  # noqa: BLE001 - one odd file must not end the run
                out.append(f"{type(e).__name__}: {e}")
    finally:
        _scanner.series = was
    return out, tape.done() if tape is not None else None


def _run_job(i: int) -> Any:
    """Shared job i's result: an engine log's FileResult, a batch's (results, tape), or why there is none."""
    try:
        return _scan_batch(_shared[i]) if i >= _first_batch else _scan_one(_shared[i][0])
    except Exception as e:  # noqa: BLE001 - one odd file must not end the run
        return f"{type(e).__name__}: {e}"


def _sender(conn: Any, outbox: Any, refused: Callable[[Any, str], Any]) -> threading.Thread:
    """A thread of a worker that sends what is put in outbox, until None: the worker goes on with its work while
    its parent, busy with its own, has not read yet. An item pickle refuses is replaced by refused(item, why)
    (nothing of it was written yet). Once the parent is gone there is nobody to work for: the worker ends."""

    def send() -> None:
        while (item := outbox.get()) is not None:
            try:
                conn.send(item)
            except (OSError, EOFError):
                os._exit(0)
            except Exception as e:  # noqa: BLE001
                conn.send(refused(item, f"{type(e).__name__}: {e}"))

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def _work(conn: Any) -> None:
    """A worker: scan shared files until none is left. A thread sends each result as soon as it is made, so
    the worker goes on scanning while this process, busy with its own files, has not read it yet."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for this process's parent, which ends the workers
    fastscan.read_size = fastscan.rows_chunk = WORKER_READ
    outbox: Queue[Any] = Queue(RESULTS_AHEAD)  # bounded: a batch's tape waits here until this process plays it
    sender = _sender(conn, outbox, lambda item, why: (item[0], f"its result could not be sent back: {why}"))
    while (i := _take()) < len(_shared):
        outbox.put((TOOK, i))  # should this worker die scanning it, its parent knows which job has no result
        outbox.put((i, _run_job(i)))
    outbox.put(None)
    sender.join()
    conn.close()


_HELD = tuple(f.name for f in dataclasses.fields(FileResult) if f.name != "file")  # what a result may hold


def _empty(r: FileResult) -> bool:
    return not any(getattr(r, name) for name in _HELD)


def _notes_only(r: FileResult) -> FileResult | tuple[int, str, str]:
    """A batch's result of one file as it travels: r, or only its file's notes (lines, reason, status) when it holds
    nothing else (most files of a run of small files: a FileResult and its LogFile cost ~10 us to send and take)."""
    return (r.file.lines, r.file.reason, r.file.status) if _empty(r) else r


def kept(lf: LogFile, r: FileResult | tuple[int, str, str]) -> FileResult | None:
    """r, or None when it holds nothing a later stage reads (most results of a run of small files: a FileResult of
    empty lists is ~800 bytes, 160 MB for 200 k files); either way the file's notes (lines, status, reason) are lf's
    (a worker's result holds a copy of lf; _notes_only: only the notes)."""
    if isinstance(r, tuple):
        lf.lines, lf.reason, lf.status = counted(r[0]), r[1], r[2]
        return None
    if r.file is not lf:
        lf.lines, lf.reason, lf.status = counted(r.file.lines), r.file.reason, r.file.status
        r.file = lf
    return None if _empty(r) else r


class _Jobs:
    """The jobs of one scan_files, whichever workers take them: the big engine logs one a job, then the batches of small
    files; each job's result as it arrives (a batch's tape played as soon as its turn comes), and at the end the results
    kept, a file's by its id."""

    def __init__(self, scanner: Scanner, shared: list[LogFile], small: list[list[LogFile]]) -> None:
        self.scanner = scanner
        self.files = [[lf] for lf in shared] + small
        self.first_batch = len(shared)
        self.in_order = batches.InOrder(scanner.series, len(shared))
        self.got: dict[int, Any] = {}

    def do(self, i: int) -> Any:
        """Job i done in this process."""
        return _scan_batch(self.files[i]) if i >= self.first_batch else self.scanner.scan(self.files[i][0])

    def arrived(self, i: int, r: Any) -> None:
        if i >= self.first_batch:
            self.in_order.put(i, r[1] if isinstance(r, tuple) else None)
            r = [one if isinstance(one, str) else kept(lf, one) for lf, one in zip(self.files[i], r[0])] \
                if isinstance(r, tuple) else r
        self.got[i] = r

    def kept_into(self, out: dict[int, FileResult]) -> None:
        """Every job's results into out (a job no result came back for: DIED for each of its files)."""
        self.in_order.finish(len(self.files))
        for i, job in enumerate(self.files):
            r = self.got.get(i, DIED)
            for lf, one in zip(job, r if isinstance(r, list) else [r] * len(job)):
                if (one := _lost(lf, one) if isinstance(one, str) else one if one is None else kept(lf, one)) is not None:
                    out[id(lf)] = one


def scan_files(scanner: Scanner, files: list[LogFile]) -> list[FileResult | None]:
    """Each file's result in the order of `files`, None for a result that holds nothing (kept)."""
    n = cores()
    text = batches.teach(scanner.needles, files)
    here, shared = split(files, n)
    here, small = batches.split(here) if n >= 2 and "fork" in multiprocessing.get_all_start_methods() else (here, [])
    if _pool is not None and small:
        try:
            return _scan_pooled(scanner, files, here, shared, small, text)
        finally:
            close_pool()
    close_pool()  # workers forked early for nothing to share: gone before any other is forked
    if not shared and not small:
        # two stages need the C prefilter in the reading stage: without it (not built, TRIAGE_NO_NATIVE=1) this
        # process reads the file line for line
        staged = n >= 2 and "fork" in multiprocessing.get_all_start_methods() and scanner.needles is not None
        return [kept(lf, _staged_scan(scanner, lf) if staged and _stageable(lf, scanner) else scanner.scan(lf))
                for lf in files]
    global _scanner, _shared, _first_batch, _taken
    jobs = _Jobs(scanner, shared, small)
    _scanner, _shared, _first_batch = scanner, jobs.files, jobs.first_batch
    _taken = multiprocessing.get_context("fork").Value("l", 0)
    workers, conns = [], []
    trim()
    try:
        for _ in range(min(n - 1, len(jobs.files))):
            started = _start(_work)
            if started is None:  # fewer workers, or this process alone
                break
            workers.append(started[0])
            conns.append(started[1])
        live, scanning = list(conns), dict[Any, Any]()
        out = {id(lf): r for lf in here if (r := kept(lf, scanner.scan(lf))) is not None}  # None: not kept
        while (i := _take()) < len(jobs.files):  # then take shared jobs like any worker
            jobs.arrived(i, jobs.do(i))
            _collect(live, jobs.arrived, scanning, block=False)  # the workers' results so far (their tapes' turn may come)
        _collect(live, jobs.arrived, scanning)
        jobs.kept_into(out)
    finally:
        for w, c in zip(workers, conns):
            _end(w, c)
        _scanner, _shared, _first_batch, _taken = None, [], 0, None
    return [out.get(id(lf)) for lf in files]  # out: only the results kept (a run of 200 k small files keeps a few)


def _scan_pooled(scanner: Scanner, files: list[LogFile], here: list[LogFile], shared: list[LogFile],
                 small: list[list[LogFile]], text: bytes) -> list[FileResult | None]:
    """scan_files with the pool's workers (forked early): the same jobs (the big engine logs, then the batches of small
    files), each sent down a worker's pipe as its files, or done here once this process's own files are."""
    global _scanner
    assert _pool is not None
    if text:
        for m in _pool.members:  # before any job: the worker's matcher is this process's
            try:
                m.jobs.send(("teach", text))
            except OSError:
                pass
    jobs = _Jobs(scanner, shared, small)
    out: dict[int, FileResult] = {}

    def first() -> None:
        out.update({id(lf): r for lf in here if (r := kept(lf, scanner.scan(lf))) is not None})

    def answered(i: int) -> None:  # a worker's scan: its bytes go to this process's bar
        if scanner.progress is not None:
            scanner.progress.add(sum(lf.size for lf in jobs.files[i]))

    _scanner = scanner
    try:
        _pooled(len(jobs.files), lambda i: ("scan", i, jobs.files[i], i >= jobs.first_batch), jobs.do, jobs.arrived,
                first, answered)
    finally:
        _scanner = None
    jobs.kept_into(out)
    return [out.get(id(lf)) for lf in files]


MAP_CHUNK = 256  # items of a map_shared job: one message of results each


def map_shared(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """[fn(item) for item in items], in chunks this process and forked workers take as they are free, when there are
    batches.MANY items or more (discovery sniffing tens of thousands of small files). fn must be a function of its
    item alone (a worker's effects are lost with it): a chunk a worker does not send back (it died, raised, or its
    result could not travel) is done again here, so what fn raises is raised here, as by the plain map."""
    n = cores()
    if n < 2 or len(items) < batches.MANY or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(x) for x in items]
    global _map_fn, _map_chunks, _taken
    chunks = [items[i:i + MAP_CHUNK] for i in range(0, len(items), MAP_CHUNK)]
    if _pool is not None:  # workers forked early (soon): the chunks go down their pipes
        done: dict[int, list[Any]] = {}

        def came(i: int, r: Any) -> None:
            if isinstance(r, list):
                done[i] = r

        _pooled(len(chunks), lambda i: ("map", i, fn, chunks[i]), lambda i: [fn(x) for x in chunks[i]], came)
        return [x for i in range(len(chunks)) for x in (done[i] if i in done else [fn(y) for y in chunks[i]])]
    _map_fn, _map_chunks = fn, chunks
    _taken = multiprocessing.get_context("fork").Value("l", 0)
    got: dict[int, list[Any]] = {}

    def arrived(i: int, r: Any) -> None:
        if isinstance(r, list):
            got[i] = r

    workers, conns = [], []
    trim()
    try:
        for _ in range(min(n - 1, len(chunks) - 1)):
            started = _start(_map_work)
            if started is None:
                break
            workers.append(started[0])
            conns.append(started[1])
        live: list[Any] = list(conns)
        while (i := _take()) < len(chunks):
            got[i] = _map_chunk(i)
            _collect(live, arrived, {}, block=False)
        _collect(live, arrived, {})
        for i in range(len(chunks)):
            if i not in got:  # lost with a worker: done here
                got[i] = _map_chunk(i)
    finally:
        for w, c in zip(workers, conns):
            _end(w, c)
        _map_fn, _map_chunks, _taken = None, [], None
    return [x for i in range(len(chunks)) for x in got[i]]


_map_fn: Callable[[Any], Any] | None = None
_map_chunks: list[list[Any]] = []


def _map_chunk(i: int) -> list[Any]:
    assert _map_fn is not None
    return [_map_fn(x) for x in _map_chunks[i]]


def _map_work(conn: Any) -> None:
    """A worker of map_shared: map chunks until none is left; one that raises goes back as None (done again by the
    parent)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    outbox: Queue[Any] = Queue(RESULTS_AHEAD)
    sender = _sender(conn, outbox, lambda item, why: (item[0], None))
    while (i := _take()) < len(_map_chunks):
        try:
            outbox.put((i, _map_chunk(i)))
        except Exception:  # noqa: BLE001 - the parent does this chunk again, and sees what it raises
            outbox.put((i, None))
    outbox.put(None)
    sender.join()
    conn.close()


_open_readers: list[Any] = []  # the read ends of the workers' pipes this process holds (a new worker closes them)
PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal a process gets when the thread that forked it ends (Linux)
WATCH = 1.0  # seconds between two looks at the parent, where no parent-death signal is to be had


def _die_with(parent: int) -> None:
    """End this worker when its parent ends, however the parent ends (SIGKILL, the OOM killer, SIGTERM or SIGHUP
    from `kill` or a timeout): the kernel's parent-death signal where there is one (Linux prctl), else a thread that
    looks whether the parent changed. A worker left alone would scan (or block writing) for nobody."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux, or no C library to ask
        armed = False
    if os.getppid() != parent:  # the parent ended before the signal was armed
        os._exit(0)
    if armed:
        return

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(WATCH)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _child(target: Callable[..., None], parent: int, *args: Any) -> None:
    """What a forked worker runs first: close the pipe ends it inherited but does not use (its own read end, the
    other workers'), so that its writes fail once the parent is gone instead of filling a pipe it reads itself;
    then bind its life to the parent's and run target."""
    for conn in _open_readers:
        conn.close()
    _open_readers.clear()
    _die_with(parent)
    target(*args)


def trim() -> None:
    """Give the free memory inside malloc's heap back to the system (glibc malloc_trim), before forking workers. A
    page freed but still mapped is shared with a worker after the fork; the first process that allocates into it then
    copies it, and both hold it: on a 1 GiB trainer run ~7 MB of the parent's heap was such pages (peak PSS summed
    over both processes 73.4 -> 67.6 MB). A trimmed page is the parent's alone when it is used again. Elsewhere
    (another C library, no ctypes): nothing."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError, ImportError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


def _start(target: Callable[..., None], *args: Any) -> tuple[Any, Any] | None:
    """(a forked worker running target(*args, conn), the end of its pipe this process reads), or None when no
    process is to be had (fork refused: EAGAIN, ENOMEM)."""
    reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
    _roomy(writer)
    _open_readers.append(reader)
    w = multiprocessing.get_context("fork").Process(target=_child, args=(target, os.getpid(), *args, writer),
                                                    daemon=True)
    try:
        w.start()
    except OSError:
        _open_readers.remove(reader)
        reader.close()
        writer.close()
        return None
    writer.close()  # the worker holds the only write end: its exit, however it ends, is an end of file here
    return w, reader


PIPE_ROOM = 1 << 20  # bytes a worker's pipe holds (Linux's default most for a user): an engine log's result is
# ~40-500 KB pickled, so a worker done with its files leaves without waiting for this process to read them (with the
# default 64 KiB it waited, holding ~20 MB, while this process scanned a 750 MB trainer log)


def _roomy(conn: Any) -> None:
    """Make the pipe of conn hold PIPE_ROOM bytes where the system lets it (Linux F_SETPIPE_SZ); else as it is."""
    try:
        import fcntl

        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, PIPE_ROOM)
    except (ImportError, AttributeError, OSError):
        pass


def _end(w: Any, reader: Any) -> None:
    """Close a worker's pipe (a worker still sending then ends) and give it POLL seconds to exit, else kill it."""
    if reader in _open_readers:
        _open_readers.remove(reader)
    reader.close()
    w.join(timeout=POLL)
    if w.is_alive():
        w.kill()
        w.join()


def _collect(live: list[Any], arrived: Callable[[int, Any], None], scanning: dict[Any, int], block: bool = True) -> None:
    """The workers' results, each to arrived(job index, result): until every worker has closed its pipe (a closed
    one leaves `live`), or (block=False) those already sent. `scanning`: each worker's pipe -> the job it said it
    took (TOOK) and has not sent the result of yet. A worker that dies (killed, out of memory) closes it
    too: its job gets DIED as its result, and nothing waits for it."""
    while live:
        ready: list[Any] = wait(live, None if block else 0)  # the pipes' Connection objects, as given
        if not ready:
            return
        for c in ready:
            try:
                i, r = c.recv()
            except (EOFError, OSError):  # the worker is done, or died (maybe in the middle of a result)
                live.remove(c)
                if c in scanning:
                    arrived(scanning.pop(c), DIED)
                continue
            if i == TOOK:
                scanning[c] = r
                continue
            scanning.pop(c, None)
            arrived(i, r)


def _stageable(lf: LogFile, scanner: Scanner) -> bool:
    return (lf.size >= STAGED_ABOVE and not lf.compression and lf.path != "-" and scanner.needles is not None
            and fastscan.candidates_per_mib(scanner.needles, lf.path) <= STAGED_MAX_CANDIDATES)


class Staged:
    """The chunks of one file as a worker reads and prefilters them (fastscan.read_chunks), for Scanner.scan."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def _recv(self) -> Any:
        try:
            return self.conn.recv()
        except (EOFError, OSError):  # the worker died, maybe in the middle of a message
            raise EOFError(DIED_READING) from None

    def items(self, note: Any) -> Iterator[Any]:
        """Chunk, ..., then a Rest or the line count; the reader's notes go to note(text) on the way."""
        while True:
            msg = self._recv()
            if type(msg) is tuple and msg[0] == "note":
                note(msg[1])
            elif type(msg) is tuple and msg[0] == "error":
                raise OSError(msg[1])
            else:
                yield msg
                if not isinstance(msg, fastscan.Chunk):
                    return

    def reopen(self, rest: Any) -> Any:
        """The file from rest.offset on: its head, then the bytes the worker goes on sending."""
        return fastscan._Prepend(rest.head, self)  # type: ignore[arg-type]  # Staged reads as a BinaryIO does

    def read(self, n: int = -1) -> bytes:
        msg = self._recv()
        if type(msg) is tuple and msg[0] == "bytes":
            return msg[1]
        if type(msg) is tuple and msg[0] == "error":
            raise OSError(msg[1])
        return b""


def _read_stage(lf: LogFile, conn: Any) -> None:
    """A worker: read one file and prefilter it (stage 1), sending each chunk as soon as it is done; a thread
    sends, so reading goes on while this process's parent parses, at most AHEAD chunks ahead."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    outbox: Queue[Any] = Queue(AHEAD)
    sender = _sender(conn, outbox, lambda item, why: ("error", f"a chunk could not be sent: {why}"))
    assert _scanner is not None and _scanner.needles is not None
    try:
        with open_stream(lf.path, lf.compression, lambda text: outbox.put(("note", text))) as stream:
            shapes = fastscan.shapes_for(_scanner, lf)  # learnt here, sent with the chunks (Chunk.shapes)
            # chunks of CHUNK bytes, not ROWS_CHUNK: a chunk's rows are sent as they are, and the bigger buffer cost
            # this process 4 MiB for no CPU measured (a 1.26 GB Ray driver log: peak PSS 53 -> 49 MB, CPU alike)
            for item in fastscan.read_chunks(_scanner.needles, lf, stream, None, None, shapes, CHUNK):
                outbox.put(item.packed() if isinstance(item, fastscan.Chunk) else item)
                if isinstance(item, fastscan.Rest):  # the rest goes to the line-for-line reader, as bytes
                    while data := stream.read(CHUNK):
                        outbox.put(("bytes", data))
                    outbox.put(("bytes", b""))
    except Exception as e:  # noqa: BLE001 - reported as Scanner.scan reports its own read errors
        outbox.put(("error", str(e) if isinstance(e, (OSError, EOFError, ValueError)) else f"{type(e).__name__}: {e}"))
    outbox.put(None)
    sender.join()
    conn.close()


def _staged_scan(scanner: Scanner, lf: LogFile) -> FileResult:
    """Scan one big file in two stages: a worker reads and prefilters, this process parses."""
    global _scanner
    _scanner = scanner
    try:
        trim()
        started = _start(_read_stage, lf)
        if started is None:  # no process to be had: this one does both stages
            return scanner.scan(lf)
        try:
            return scanner.scan(lf, staged=Staged(started[1]))
        finally:
            _end(*started)
    finally:
        _scanner = None


# The pool forked early: a run of many small files (discovery found batches.MANY of them) gets its workers while this
# process holds the objects of a few hundred files (parallel.soon, called by the walk), not of all of them. A worker
# forked after discovery inherited a LogFile, a path and a size for each of 257 k files (~70 MB); this process then
# wrote to every one of them (each file's notes) and so copied their pages, and the worker's originals counted as its
# own: the run's summed PSS held them twice (204 MB). Workers of the pool are sent their jobs through a pipe (a batch's
# files pickled, a chunk of names to sniff) and build their own objects, dropped with the job.
INFLIGHT = 3  # jobs sent to a worker of the pool and not answered yet, at most
REDO = "sent to a worker that died before it started it"  # such a job is done by this process


class _Member:
    """A worker of the pool: its process, the pipe its jobs go down, the pipe its results come up, its jobs sent."""

    def __init__(self, proc: Any, jobs: Any, results: Any) -> None:
        self.proc, self.jobs, self.results = proc, jobs, results
        self.sent: list[int] = []
        self.took = -1  # the job it said it started last (TOOK)


class _Pool:
    def __init__(self, scanner: Scanner) -> None:
        self.scanner = scanner
        self.members: list[_Member] = []
        self.taught: bytes | None = None


_early: Scanner | None = None  # the scanner of the analysis under way (early()), for soon()
_pool: _Pool | None = None


class early:
    """While an analysis discovers and scans: `soon` may fork the workers of a pool for `scanner`; they end with it."""

    def __init__(self, scanner: Scanner) -> None:
        self.scanner = scanner

    def __enter__(self) -> early:
        global _early
        _early = self.scanner
        return self

    def __exit__(self, *exc: Any) -> None:
        global _early
        _early = None
        close_pool()


def soon(found: int) -> None:
    """Discovery's walk has found `found` files so far: once they are many (batches.MANY), fork the workers of the pool,
    once."""
    global _pool, _scanner
    if _pool is not None or _early is None or found < batches.MANY:
        return
    n = cores()
    if n < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return
    pool = _Pool(_early)
    _scanner = _early  # what a worker scans with
    trim()
    try:
        for _ in range(n - 1):
            reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
            _open_readers.append(writer)  # every worker forked from now on closes it: only this process sends jobs
            started = _start(_serve, reader)
            reader.close()
            if started is None:
                _open_readers.remove(writer)
                writer.close()
                break
            pool.members.append(_Member(started[0], writer, started[1]))
    finally:
        _scanner = None
    if pool.members:
        _pool = pool


def close_pool() -> None:
    """End the pool's workers (each leaves when its job pipe closes)."""
    global _pool
    pool, _pool = _pool, None
    if pool is None:
        return
    for m in pool.members:
        if m.jobs in _open_readers:
            _open_readers.remove(m.jobs)
        m.jobs.close()
    for m in pool.members:
        _end(m.proc, m.results)


def _serve(jobs: Any, conn: Any) -> None:
    """A worker of the pool: do the jobs that come down `jobs` until it closes: ("teach", text): the matcher small files
    share (batches.teach); ("map", i, fn, items); ("scan", i, files, batch): a batch of small files, or one file. It
    sends each result itself (no thread: its parent's feeding thread reads the results as they come, INFLIGHT jobs
    at most are ahead), so that it has said which job it took (TOOK) before it starts it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fastscan.read_size = fastscan.rows_chunk = WORKER_READ
    scanner = _scanner
    assert scanner is not None
    while True:
        try:
            msg = jobs.recv()
        except (EOFError, OSError):
            break
        if msg[0] == "teach":
            if scanner.needles is not None:
                scanner.needles.share(msg[1])
            continue
        if msg[0] == "map":
            _, i, fn, items = msg
            try:
                r: Any = [fn(x) for x in items]
            except Exception:  # noqa: BLE001 - the parent does this chunk again, and sees what it raises
                r = None
        else:
            _, i, files, batch = msg
            _reply(conn, (TOOK, i))  # should this worker die scanning it, its parent knows which job has no result
            try:
                r = _scan_batch(files) if batch else scanner.scan(files[0])
            except Exception as e:  # noqa: BLE001 - one odd file must not end the run
                r = f"{type(e).__name__}: {e}"
        del msg
        _reply(conn, (i, r))
        del r
    conn.close()


def _reply(conn: Any, item: tuple[int, Any]) -> None:
    """Send item to the parent; one pickle refuses goes as why; once the parent is gone, the worker ends."""
    try:
        conn.send(item)
    except (OSError, EOFError):
        os._exit(0)
    except Exception as e:  # noqa: BLE001
        conn.send((item[0], f"its result could not be sent back: {type(e).__name__}: {e}"))


def _pooled(count: int, message: Callable[[int], tuple[Any, ...]], here: Callable[[int], Any],
            arrived: Callable[[int, Any], None], first: Callable[[], None] | None = None,
            done: Callable[[int], None] | None = None) -> None:
    """Jobs 0..count-1 shared between this process and the pool's workers: a thread of this process keeps each worker
    INFLIGHT jobs ahead (message(i) is what goes down its pipe) and takes their results, which this process gives to
    arrived(i, result) between its own jobs (here(i)); `first` is this process's own work before it takes jobs (the
    workers are fed meanwhile). A worker that dies leaves DIED as the result of the job it had said it took (TOOK);
    the jobs sent to it after that one are done here (REDO). done(i): a job a worker answered."""
    assert _pool is not None
    members = list(_pool.members)
    lock = threading.Lock()
    nxt = [0]
    inbox: Queue[tuple[int, Any]] = Queue()
    handed = [0]  # jobs sent to workers (each comes back in inbox, as a result or DIED)

    def take() -> int:
        with lock:
            i = nxt[0]
            nxt[0] += 1
        return i

    def feed() -> None:
        while True:
            for m in list(members):
                while len(m.sent) < INFLIGHT and inbox.qsize() < RESULTS_AHEAD:
                    i = take()
                    if i >= count:
                        break
                    with lock:
                        handed[0] += 1
                    try:
                        m.jobs.send(message(i))
                    except (OSError, ValueError):  # the worker is gone: what it had taken has no result, the rest
                        members.remove(m)  # is done here
                        for j in [*m.sent, i]:
                            inbox.put((j, DIED if j == m.took else REDO))
                        m.sent.clear()
                        break
                    except Exception as e:  # noqa: BLE001 - a job that does not pickle: no result (map: done here)
                        inbox.put((i, f"it could not be sent to a worker: {type(e).__name__}: {e}"))
                        continue
                    m.sent.append(i)
            waiting = [m for m in members if m.sent]
            if not waiting:
                if nxt[0] >= count:
                    return
                threading.Event().wait(0.01)  # this process has not read the results yet: let it
                continue
            ready = wait([m.results for m in waiting], 0.05)
            for m in waiting:
                if m.results not in ready:
                    continue
                try:
                    i, r = m.results.recv()
                except (EOFError, OSError):  # the worker died (killed, out of memory): the job it had taken has no
                    members.remove(m)  # result; those sent after it are done here
                    for j in m.sent:
                        inbox.put((j, DIED if j == m.took else REDO))
                    m.sent.clear()
                    continue
                if i == TOOK:
                    m.took = r
                    continue
                m.sent.remove(i)
                inbox.put((i, r))

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    got = 0

    def drain(block: bool) -> None:
        nonlocal got
        while True:
            try:
                i, r = inbox.get() if block else inbox.get_nowait()
            except Empty:
                return
            got += 1
            if r is REDO:
                r = here(i)
            elif done is not None and r is not DIED:
                done(i)
            arrived(i, r)
            if block:
                return

    if first is not None:
        first()
    while (i := take()) < count:
        drain(False)
        arrived(i, here(i))
    drain(False)
    feeder.join()
    while got < handed[0]:
        drain(True)
