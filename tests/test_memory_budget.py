"""Memory that does not grow with the log: a worker leaves once done, read buffers go back to the system."""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pytest

from triage.input.read import CHUNK, MAX_LINE
from triage.scan import parallel
from triage.scan import prefiltered as fastscan
from triage.scan.scanner import Scanner

RESULT = 300_000  # bytes: an engine log's result is ~40-500 KB pickled, more than a default pipe (64 KiB) holds


def _send_result(conn: object) -> None:
    conn.send(b"r" * RESULT)  # type: ignore[attr-defined]
    conn.close()  # type: ignore[attr-defined]


@pytest.mark.skipif(not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods(),
                    reason="pipe sizes are Linux's; workers need fork")
def test_a_worker_done_leaves_before_its_result_is_read() -> None:
    """Its pipe holds the result, so the worker (and the ~20 MB it holds) ends while this process is still busy."""
    started = parallel._start(_send_result)
    assert started is not None
    w, reader = started
    try:
        w.join(timeout=30)
        assert not w.is_alive()
        assert reader.recv() == b"r" * RESULT
    finally:
        parallel._end(w, reader)


def test_partial_lines_move_to_the_front_of_a_mapped_buffer(tmp_path: Path) -> None:
    """A read buffer of a chunk or more is mapped memory; the head read alone (FIRST_PART) leaves nearly a whole chunk
    to move to the front, and each line still comes out whole, at its line number."""
    assert isinstance(fastscan._buffer(CHUNK + MAX_LINE + 1), fastscan.mmap.mmap)
    assert isinstance(fastscan._buffer(1000), bytearray)
    line = "[2026-05-24 00:53:21] filler line {i:07d} with nothing in it for the rules to read\n"
    lines = [line.format(i=i) for i in range(120_000)]  # ~9.6 MB: three chunks, the first read in two parts
    marks = (1_000, 50_000, 51_234, 119_999)
    for i in marks:
        lines[i] = f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {i} MiB\n"
    path = tmp_path / "train.log"
    path.write_text("".join(lines))
    from triage.checks import load_checked_library
    from triage.model import LogFile

    lf = LogFile(path=str(path), rel="train.log", kind="trainer", size=path.stat().st_size)
    res = Scanner(load_checked_library(None)).scan(lf)
    assert lf.lines == len(lines)
    seen = sorted({h.line.lineno for h in res.hits} | {ln.lineno for ln in res.unclaimed})
    assert seen == [i + 1 for i in marks]
