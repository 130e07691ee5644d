"""A healthy run of bench.gen's profile (four SGLang engines, a slime/MILES trainer, nothing injected) raises no
finding at warning or above, in any category: the static pool arithmetic that its own stats show never
mattered, its startup phases and its run summary are info."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gen import generate
from triage.analyze import Settings, analyze
from triage.model import SEVERITY_RANK


@pytest.mark.parametrize("size", [2 * 2**20, 12 * 2**20])  # a small log keeps every row; a larger one samples
def test_healthy_bench_run_raises_no_warning(tmp_path: Path, size: int) -> None:
    run = tmp_path / "run"
    assert generate(run, size, healthy=True) == []
    report = analyze(Settings(paths=[str(run)]))
    loud = [(f.rule, f.severity) for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]
    assert loud == []
    rules = {f.rule for f in report.findings}
    assert "config.pool-fits-few-sequences" in rules  # still reported, as info: the run's stats peak below 0.9
    assert report.worst() == "info"


def test_the_healthy_profile_and_the_healthy_flag_write_the_same_run(tmp_path: Path) -> None:
    from bench.gen import main

    assert main([str(tmp_path / "flag"), "--size", "1M", "--healthy"]) == 0
    assert main([str(tmp_path / "profile"), "--size", "1M", "--profile", "healthy"]) == 0
    for name in ("sglang-engine-0.log", "train.log"):
        assert (tmp_path / "flag" / name).read_bytes() == (tmp_path / "profile" / name).read_bytes()
    assert (tmp_path / "flag.truth.json").read_text() == "[]"
