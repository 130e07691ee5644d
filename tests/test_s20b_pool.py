"""Many small files with flat memory (issues 13/16): the workers of a run of many files are forked during discovery's
walk (scan/parallel.py soon), while this process holds the objects of a few files, and are sent their jobs down a
pipe; the report is the one a single process gives, whatever worker dies."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest
from test_small_files import mixed_tree, small_batches

from triage.analyze import Settings, analyze
from triage.checks import load_checked_library
from triage.input import discover
from triage.model import LogFile
from triage.report import RenderOptions, render
from triage.scan import batches, parallel
from triage.scan.scanner import Scanner
from triage.scan.series import RunSeries

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
PARENT = os.getpid()


def report(run: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> dict[str, Any]:
    monkeypatch.setenv("TRIAGE_JOBS", jobs)
    return json.loads(render("json", analyze(Settings(paths=[str(run)])), RenderOptions()))


def forks_seen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of files the walk had found when the pool was forked (one entry a pool)."""
    seen: list[int] = []
    real = parallel.soon

    def spy(found: int) -> None:
        had = parallel._pool
        real(found)
        if had is None and parallel._pool is not None:
            seen.append(found)

    monkeypatch.setattr(parallel, "soon", spy)
    return seen


def worker_marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each batch a worker scans leaves a marker file in the returned directory."""
    marks = tmp_path / "marks"
    marks.mkdir()
    real = parallel._scan_batch

    def spy(files: list[LogFile]) -> Any:
        if os.getpid() != PARENT:
            (marks / files[0].rel.replace("/", "_")).write_text(str(len(files)))
        return real(files)

    monkeypatch.setattr(parallel, "_scan_batch", spy)
    return marks


@needs_fork
def test_workers_forked_during_the_walk_give_the_report_one_process_gives(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path)
    small_batches(monkeypatch)  # MANY = 8: the pool is forked when the walk has found 8 files of 54
    alone = report(run, monkeypatch, "1")
    seen = forks_seen(monkeypatch)
    marks = worker_marks(tmp_path, monkeypatch)
    pooled = report(run, monkeypatch, "2")
    assert seen == [8]
    assert list(marks.iterdir()), "the worker scanned no batch"
    assert pooled == alone
    assert parallel._pool is None  # the pool ends with the scan
    assert not multiprocessing.active_children()


@needs_fork
def test_few_files_fork_no_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path, ranks=2, samples=2)
    seen = forks_seen(monkeypatch)
    rep = report(run, monkeypatch, "2")
    assert seen == []
    assert any(f["category"] == "trainer-oom" for f in rep["findings"])


@needs_fork
def test_a_pool_worker_that_dies_loses_the_batch_it_took_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path)
    small_batches(monkeypatch)
    seen = forks_seen(monkeypatch)
    real = parallel._scan_batch

    def die_in_worker(files: list[LogFile]) -> Any:
        if os.getpid() != PARENT:
            os._exit(9)  # killed as the kernel kills it: no result, no goodbye
        return real(files)

    monkeypatch.setattr(parallel, "_scan_batch", die_in_worker)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    rep = analyze(Settings(paths=[str(run)]))
    assert seen == [8]
    lost = [f.rel for f in rep.files if f.status == "unreadable" and "not scanned" in f.reason]
    assert len(lost) == batches.FILES  # the batch it had said it took; those sent after it were scanned here
    assert all(e.endswith("not scanned: the process scanning it died (killed or out of memory?)")
               for e in rep.errors if "not scanned" in e)
    assert any(f.category == "trainer-oom" for f in rep.findings)


def square_or_die(x: int) -> int:
    if x == 300 and os.getpid() != PARENT:
        os._exit(9)
    return x * x


@needs_fork
def test_the_pool_maps_as_the_plain_map_and_redoes_what_a_dead_worker_had(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    items = list(range(3000))
    with parallel.early(Scanner(load_checked_library(None))):
        parallel.soon(batches.MANY)
        assert parallel._pool is not None and len(parallel._pool.members) == 1
        assert parallel.map_shared(square_or_die, items) == [x * x for x in items]
    assert parallel._pool is None


@needs_fork
def test_discovery_through_the_pool_finds_what_one_process_finds(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path, ranks=300, samples=300)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    alone, _ = discover.discover([str(run)])
    seen = forks_seen(monkeypatch)
    with parallel.early(Scanner(load_checked_library(None))):
        pooled, _ = discover.discover([str(run)], mapper=parallel.map_shared, soon=parallel.soon)
        assert parallel._pool is not None
    assert seen == [batches.MANY]  # forked while the walk had found 256 of 606 files
    fields = ("path", "rel", "kind", "status", "reason", "size", "compression")
    assert [[getattr(lf, f) for f in fields] for lf in pooled] == [[getattr(lf, f) for f in fields] for lf in alone]


def test_tapes_of_two_processes_give_the_store_one_process_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shape learnt by two processes is two shape objects, so a joined write-out holds a part of each for one tag, not
    in log order: the tag's last record is the greatest position of them, not the last part's (the run-health finding
    cited rank 21's record as the last of 24 ranks when this process scanned batches 3, 4 and 6 and a worker 0-2, 5)."""
    run = mixed_tree(tmp_path)
    small_batches(monkeypatch)
    lib = load_checked_library(None)
    files, _ = discover.discover([str(run)])
    files = [f for f in files if f.status == "read" and f.kind in ("trainer", "verifier", "text")]

    def tags(who_first: dict[int, int]) -> dict[Any, Any]:
        scanners = [Scanner(lib), Scanner(lib)]
        for s in scanners:
            batches.teach(s.needles, files)
        _, small = batches.split(files)
        tapes: dict[int, Any] = {}
        for who in (0, 1):  # each "process" scans its batches in order, with shapes learnt from its own before
            for i in range(len(small)):
                if who_first.get(i, 1) == who:
                    s = scanners[who]
                    s.series = RunSeries()
                    monkeypatch.setattr(parallel, "_scanner", s)
                    tapes[i] = parallel._scan_batch(small[i])[1]
        series = RunSeries()
        for i in range(len(small)):
            if tapes[i]:
                batches.play(tapes[i], series)
        ev = series.close()[0]
        return dict(ev.fields["store"].tags)

    alone = tags({})
    assert tags({0: 0, 1: 0, 2: 0, 5: 0}) == alone
    assert alone[("slime", "step")][2] == 206  # the last step record: rank 23's
