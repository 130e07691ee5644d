"""Scan files on both (all) cores: one worker process per core when there are two or more large files.

Each file is scanned whole by one process (a file's lines depend on each other: tracebacks, `near`
windows), so the gain comes from runs with several big logs: the engines of one run. Workers are
forked, so they share the parent's compiled rule library instead of loading it again; results come
back pickled, which is cheap because a FileResult holds only candidate lines and bounded timelines.
Set TRIAGE_JOBS=1 to scan in this process only.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from typing import TYPE_CHECKING

from .read import iter_chunks

if TYPE_CHECKING:
    from .model import LogFile
    from .scan import FileResult, Scanner

BIG = 16 << 20  # bytes: files smaller than this are not worth a process
_scanner: Scanner | None = None  # the parent's scanner, inherited by forked workers


def jobs(files: list[LogFile]) -> int:
    """How many processes to use for these files."""
    wanted = os.environ.get("TRIAGE_JOBS")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = int(wanted) if wanted and wanted.isdigit() else cores
    big = sum(1 for lf in files if lf.size >= BIG and lf.path != "-")
    if n < 2 or big < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(n, big)


def cost(lf: LogFile) -> float:
    """A guess of a file's scan time: engine logs are mostly stats rows the prefilter skips in C;
    other logs have more lines that Python must parse (metric dicts, tracebacks)."""
    return lf.size * (1.0 if lf.kind in ("sglang", "vllm") else 20.0)


def _scan_one(lf: LogFile) -> FileResult:
    assert _scanner is not None
    return _scanner.scan(lf)


def scan_files(scanner: Scanner, files: list[LogFile]) -> list[FileResult]:
    """FileResults in the order of `files`."""
    n = jobs(files)
    if n == 1:
        return [scanner.scan(lf, iter_chunks(sys.stdin.buffer)) if lf.path == "-" else scanner.scan(lf)
                for lf in files]
    global _scanner
    _scanner = scanner
    big = sorted((lf for lf in files if lf.size >= BIG), key=lambda lf: -cost(lf))  # longest first
    small = [lf for lf in files if lf.size < BIG]
    out: dict[int, FileResult] = {}
    with multiprocessing.get_context("fork").Pool(n) as pool:
        pending = pool.map_async(_scan_one, big, chunksize=1)
        for lf in small:  # the parent scans the small files meanwhile
            out[id(lf)] = scanner.scan(lf, iter_chunks(sys.stdin.buffer)) if lf.path == "-" else scanner.scan(lf)
        for lf, res in zip(big, pending.get()):
            out[id(lf)] = res
    _scanner = None
    return [out[id(lf)] for lf in files]
