"""What the rule library's anchors cost the C prefilter on ordinary text. Each anchor is a needle filed under two
adjacent byte pairs (its rarest in the file's head); every place those pairs occur, the matcher compares the needle.
An anchor made of common pairs (a 3-byte "% |" holds " |", which separates every field of a Megatron iteration line)
costs every run, healthy or not, whatever it finds: s21's rounds added three such anchors and a healthy 1 GiB run
took 8-15 % more CPU. This guards the sum over the library on bench.gen's healthy run (an SGLang engine log, a
Megatron trainer log), so a new costly anchor shows here, with the anchors that cost most."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gen import generate
from triage.checks import load_checked_library
from triage.scan import native
from triage.scan.scanner import Scanner

# checks a MiB, summed over the anchors (stats-row markers aside: they are meant to be found on every row);
# measured at s21's end: 35,870 on the engine log, 181,117 on the trainer log. Room for a few ordinary anchors.
BUDGET = {"sglang-engine-0.log": 39_000, "train.log": 195_000}


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("cost") / "run"
    assert generate(run, 6 * 2**20, healthy=True) == []
    return run


@pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")
@pytest.mark.parametrize("name", sorted(BUDGET))
def test_the_librarys_anchors_cost_the_prefilter_no_more_than_their_budget(healthy: Path, name: str) -> None:
    head = (healthy / name).read_bytes()[: 1 << 20]
    needles = Scanner(load_checked_library(None)).needles
    assert needles is not None
    checks = {a: n for a, n in needles.checks(head).items() if a not in native.STATS_MARKERS}
    per_mib = sum(checks.values()) * (1 << 20) // len(head)
    costliest = sorted(checks.items(), key=lambda kv: -kv[1])[:12]
    assert per_mib <= BUDGET[name], f"{name}: {per_mib} checks a MiB; costliest anchors: {costliest}"


@pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")
def test_a_needle_is_filed_where_its_pairs_are_rarest() -> None:
    needles = native.Needles({"Fatal", "% |", "zq!x"}, set())
    text = b"step 1 | loss 0.5 | lr 1e-5\n" * 100 + b"Fatal Python error\n"
    checks = needles.checks(text)
    assert checks["% |"] == 200  # " |" twice a line; "% " never: both pairs of a 3-byte needle are checked
    assert checks["zq!x"] == 0
    assert checks["Fatal"] == 2  # "Fa" + "at" once each: the rarest window of two adjacent pairs
