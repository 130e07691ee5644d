"""A long scan shows its progress on stderr when a terminal is attached, and nothing in CI or in a pipe."""

from __future__ import annotations

import gzip
import io
import multiprocessing
import os
from pathlib import Path

import pytest

from triage.input.discover import discover
from triage.library.rules import load_library
from triage.scan import progress
from triage.scan.scanner import Scanner

BIG = progress.SHOW_ABOVE


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def not_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.delenv("TRIAGE_NO_PROGRESS", raising=False)


def test_no_bar_in_ci_in_a_pipe_or_for_a_small_run(monkeypatch: pytest.MonkeyPatch) -> None:
    assert progress.start(BIG - 1, Terminal()) is None  # over before a bar would help
    assert progress.start(BIG, io.StringIO()) is None  # a pipe or a file
    monkeypatch.setenv("CI", "true")
    assert progress.start(BIG, Terminal()) is None
    monkeypatch.delenv("CI")
    monkeypatch.setenv("TRIAGE_NO_PROGRESS", "1")
    assert progress.start(BIG, Terminal()) is None
    monkeypatch.delenv("TRIAGE_NO_PROGRESS")
    monkeypatch.setenv("TERM", "dumb")  # a terminal that cannot move its cursor cannot erase a bar
    assert progress.start(BIG, Terminal()) is None
    monkeypatch.setenv("TERM", "xterm-256color")
    assert progress.start(BIG, Terminal()) is not None


def test_a_bar_counts_the_bytes_of_every_process(monkeypatch: pytest.MonkeyPatch) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork")
    monkeypatch.setattr(progress, "REDRAW", 0.01)
    out = Terminal()
    bar = progress.start(3 * BIG, out)
    assert bar is not None
    child = multiprocessing.get_context("fork").Process(target=bar.add, args=(BIG,))  # a worker's bytes
    child.start()
    child.join()
    bar.add(BIG)
    assert bar.done.value == 2 * BIG
    bar.close()
    drawn = out.getvalue()
    assert "scanning" in drawn and "/805.3 MB" in drawn  # the bar of 3 x 256 MiB was drawn, then cleared
    assert bar.thread is not None and not bar.thread.is_alive()


class Count:
    def __init__(self) -> None:
        self.n = 0

    def add(self, n: int) -> None:
        self.n += n


@pytest.mark.parametrize("compressed", [False, True])
def test_the_scan_reports_every_byte_of_a_file(tmp_path: Path, compressed: bool) -> None:
    text = "".join(f"[2026-05-24 00:53:{i % 60:02d}] line {i} Decode batch, #running-req: 1, token usage: 0.10\n"
                   for i in range(60_000))
    path = tmp_path / ("engine.log.gz" if compressed else "engine.log")
    path.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    (lf,), _ = discover([str(path)])
    scanner = Scanner(load_library())
    scanner.progress = count = Count()  # type: ignore[assignment]
    scanner.scan(lf)
    assert count.n == os.path.getsize(path) == lf.size


def test_ctrl_c_while_the_bar_is_up_says_interrupted_after_the_bar_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import time

    from realcases import case

    from triage import cli
    from triage.scan import parallel

    monkeypatch.setattr(progress, "REDRAW", 0.01)
    monkeypatch.setattr(progress, "SHOW_ABOVE", 1)  # a bar for the small case
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)  # the bar and the message share the terminal

    def interrupted_scan(scanner, files):  # type: ignore[no-untyped-def]
        scanner.progress.add(1)
        for _ in range(500):  # the bar is drawn (bounded wait: 5 s)
            if "scanning" in terminal.getvalue():
                break
            time.sleep(0.01)
        raise KeyboardInterrupt

    monkeypatch.setattr(parallel, "scan_files", interrupted_scan)
    monkeypatch.setattr(sys, "argv", ["triage", str(case("004"))])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 130
    drawn = terminal.getvalue()
    bar, message = drawn.rsplit("triage: interrupted\n", 1)
    assert "scanning" in bar and message == ""  # the message is the last thing written: after the bar's erase
    assert drawn.count("interrupted") == 1
