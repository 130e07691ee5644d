"""Progress of a long scan on stderr: a rich bar when stderr is a terminal and the run is big; nothing in CI,
in a pipe, or for a run that ends before a bar would help.

The count of bytes scanned lives in shared memory (a multiprocessing Value made before the workers are
forked), so every process adds to the same count as it goes, a chunk at a time; a thread of this process
redraws the bar from it ten times a second. Nothing else changes: the bar is transient (gone when the scan
ends) and the report is printed after it.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from typing import IO, Any

SHOW_ABOVE = 256 << 20  # bytes of input: smaller runs are done in well under a second
REDRAW = 0.1  # seconds between redraws


class Progress:
    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total, self.stream = total, stream
        self.done: Any = multiprocessing.get_context("fork").Value("q", 0)
        self.owner = os.getpid()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None  # started by this process's first add(): after any fork

    def add(self, n: int) -> None:
        """n more bytes scanned (from any process)."""
        with self.done.get_lock():
            self.done.value += n
        if self.thread is None and os.getpid() == self.owner:
            self.thread = threading.Thread(target=self._draw, daemon=True)
            self.thread.start()

    def _draw(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        bar = Bar("scanning", BarColumn(), DownloadColumn(), TimeRemainingColumn(), transient=True,
                  console=Console(file=self.stream, force_terminal=True), auto_refresh=False)
        task = bar.add_task("scanning", total=self.total)
        with bar:
            while not self.stop.wait(REDRAW):
                bar.update(task, completed=self.done.value, refresh=True)

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()


def start(total: int, stream: IO[str] | None = None) -> Progress | None:
    """A bar for `total` bytes, or None when none should be shown."""
    stream = stream if stream is not None else sys.stderr
    if total < SHOW_ABOVE or os.environ.get("CI") or os.environ.get("TRIAGE_NO_PROGRESS") or os.environ.get("TERM") == "dumb":
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):  # a closed or odd stream
        return None
    return Progress(total, stream)
