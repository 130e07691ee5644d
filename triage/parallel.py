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
Set TRIAGE_JOBS=1 to scan in this process only.
"""

from __future__ import annotations

import copyreg
import multiprocessing
import os
import signal
import threading
from multiprocessing.connection import wait
from queue import SimpleQueue
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import LogFile
    from .scan import FileResult, Scanner

BIG = 16 << 20  # bytes: engine logs smaller than this are not worth a process
ENGINE_KINDS = ("sglang", "vllm")
POLL = 0.05  # seconds given a worker to exit once its pipe is closed
DIED = "the process scanning it died (killed or out of memory?)"

# What forked workers inherit from the parent: the scanner, the shared files, the counter of files taken.
_scanner: Scanner | None = None
_shared: list[LogFile] = []
_taken: Any = None


def _read_only(d: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(d)


def _proxy(m: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return _read_only, (dict(m),)


# Results come back pickled; the read-only fields that timer events share (parsers/lifecycle.py) are mapping
# proxies, which pickle does not know by itself: they travel as a dict and come back read-only.
copyreg.pickle(MappingProxyType, _proxy)


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
    from .scan import FileResult

    lf.status = "unreadable"
    lf.reason = (lf.reason + "; " if lf.reason else "") + f"not scanned: {why}"
    res = FileResult(lf)
    res.errors.append(f"{lf.rel}: not scanned: {why}")
    return res


def _scan_one(lf: LogFile) -> FileResult:
    assert _scanner is not None
    return _scanner.scan(lf)


def _work(conn: Any) -> None:
    """A worker: scan shared files until none is left. A thread sends each result as soon as it is made, so
    the worker goes on scanning while this process, busy with its own files, has not read it yet."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for this process's parent, which ends the workers
    outbox: SimpleQueue[Any] = SimpleQueue()

    def send() -> None:
        while (item := outbox.get()) is not None:
            try:
                conn.send(item)
            except (OSError, EOFError):  # this process is gone: nobody to tell
                return
            except Exception as e:  # noqa: BLE001 - a result pickle refuses (nothing was written yet)
                conn.send((item[0], f"its result could not be sent back: {type(e).__name__}: {e}"))

    sender = threading.Thread(target=send)
    sender.start()
    while (i := _take()) < len(_shared):
        try:
            outbox.put((i, _scan_one(_shared[i])))
        except Exception as e:  # noqa: BLE001 - one odd file must not end the run
            outbox.put((i, f"{type(e).__name__}: {e}"))
    outbox.put(None)
    sender.join()
    conn.close()


def scan_files(scanner: Scanner, files: list[LogFile]) -> list[FileResult]:
    """FileResults in the order of `files`."""
    n = cores()
    here, shared = split(files, n)
    if not shared:
        return [scanner.scan(lf) for lf in files]
    global _scanner, _shared, _taken
    ctx = multiprocessing.get_context("fork")
    _scanner, _shared, _taken = scanner, shared, ctx.Value("l", 0)
    workers, conns = [], []
    try:
        for _ in range(min(n - 1, len(shared))):
            reader, writer = ctx.Pipe(duplex=False)
            w = ctx.Process(target=_work, args=(writer,), daemon=True)
            try:
                w.start()
            except OSError:  # no process to be had (EAGAIN, ENOMEM): fewer workers, or this process alone
                reader.close()
                writer.close()
                break
            writer.close()  # the worker holds the only write end: its exit, however it ends, is an end of file here
            workers.append(w)
            conns.append(reader)
        out = {id(lf): scanner.scan(lf) for lf in here}
        mine = {}
        while (i := _take()) < len(shared):  # then take shared files like any worker
            mine[i] = scanner.scan(shared[i])
        got = _collect(conns)
        for i, lf in enumerate(shared):
            r = mine[i] if i in mine else got.get(i, DIED)
            out[id(lf)] = _lost(lf, r) if isinstance(r, str) else r
    finally:
        for c in conns:
            c.close()
        for w in workers:
            w.join(timeout=POLL)
            if w.is_alive():
                w.kill()
        _scanner, _shared, _taken = None, [], None
    return [out[id(lf)] for lf in files]


def _collect(conns: list[Any]) -> dict[int, Any]:
    """The workers' results by shared index (a FileResult, or why the file was not scanned), read until every
    worker has closed its pipe. A worker that dies (killed, out of memory) closes it too: its file is left
    without a result, and nothing waits for it."""
    got: dict[int, Any] = {}
    live = list(conns)
    while live:
        for c in wait(live):
            try:
                i, r = c.recv()
                got[i] = r
            except (EOFError, OSError):  # the worker is done, or died (maybe in the middle of a result)
                live.remove(c)
    return got
