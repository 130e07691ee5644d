"""Scan files on both (all) cores: this process and a forked worker per core.

Each file is scanned whole by one process (a file's lines depend on each other: tracebacks, `near`
windows), so the gain comes from runs with several big logs: the engines of one run. Workers are
forked, so they share the parent's compiled rule library instead of loading it again.

Who scans what: a result comes back from a worker pickled, which is cheap for an engine log (its
FileResult holds a few candidate lines and bounded timelines) but not for a trainer or driver log,
whose result holds every metric record and timer event. So this process keeps the small files and
every file that is not an engine log, and the big engine logs are shared out, longest first, to
whichever side (this process or the workers) has the least estimated work so far.
Set TRIAGE_JOBS=1 to scan in this process only.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import LogFile
    from .scan import FileResult, Scanner

BIG = 16 << 20  # bytes: engine logs smaller than this are not worth a process
ENGINE_KINDS = ("sglang", "vllm")
# Estimated scan seconds per byte, relative to an engine log (mostly stats rows the C prefilter skips);
# other logs have more lines that Python must parse (metric dicts, timers, tracebacks). Measured on the
# bench run directory (bench/): a slime trainer log costs about 18 times an engine log per byte.
PYTHON_HEAVY = 18.0
_scanner: Scanner | None = None  # the parent's scanner, inherited by forked workers


def cores() -> int:
    wanted = os.environ.get("TRIAGE_JOBS")
    if wanted and wanted.isdigit():
        return max(1, int(wanted))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cost(lf: LogFile) -> float:
    """A guess of a file's scan time, in engine-log bytes."""
    return lf.size * (1.0 if lf.kind in ENGINE_KINDS else PYTHON_HEAVY)


def share(files: list[LogFile], n: int) -> tuple[list[LogFile], list[LogFile]]:
    """(files this process scans, files for up to n workers), for n cores."""
    if n < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return list(files), []
    movable = sorted((lf for lf in files if lf.kind in ENGINE_KINDS and lf.size >= BIG), key=lambda lf: -cost(lf))
    moved = {id(lf) for lf in movable}
    here = [lf for lf in files if id(lf) not in moved]
    # This process and one worker per core: whole files rarely split evenly over the cores, and with one
    # process more than cores the system shares them out, so no core idles while one side still has work.
    # (This process does little once its own files are done: it waits.)
    loads = [sum(cost(lf) for lf in here)] + [0.0] * n  # this process, then each worker
    away: list[LogFile] = []
    for lf in movable:  # longest first, to the least loaded side
        i = min(range(len(loads)), key=loads.__getitem__)
        loads[i] += cost(lf)
        (here if i == 0 else away).append(lf)
    return here, away


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


def scan_files(scanner: Scanner, files: list[LogFile]) -> list[FileResult]:
    """FileResults in the order of `files`."""
    n = cores()
    here, away = share(files, n)
    if not away:
        return [scanner.scan(lf) for lf in files]
    global _scanner
    _scanner = scanner
    out: dict[int, FileResult] = {}
    with ProcessPoolExecutor(min(n, len(away)), mp_context=multiprocessing.get_context("fork")) as pool:
        pending = [(lf, pool.submit(_scan_one, lf)) for lf in away]
        for lf in sorted(here, key=lambda lf: -cost(lf)):  # this process scans its share meanwhile
            out[id(lf)] = scanner.scan(lf)
        for lf, future in pending:
            try:
                out[id(lf)] = future.result()
            except BrokenProcessPool:  # the worker died (killed, out of memory): say so, never hang
                out[id(lf)] = _lost(lf, "the process scanning it died (killed or out of memory?)")
            except Exception as e:  # noqa: BLE001 - one odd file must not end the run
                out[id(lf)] = _lost(lf, f"{type(e).__name__}: {e}")
    _scanner = None
    return [out[id(lf)] for lf in files]
