"""Scanning files in worker processes gives the same results as scanning them in this one."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from triage import parallel
from triage.analyze import Settings, analyze
from triage.model import LogFile
from triage.report import RenderOptions, render

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB"
STATS = ("[2026-05-24 00:53:21 TP0] Decode batch, #running-req: 40, #token: 200000, token usage: {u}, "
         "cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: {q}")


def make_run(root: Path) -> Path:
    (root / "sglang-engine-0.log").write_text("\n".join([STATS.format(u="0.40", q=0)] * 200
                                                        + [STATS.format(u="1.00", q=5)] * 3) + "\n")
    (root / "sglang-engine-1.log").write_text("\n".join([STATS.format(u="0.30", q=0)] * 100) + "\nKilled\n")
    (root / "train.log").write_text("step 1: {'train/loss': 0.1}\n" + OOM + "\n")
    return root


def report(root: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> dict:
    monkeypatch.setenv("TRIAGE_JOBS", jobs)
    return json.loads(render("json", analyze(Settings(paths=[str(root)])), RenderOptions()))


def test_two_workers_give_the_report_one_process_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork")
    monkeypatch.setattr(parallel, "BIG", 0)  # every engine log may go to a worker
    run = make_run(tmp_path)
    shared: list[list[str]] = []
    real_share = parallel.share

    def spy(files: list[LogFile], n: int) -> tuple[list[LogFile], list[LogFile]]:
        here, away = real_share(files, n)
        shared.append(sorted(lf.rel for lf in away))
        return here, away

    monkeypatch.setattr(parallel, "share", spy)
    assert report(run, monkeypatch, "2") == report(run, monkeypatch, "1")
    assert shared[0] == ["sglang-engine-0.log", "sglang-engine-1.log"]  # one worker each
    assert shared[1] == []


def die(lf: LogFile) -> None:
    os._exit(9)  # the worker process dies at once, as when the kernel kills it


def test_a_worker_that_dies_is_reported_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork")
    monkeypatch.setattr(parallel, "BIG", 0)
    monkeypatch.setattr(parallel, "_scan_one", die)
    run = make_run(tmp_path)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    rep = analyze(Settings(paths=[str(run)]))
    lost = sorted(e for e in rep.errors if "not scanned" in e)
    assert lost == ["sglang-engine-0.log: not scanned: the process scanning it died (killed or out of memory?)",
                    "sglang-engine-1.log: not scanned: the process scanning it died (killed or out of memory?)"]
    assert any(f.category == "trainer-oom" for f in rep.findings)  # this process's own file still counts


def engines(n: int, size: int) -> list[LogFile]:
    return [LogFile(f"e{i}", f"e{i}", kind="sglang", size=size) for i in range(n)]


def test_small_files_or_one_job_stay_in_this_process() -> None:
    assert parallel.share(engines(4, 10), 2) == (engines(4, 10), [])
    assert parallel.share(engines(4, 1 << 30), 1) == (engines(4, 1 << 30), [])


def test_trainer_logs_stay_here_and_engine_logs_balance_the_load() -> None:
    trainer = LogFile("t", "t", kind="trainer", size=40 << 20)  # ~ 720 MiB of engine-log work
    here, away = parallel.share([trainer] + engines(4, 256 << 20), 2)  # this process and two workers
    assert [lf.rel for lf in here] == ["t"]
    assert [lf.rel for lf in away] == ["e0", "e1", "e2", "e3"]
    here, away = parallel.share(engines(4, 256 << 20), 3)
    assert [lf.rel for lf in here] == ["e0"] and [lf.rel for lf in away] == ["e1", "e2", "e3"]


def test_engine_logs_are_guessed_cheaper_per_byte_than_trainer_logs() -> None:
    engine = LogFile("e", "e", kind="sglang", size=100)
    trainer = LogFile("t", "t", kind="trainer", size=100)
    assert parallel.cost(trainer) > parallel.cost(engine)
