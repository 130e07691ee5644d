"""Small files share their line shapes (issue 13: 200 k small files): every file under COLUMNS_FROM of one process
scans with one registry of numeric line shapes (prefiltered.shapes_for), armed before the file's first byte, so a run
of many small per-rank trainer logs hands their metric and Timer lines over as columns from the second file on. The
report must stay the line-for-line path's, in one process and in batches shared with a worker (whose tapes carry the
rows as the records and readings they stand for)."""

from __future__ import annotations

import json
import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import pytest

from tests.test_columns import counting_rows, slime_log, summary
from triage.analyze import Settings, analyze
from triage.input.discover import discover
from triage.library.rules import load_library
from triage.report import RenderOptions, render
from triage.scan import batches, native, parallel
from triage.scan import prefiltered as fastscan
from triage.scan.scanner import Scanner
from triage.scan.series import RunSeries

pytestmark = [pytest.mark.skipif(not native.available(), reason="the C prefilter is not built"),
              pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")]
LIB = load_library()
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB"
RANKS = 40


def small_run(root: Path) -> tuple[Path, int]:
    """RANKS small per-rank slime logs (one with a NaN grad norm, one ending in an OOM) and a few verifier logs;
    returns the run and the line of the NaN record."""
    run = root / "run"
    (run / "ranks").mkdir(parents=True)
    nan_line = 0
    for r in range(RANKS):
        # rank 5's log is read in two chunks (prefiltered.FIRST_PART, then the rest): its second chunk's rows too
        lines = slime_log(110 if r == 5 else 6, seed=r, nan_at=3 if r == 21 else -1)
        if r == 21:
            nan_line = next(i for i, t in enumerate(lines, 1) if "'train/grad_norm': nan" in t)
        if r == 33:
            lines += ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>', OOM]
        (run / "ranks" / f"train-rank-{r:03d}.log").write_text("\n".join(lines) + "\n")
    (run / "verifier").mkdir()
    for i in range(6):
        (run / "verifier" / f"verify-sample-{i:03d}.log").write_text(
            f"INFO:2026-05-24 00:50:00,173: sample {i} rollout 4: parsed answer \\boxed{{7}} against gold 7: score 1.0\n")
    return run, nan_line


def report(run: Path, monkeypatch: pytest.MonkeyPatch, jobs: str, native_scan: bool = True) -> dict[str, Any]:
    if native_scan:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    monkeypatch.setenv("TRIAGE_JOBS", jobs)
    return json.loads(render("json", analyze(Settings(paths=[str(run)]), LIB), RenderOptions()))


def test_small_files_of_a_run_share_their_shapes_and_give_the_line_for_line_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, nan_line = small_run(tmp_path)
    lines = slime_log(6, seed=0)
    assert fastscan.FIRST_PART < (run / "ranks" / "train-rank-005.log").stat().st_size < fastscan.COLUMNS_FROM
    rows = counting_rows(monkeypatch)
    alone = report(run, monkeypatch, "1")
    # 9 lines a step (4 Timer lines, the iteration line, 3 dicts ... the Timer starts too): from the second file on
    # nearly every one comes as a column
    assert sum(rows) > 0.8 * (RANKS - 1) * 6 * (len(lines) // 6 - 1)
    assert report(run, monkeypatch, "1", native_scan=False) == alone
    monkeypatch.setattr(batches, "MANY", 8)  # in batches of 4, shared with a worker
    monkeypatch.setattr(batches, "FILES", 4)
    assert report(run, monkeypatch, "2") == alone
    evidence = {(e["file"], e["line"]) for f in alone["findings"] for e in f["evidence"]}
    assert ("ranks/train-rank-021.log", nan_line) in evidence or any(
        f"train-rank-021.log:{nan_line}" in json.dumps(f) for f in alone["findings"])
    assert any(f["category"] == "trainer-oom" for f in alone["findings"])


def test_the_run_stores_hold_what_the_line_for_line_path_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run-level metric store and timer readings, record for record and line text for line text (a row's text is
    cut from its chunk, not read back from the file: it is never opened again for it)."""
    run, _ = small_run(tmp_path)
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    files = [lf for lf in discover([str(run)])[0] if lf.status == "read"]

    def stores(native_scan: bool) -> dict[str, Any]:
        scanner = Scanner(LIB)
        if not native_scan:
            scanner.needles = None
        scanner.series = RunSeries()
        for lf in files:
            scanner.scan(lf)
        res = type("R", (), {})()
        res.hits, res.unclaimed, res.events = [], [], scanner.series.close()
        return summary(res)

    def no_reading_back(*_: Any) -> str:
        raise AssertionError("a small file's row read back from its file")

    monkeypatch.setattr(fastscan, "_read_row", no_reading_back)
    rows = counting_rows(monkeypatch)
    fast = stores(True)
    assert sum(rows) > 1000
    assert repr(fast) == repr(stores(False))  # repr: a NaN value is not equal to itself
    assert fast["view"] and fast["timers"]


def test_a_batch_tape_of_rows_travels_and_plays_as_one_process_gives(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's metric rows reach its tape joined into one write-out across its files (batches._Records; pickled as
    their columns' bytes and where each row is in its file, parallel._row_part, prefiltered.JoinedLines), its timer
    rows as the readings they stand for; the tape, pickled and played, gives the stores one process gives, line texts
    included (read back from the files)."""
    run, _ = small_run(tmp_path)
    files = [lf for lf in discover([str(run)])[0] if lf.status == "read"]
    scanner = Scanner(LIB)
    scanner.series = RunSeries()
    rows = counting_rows(monkeypatch)
    was, parallel._scanner = parallel._scanner, scanner
    try:
        _, tape = parallel._scan_batch(files)
    finally:
        parallel._scanner = was
    assert sum(rows) > 1000 and tape is not None
    assert {what for what, _ in tape} <= {batches.RECORD, batches.RECORD_ROWS, batches.TIMER, batches.TIMER_AGAIN}
    assert sum(rows.n for what, rows in tape if what == batches.RECORD_ROWS) > 0.8 * (RANKS - 1) * 6 * 3
    back = pickle.loads(pickle.dumps(tape))
    parts = [p for what, rows in back if what == batches.RECORD_ROWS for p in rows.parts]
    assert all(isinstance(p.line_of, (fastscan.JoinedLines, fastscan.FileLines)) for p in parts)
    # the rows of the batch's files in one write-out, but for the records added one by one between them
    assert sum(what == batches.RECORD_ROWS for what, _ in back) <= sum(what == batches.RECORD for what, _ in back) + 1
    text = (run / "ranks" / "train-rank-007.log").read_text().splitlines()
    lines = [p.line_of(p, i) for p in parts for i in range(p.n)]
    assert all(ln.text == text[ln.lineno - 1] for ln in lines if ln.file == "ranks/train-rank-007.log")
    played = RunSeries()
    batches.play(back, played)
    one = Scanner(LIB)
    one.series = RunSeries()
    for lf in files:
        one.scan(lf)

    def of(series: RunSeries) -> dict[str, Any]:
        res = type("R", (), {})()
        res.hits, res.unclaimed, res.events = [], [], series.close()
        return summary(res)

    assert repr(of(played)) == repr(of(one.series))
