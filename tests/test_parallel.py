"""Scanning files in worker processes gives the same results as scanning them in this one."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.model import LogFile
from triage.report import RenderOptions, render
from triage.scan import parallel
from triage.scan import prefiltered as fastscan
from triage.scan.scanner import Scanner

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB"
STATS = ("[2026-05-24 00:53:21 TP0] Decode batch, #running-req: 40, #token: 200000, token usage: {u}, "
         "cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: {q}")


def make_run(root: Path) -> Path:
    (root / "sglang-engine-0.log").write_text("\n".join([STATS.format(u="0.40", q=0)] * 200
                                                        + [STATS.format(u="1.00", q=5)] * 3) + "\n")
    (root / "sglang-engine-1.log").write_text("\n".join([STATS.format(u="0.30", q=0)] * 100) + "\nKilled\n"
                                              "[2026-05-24 00:53:30] timer.py:32 - Timer update_weights end "
                                              "(elapsed: 3.2s)\n")  # its event crosses from a worker too
    (root / "train.log").write_text("step 1: {'train/loss': 0.1}\n" + OOM + "\n")
    return root


def report(root: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> dict:
    monkeypatch.setenv("TRIAGE_JOBS", jobs)
    return json.loads(render("json", analyze(Settings(paths=[str(root)])), RenderOptions()))


@needs_fork
def test_workers_give_the_report_one_process_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "BIG", 0)  # every engine log may go to a worker
    (tmp_path / "run").mkdir()
    run = make_run(tmp_path / "run")
    real = parallel._scan_one

    def spy(lf: LogFile):  # type: ignore[no-untyped-def]
        (tmp_path / f"worker-{lf.rel}").write_text("")  # in a worker: this process sees only the file it leaves
        return real(lf)

    monkeypatch.setattr(parallel, "_scan_one", spy)
    slow_here(monkeypatch)
    assert report(run, monkeypatch, "3") == report(run, monkeypatch, "1")
    assert sorted(p.name for p in tmp_path.glob("worker-*")) == ["worker-sglang-engine-0.log",
                                                                 "worker-sglang-engine-1.log"]


def slow_here(monkeypatch: pytest.MonkeyPatch, seconds: float = 0.5) -> None:
    """This process takes a while over its own file (the trainer log), so the workers take the shared ones."""
    real = Scanner.scan
    parent = os.getpid()

    def scan(self: Scanner, lf: LogFile, chunks: object = None):  # type: ignore[no-untyped-def]
        if os.getpid() == parent and lf.kind == "trainer":
            time.sleep(seconds)
        return real(self, lf, chunks)

    monkeypatch.setattr(Scanner, "scan", scan)


def die(lf: LogFile) -> None:
    os._exit(9)  # the worker process dies at once, as when the kernel kills it


@needs_fork
def test_a_worker_that_dies_is_reported_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "BIG", 0)
    monkeypatch.setattr(parallel, "_scan_one", die)
    slow_here(monkeypatch)
    run = make_run(tmp_path)
    monkeypatch.setenv("TRIAGE_JOBS", "3")  # two workers: each takes one engine log and dies
    rep = analyze(Settings(paths=[str(run)]))
    lost = sorted(e for e in rep.errors if "not scanned" in e)
    assert lost == ["sglang-engine-0.log: not scanned: the process scanning it died (killed or out of memory?)",
                    "sglang-engine-1.log: not scanned: the process scanning it died (killed or out of memory?)"]
    assert any(f.category == "trainer-oom" for f in rep.findings)  # this process's own file still counts


@needs_fork
def test_this_process_takes_what_is_left_when_its_own_files_are_done(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "BIG", 0)
    run = make_run(tmp_path)
    monkeypatch.setattr(parallel, "_scan_one", lambda lf: time.sleep(0.6) or die(lf))  # a slow worker, then gone
    slow_here(monkeypatch, 0.3)  # the worker takes the first (longest) engine log meanwhile
    monkeypatch.setenv("TRIAGE_JOBS", "2")  # one worker; this process then takes the other engine log
    rep = analyze(Settings(paths=[str(run)]))
    lost = [e for e in rep.errors if "not scanned" in e]
    assert lost == ["sglang-engine-0.log: not scanned: the process scanning it died (killed or out of memory?)"]
    killed = [(e.file, e.line) for f in rep.findings for e in f.evidence if e.file == "sglang-engine-1.log"]
    assert killed == [("sglang-engine-1.log", 101)]  # engine-1's `Killed`: scanned here


def engines(n: int, size: int) -> list[LogFile]:
    return [LogFile(f"e{i}", f"e{i}", kind="sglang", size=size + i) for i in range(n)]


def test_small_files_or_one_job_stay_in_this_process() -> None:
    assert parallel.split(engines(4, 10), 2) == (engines(4, 10), [])
    assert parallel.split(engines(4, 1 << 30), 1) == (engines(4, 1 << 30), [])
    assert parallel.split(engines(1, 1 << 30), 2) == (engines(1, 1 << 30), [])  # nothing to do beside it


def test_trainer_logs_stay_here_and_engine_logs_are_shared_longest_first() -> None:
    trainer = LogFile("t", "t", kind="trainer", size=40 << 20)
    here, shared = parallel.split([trainer] + engines(4, 256 << 20), 2)
    assert [lf.rel for lf in here] == ["t"]
    assert [lf.rel for lf in shared] == ["e3", "e2", "e1", "e0"]
    here, shared = parallel.split([trainer] + engines(1, 256 << 20), 2)
    assert ([lf.rel for lf in here], [lf.rel for lf in shared]) == (["t"], ["e0"])


@needs_fork
def test_a_result_that_cannot_travel_back_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "BIG", 0)
    monkeypatch.setattr(parallel, "_scan_one", lambda lf: (lambda: lf))  # pickle refuses a lambda
    slow_here(monkeypatch)
    monkeypatch.setenv("TRIAGE_JOBS", "3")
    rep = analyze(Settings(paths=[str(make_run(tmp_path))]))
    lost = sorted(e.split(": not scanned: ")[0] for e in rep.errors if "could not be sent back" in e)
    assert lost == ["sglang-engine-0.log", "sglang-engine-1.log"]


@needs_fork
def test_no_process_to_be_had_means_this_process_scans_everything(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "BIG", 0)
    run = make_run(tmp_path)

    refused = []

    def refuse(self: object) -> None:
        refused.append(self)
        raise BlockingIOError(11, "Resource temporarily unavailable")  # fork() failing with EAGAIN

    monkeypatch.setattr(multiprocessing.get_context("fork").Process, "start", refuse)
    alone = report(run, monkeypatch, "3")
    monkeypatch.undo()
    assert len(refused) == 1  # the first worker could not start: no second was tried
    assert alone == report(run, monkeypatch, "1") and alone["errors"] == []


RAY_STATS = ("({actor} pid={pid}, ip=10.0.0.{pid}) [2026-05-24 00:53:{s:02d} DP0 TP0] Decode batch, #running-req: 40, "
             "#token: 200000, token usage: {u}, cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: {q}")


def driver_log(root: Path, long_line: bool = False) -> Path:
    """One Ray driver log with every process's lines: two engines' stats rows (some at a full pool), colour
    codes, a progress bar's `\\r` redraws, a traceback from the trainer actor; optionally a line longer than a
    chunk."""
    lines = []
    for i in range(6000):
        pid = 1 + i % 2
        full = i % 997 == 0
        row = RAY_STATS.format(actor="SGLangEngine", pid=pid, s=i % 60, u="0.99" if full else "0.41", q=3 if full else 0)
        lines.append(row if i % 5 else "\x1b[36m" + row.replace(") ", ")\x1b[0m ", 1))
        if i == 3000:
            lines.append("(MegatronTrainRayActor pid=9, ip=10.0.0.9) Traceback (most recent call last):")
            lines.append('(MegatronTrainRayActor pid=9, ip=10.0.0.9)   File "train.py", line 3, in step')
            lines.append("(MegatronTrainRayActor pid=9, ip=10.0.0.9) " + OOM)
        if i == 4500:
            lines.append("(main pid=7) rollout:  10%|█         | 1/10\rrollout:  20%|██        | 2/10\rrollout: 100%")
        if long_line and i == 2000:
            lines.append("x" * (300 << 10))
    (root / "driver.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@needs_fork
@pytest.mark.parametrize("long_line", [False, True])
def test_one_big_file_read_by_a_worker_while_this_process_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 long_line: bool) -> None:
    monkeypatch.setattr(parallel, "STAGED_ABOVE", 0)
    monkeypatch.setattr(parallel, "STAGED_MAX_CANDIDATES", 1 << 30)
    monkeypatch.setattr(fastscan, "CHUNK", 64 << 10)  # many chunks, and a long line longer than one
    monkeypatch.setattr(parallel, "CHUNK", 64 << 10)
    (tmp_path / "run").mkdir()
    run = driver_log(tmp_path / "run", long_line)
    real = fastscan.read_chunks

    def spy(*args):  # type: ignore[no-untyped-def]
        (tmp_path / "read-in-a-worker").write_text(str(os.getpid()))
        return real(*args)

    monkeypatch.setattr(fastscan, "read_chunks", spy)
    staged = report(run, monkeypatch, "2")
    assert int((tmp_path / "read-in-a-worker").read_text()) != os.getpid()
    assert staged == report(run, monkeypatch, "1")
    rules = {f["rule"] for f in staged["findings"]}
    assert {"trainer.cuda-oom", "serving.kv-pool-saturated"} <= rules
    assert staged["files"][0]["lines"] == 6000 + 4 + long_line


@needs_fork
def test_a_reading_worker_that_dies_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "STAGED_ABOVE", 0)
    monkeypatch.setattr(parallel, "STAGED_MAX_CANDIDATES", 1 << 30)
    monkeypatch.setattr(fastscan, "CHUNK", 64 << 10)
    real = fastscan.read_chunks

    def die_after_one(*args):  # type: ignore[no-untyped-def]
        for n, item in enumerate(real(*args)):
            if n == 1:
                os._exit(9)
            yield item

    monkeypatch.setattr(fastscan, "read_chunks", die_after_one)
    rep = report(driver_log(tmp_path), monkeypatch, "2")
    assert rep["errors"] == ["driver.log: read stopped early: the process reading it died (killed or out of memory?)"]
    assert rep["files"][0]["status"] == "partial"  # what was parsed counts; the coverage says the rest is missing
    assert rep["files"][0]["reason"].startswith("read stopped early: the process reading it died")


@needs_fork
def test_a_file_dense_with_candidate_lines_is_not_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a retraction storm: in one process the C prefilter counts the family, which a worker reading ahead cannot
    monkeypatch.setattr(parallel, "STAGED_ABOVE", 0)
    storm = "[2026-05-24 00:00:{s:02d} TP0] KV cache pool is full. Retract requests. #retracted_reqs: {n}"
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(storm.format(s=i % 60, n=1 + i % 7) for i in range(20000)) + "\n")
    staged = []
    monkeypatch.setattr(parallel, "_staged_scan", lambda scanner, lf: staged.append(lf) or scanner.scan(lf))
    rep = report(tmp_path, monkeypatch, "2")
    assert staged == []
    assert rep["files"][0]["lines"] == 20000 and "serving.kv-retraction" in {f["rule"] for f in rep["findings"]}
    big = tmp_path / "quiet" / "sglang-engine-0.log"
    big.parent.mkdir()
    big.write_text("\n".join(storm.format(s=i % 60, n=1) if i % 500 == 0 else f"step {i} ok" for i in range(20000)))
    report(big.parent, monkeypatch, "2")
    assert [lf.rel for lf in staged] == ["sglang-engine-0.log"]  # a few candidates: the split pays
