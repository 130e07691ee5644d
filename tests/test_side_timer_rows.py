"""Timer lines of a Ray actor with a side (slime's `(MegatronTrainRayActor pid=..., ip=...) ... Timer X end (elapsed:
Ns)` in a Ray driver log) come as columns of the C prefilter, not as lines: a side lookup reads them from the file's
SideRows, and every hit gets the side the line-for-line path gives it."""

from __future__ import annotations

import random
from array import array
from pathlib import Path
from typing import Any

import pytest

from tests.test_columns import LIB, counting_rows, report_json, same_both_ways, scan, summary, write
from triage.model import Line
from triage.scan import native
from triage.scan.origins import SideRows

pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")

TRAINER = "(MegatronTrainRayActor pid=3900, ip=10.0.0.9) "
DRIVER = "(TaskRunner pid=87031, ip=10.0.0.1) "
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.02 GiB is free.")


def ray_log(steps: int, seed: int = 5, prefix: str = TRAINER) -> list[str]:
    """A Ray driver log: each step, a trainer actor's four Timer lines and a rollout line of another process."""
    rng = random.Random(seed)
    out = []
    for s in range(steps):
        t = f"[2026-05-24 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}] "
        out += [prefix + t + "timer.py:24 - Timer train_wait start",
                prefix + t + f"timer.py:32 - Timer train_wait end (elapsed: {rng.uniform(0.5, 9):.1f}s)",
                prefix + t + "timer.py:24 - Timer actor_train start",
                prefix + t + f"timer.py:32 - Timer actor_train end (elapsed: {rng.uniform(40, 60):.1f}s)",
                f"(RolloutManager pid=4000, ip=10.0.0.2) {t}generated batch {s} of {rng.randint(200, 300)} samples"]
    return out


FILLER = [f"(RolloutManager pid=4000, ip=10.0.0.2) waiting for batch {k}" for k in range(200)]


def sides(path: Path, native_path: bool) -> list[tuple[str, int, str]]:
    return [(h.rule, h.line.lineno, h.side) for h in scan(path, native=native_path).hits]


def test_a_ray_actors_timer_lines_come_as_columns_and_still_give_a_hit_near_them_the_actors_side(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ray_log(3000)
    near = lines[:7000] + FILLER[:6] + [OOM] + lines[7000:]  # 7 lines after a timer row
    near_at = 7000 + 6 + 1
    far = FILLER[6:106] + [OOM] + FILLER[106:206]  # more than 60 lines from any timer either side
    lines = near[:11000] + far + near[11000:]
    far_at = 11000 + 100 + 1
    log = write(tmp_path, lines, "driver.log")
    rows = counting_rows(monkeypatch)
    report, _ = same_both_ways(log, monkeypatch)
    assert sum(rows) > 3000 * 3  # the timer lines came as rows (all but the first 64 KiB's)
    fast, slow = sides(log, True), sides(log, False)
    assert fast == slow
    got = {ln: side for _, ln, side in fast}
    assert got[near_at] == "trainer"  # the actor of the Timer rows just before it
    assert got[far_at] != "trainer"
    assert any(f"driver.log:{near_at}" == f"{e['file']}:{e['line']}" for f in report["findings"] for e in f["evidence"])


def test_a_claim_made_early_keeps_the_timer_rows_near_it_while_many_more_come(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ray_log(12000, seed=6)
    at = 3000 * 5 + 3  # after the first 64 KiB; more than SideRows.COMPACT rows follow it
    lines = lines[:at] + FILLER[:5] + [OOM] + lines[at:]
    log = write(tmp_path, lines, "driver.log")
    same_both_ways(log, monkeypatch)
    fast = sides(log, True)
    assert fast == sides(log, False)
    assert ("trainer" in {side for _, ln, side in fast if ln == at + 6})


def test_a_relaying_actors_timer_rows_name_the_driver_as_its_lines_did(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ray_log(3000, seed=7, prefix=DRIVER)
    lines = lines[:9000] + FILLER[:8] + [OOM] + lines[9000:]
    log = write(tmp_path, lines, "driver.log")
    rows = counting_rows(monkeypatch)
    same_both_ways(log, monkeypatch)
    assert sum(rows) > 3000 * 3
    assert sides(log, True) == sides(log, False)


def test_the_timer_store_is_the_same_whichever_way_the_lines_came(tmp_path: Path) -> None:
    log = write(tmp_path, ray_log(4000, seed=8), "driver.log")
    fast, slow = summary(scan(log, lib=LIB)), summary(scan(log, native=False, lib=LIB))
    assert repr(fast["timers"]) == repr(slow["timers"])
    assert len(fast["timers"]) > 100


def test_side_rows_nearest_picks_as_the_context_does() -> None:
    rows = SideRows((60, 25), None)
    rows.add([(120, "trainer"), (100, "driver")])
    assert rows.linenos == [100, 120]
    assert rows.nearest(110, (60, 25)) == (100, "driver")  # a tie: the earlier
    assert rows.nearest(111, (60, 25)) == (120, "trainer")
    assert rows.nearest(130, (5, 25)) is None  # 120 is 10 lines before: out of the window
    assert rows.nearest(90, (60, 10)) == (100, "driver")
    assert rows.nearest(89, (60, 10)) is None


def test_side_rows_keep_what_a_pending_claim_or_a_later_line_can_reach() -> None:
    claim = Line("driver.log", 500, "x", "x", "", "", 1)
    pending: list[Any] = [(claim, [])]
    rows = SideRows((60, 25), pending)
    rows.add([(ln, "trainer") for ln in range(1, 5001)])  # compacts
    kept = set(rows.linenos)
    assert set(range(440, 526)) <= kept  # the claim's window: 60 lines before it, 25 after
    assert 439 not in kept and 526 not in kept and 1 not in kept
    assert set(range(4940, 5001)) <= kept  # what a later line's window can reach
    assert rows.nearest(500, (60, 25)) == (500, "trainer")
    assert len(rows.linenos) == len(rows.sides) < 200


def test_a_report_of_the_bench_like_log_is_the_same_with_and_without_columns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ray_log(2500, seed=9)
    lines = lines[:8000] + ["Traceback (most recent call last):", '  File "/x/slime/train.py", line 12, in main',
                            "    train()", OOM] + lines[8000:]
    log = write(tmp_path, lines, "driver.log")
    fast = report_json(log.parent, monkeypatch, True)
    monkeypatch.setenv("TRIAGE_NO_COLUMNS", "1")
    assert fast == report_json(log.parent, monkeypatch, True)


@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 300])
@pytest.mark.parametrize("first", [0, 5])
def test_a_rising_step_columns_statistics_are_those_of_the_general_loop(n: int, first: int) -> None:
    """col_stats answers a rising whole-number column (a step column) without its loops: the same tuple as the store's
    own column_stats, and the top candidates its last TOP rows."""
    from triage.parsers.series_store import TOP, column_stats

    values = [float(first + 3 * i + (i % 2)) for i in range(n)]
    vals, stats = native._linescan.col_join([array("d", values).tobytes()], 1, -1, -1)
    assert stats[0][:7] == column_stats(values)[:7]
    assert stats[0][6] == list(range(max(0, n - TOP), n))
    assert stats[0][7] is True
    # one value out of order: the general loop, and the column is not rising
    if n > 2:
        values[1], values[2] = values[2], values[1]
        _, stats = native._linescan.col_join([array("d", values).tobytes()], 1, -1, -1)
        assert stats[0][:7] == column_stats(values)[:7] and stats[0][7] is False
