"""Many small files (issue 13): a run's metric records and timer readings go into one store each, so memory is
bounded across the run, not per file; the answers are those of the records themselves."""

from __future__ import annotations

from pathlib import Path

from triage.analyze import Settings, analyze
from triage.input.read import read_text
from triage.library.rules import load_library
from triage.model import LogFile
from triage.parsers.series_store import CAP, TAIL
from triage.scan.scanner import Scanner
from triage.scan.series import RunSeries

LIB = load_library()


def _rank_log(rank: int, steps: int) -> str:
    lines = []
    for s in range(steps):
        lines.append(f"[2026-05-24 00:51:18] timer.py:32 - Timer actor_train end (elapsed: {40 + (rank + s) % 7}.5s)")
        lines.append(f"[2026-05-24 00:51:18] log_utils.py:542 - step {s}: {{'train/loss': -0.0{rank % 10}, "
                     f"'train/grad_norm': 0.{(rank * 7 + s) % 9 + 1}, 'train/step': {s}}}")
        lines.append(f"[2026-05-24 00:51:18] metrics.py:88 - rollout {s}: {{'rollout/raw_reward': 0.{s % 9 + 1}}}")
    return "\n".join(lines) + "\n"


def test_many_rank_logs_share_one_store_of_bounded_size() -> None:
    # 1,000 files of 10 steps (2 records a step): 20,000 records, 10,000 timer lines; one store, one timer series
    scanner = Scanner(LIB)
    scanner.series = RunSeries()
    ends = []
    for rank in range(1000):
        lf = LogFile(path="<t>", rel=f"ranks/train-rank-{rank:05d}.log", kind="trainer")
        res = scanner.scan(lf, read_text(_rank_log(rank, 10).encode()))
        assert not [e for e in res.events if e.kind in ("metric_series", "timer_series", "metrics", "timer")]
        ends.append(lf.lines)
    assert ends == [30] * 1000
    events = scanner.series.close()
    assert [e.kind for e in events] == ["metric_series", "timer_series"]
    store = events[0].fields["store"]
    assert store.total == 20_000
    assert store.sums["train/grad_norm"].n == 10_000 and store.sums["rollout/raw_reward"].n == 10_000
    assert store.thinned
    # bounded across the run: the sample, the tail and the records the summaries point at (a few per key)
    assert store.retained() <= CAP + TAIL + 100
    readings = events[1].fields["timers"]
    assert len(readings) == 7  # 40.5 .. 46.5 s: one event per distinct reading, whichever file printed it
    assert sum(n for _, n in readings) == 10_000
    # the first file to print a reading is its evidence
    assert readings[0][0].line.file == "ranks/train-rank-00000.log" and readings[0][0].line.lineno == 1


def test_a_scanner_without_run_series_keeps_a_store_per_file() -> None:
    scanner = Scanner(LIB)
    lf = LogFile(path="<t>", rel="train.log", kind="trainer")
    res = scanner.scan(lf, read_text(_rank_log(3, 4).encode()))
    (series,) = [e for e in res.events if e.kind == "metric_series"]
    assert series.fields["store"].total == 8 and series.line.lineno == 12


def test_many_small_files_give_the_run_health_of_all_their_records(tmp_path: Path) -> None:
    for rank in range(300):
        (tmp_path / f"train-rank-{rank:03d}.log").write_text(_rank_log(rank, 8))
    report = analyze(Settings(paths=[str(tmp_path)]))
    (summary,) = [f for f in report.findings if f.rule == "health.summary"]
    assert summary.count == 300 * 8 * 2
    assert summary.numbers["stage_seconds"]["Timer actor_train"] == 43.5
    assert summary.numbers["grad_norm_min"] == 0.1 and summary.numbers["grad_norm_max"] == 0.9
    assert (summary.first.file, summary.first.line) == ("train-rank-000.log", 2)
    assert (summary.last.file, summary.last.line) == ("train-rank-299.log", 24)
