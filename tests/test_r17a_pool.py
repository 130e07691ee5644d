"""A run of many small files: the workers discovery forks are kept for the scan (parallel.Pool), fed their jobs through
pipes, so they hold none of the run's LogFiles (a worker forked after discovery held a copy of each, PSS 303 MB at
257 k files); the report stays the one a single process gives, whatever worker dies and when."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from test_small_files import mixed_tree, needs_fork, report, small_batches

from triage.analyze import Settings, analyze
from triage.input import discover
from triage.library.rules import load_library
from triage.scan import parallel
from triage.scan.scanner import Scanner


def counted_forks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    started: list[str] = []
    real = parallel._start

    def start(target: Any, *args: Any) -> Any:
        started.append(target.__name__)
        return real(target, *args)

    monkeypatch.setattr(parallel, "_start", start)
    return started


@needs_fork
def test_discovery_and_the_scan_of_small_files_share_one_worker_forked_before_any_file_is_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path, ranks=300, samples=300)  # past batches.MANY: discovery is shared, then the batches
    alone = report(run, monkeypatch, "1")
    started = counted_forks(monkeypatch)
    assert report(run, monkeypatch, "2") == alone
    assert started == ["_serve"]  # one worker, from discovery to the end of the scan
    assert parallel._pool is None and parallel._prepared is None  # ended with the analysis
    assert not parallel._open_writers and not parallel._open_readers


@needs_fork
def test_the_pool_ends_when_the_analysis_fails_after_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path, ranks=300, samples=10)
    monkeypatch.setenv("TRIAGE_JOBS", "2")

    def broken(*args: Any) -> Any:
        raise RuntimeError("scan broke")

    monkeypatch.setattr(parallel, "_pooled_scan", broken)
    with pytest.raises(RuntimeError, match="scan broke"):
        analyze(Settings(paths=[str(run)]))
    assert parallel._pool is None and parallel._prepared is None and not parallel._open_writers


@needs_fork
def test_a_run_with_few_files_forks_no_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path, ranks=6, samples=6)
    started = counted_forks(monkeypatch)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    analyze(Settings(paths=[str(run)]))
    assert started == []


def raise_in_worker(rel: str, parent: int = os.getpid()) -> Any:
    if os.getpid() != parent and rel.endswith("-150.log"):
        raise ValueError("odd file")
    if os.getpid() != parent and rel.endswith("-250.log"):
        os._exit(9)  # killed in a map chunk: the chunk (and those it had not started) are done here
    return rel.upper()


@needs_fork
def test_a_pooled_map_gives_the_plain_map_when_its_worker_raises_or_dies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    items = [f"ranks/train-rank-{i:03d}.log" for i in range(3000)]
    parallel.prepare(Scanner(load_library()))
    try:
        assert parallel.map_shared(raise_in_worker, items) == [x.upper() for x in items]
    finally:
        parallel.prepare(None)
    assert parallel._pool is None


@needs_fork
def test_a_pooled_discovery_finds_what_one_process_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path, ranks=300, samples=300)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    alone, _ = discover.discover([str(run)])
    parallel.prepare(Scanner(load_library()))
    try:
        pooled, _ = discover.discover([str(run)], mapper=parallel.map_shared)
        assert parallel._pool is not None and len(parallel._pool.workers) == 1  # kept for the scan
    finally:
        parallel.prepare(None)
    fields = ("path", "rel", "kind", "status", "reason", "size", "compression")
    assert [[getattr(lf, f) for f in fields] for lf in pooled] == [[getattr(lf, f) for f in fields] for lf in alone]


@needs_fork
def test_a_worker_that_dies_idle_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed between jobs (the kernel's OOM killer picks a process, not a moment): the jobs it had been sent and not
    started go back to the queue, and this process scans them."""
    run = mixed_tree(tmp_path, ranks=40, samples=40)
    small_batches(monkeypatch)
    alone = report(run, monkeypatch, "1")
    real, parent = parallel._serve, os.getpid()

    class Dying:  # its pipe of jobs: the worker is killed as its first batch arrives (discovery's chunks it does)
        def __init__(self, conn: Any) -> None:
            self.conn = conn

        def recv(self) -> Any:
            msg = self.conn.recv()
            if msg is not None and msg[0] == "batch":
                os._exit(9)
            return msg

    def serve(jobs: Any, taking: Any, conn: Any) -> None:
        real(Dying(jobs) if os.getpid() != parent else jobs, taking, conn)

    monkeypatch.setattr(parallel, "_serve", serve)
    monkeypatch.setattr(parallel.batches, "MANY", 8)
    got = report(run, monkeypatch, "2")
    assert got == alone
    assert not any("not scanned" in f["reason"] for f in got["files"])
