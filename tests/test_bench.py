"""A small run of the benchmark's generator: the run dir is realistic and every injected failure is found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.gen import DEFAULT_CORPUS, generate, merge_ray, parse_size
from bench.run import GREP_ALTERNATION, recall
from triage.analyze import Settings, analyze
from triage.report import RenderOptions, render

pytestmark = pytest.mark.skipif(not DEFAULT_CORPUS.is_dir(), reason="needs the shared corpus")


def test_parse_size_reads_the_usual_suffixes() -> None:
    assert parse_size("100M") == 100 << 20
    assert parse_size("1G") == 1 << 30
    assert parse_size("1.5K") == 1536


def test_a_generated_run_holds_the_injected_lines_where_the_truth_file_says(tmp_path: Path) -> None:
    run = tmp_path / "run"
    truth = generate(run, 3 << 20, engines=2, seed=1)
    names = sorted(p.name for p in run.iterdir())
    assert names == ["sglang-engine-0.log", "sglang-engine-1.log", "train.log"]
    assert json.loads((tmp_path / "run.truth.json").read_text())[0]["case"] == truth[0].case
    for t in truth:
        lines = (run / t.file).read_text().splitlines()
        block = "\n".join(lines[t.start - 1:t.end])
        assert t.evidence == [] or any(e in block or e.replace("\\'", "'") in block for e in t.evidence), t.case
    engine = (run / "sglang-engine-1.log").read_text().splitlines()
    assert sum("Decode batch, #running-req:" in ln for ln in engine) > len(engine) // 2  # 2026-format stats rows


def test_triage_finds_every_injected_failure_of_a_small_generated_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    truth = generate(run, 3 << 20, engines=2, seed=2)
    report = json.loads(render("json", analyze(Settings(paths=[str(run)])), RenderOptions()))
    found, missing = recall(report, [t.__dict__ for t in truth])
    assert missing == [] and found == len(truth)


def test_the_grep_yardstick_is_a_ten_way_alternation() -> None:
    assert len(GREP_ALTERNATION.split("|")) == 10


def test_the_same_run_as_one_ray_driver_log_keeps_its_failures_where_the_truth_says(tmp_path: Path) -> None:
    files = tmp_path / "files"
    truth = merge_ray(files, generate(files, 3 << 20, engines=2, seed=3), tmp_path / "ray")
    assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == ["driver.log"]
    lines = (tmp_path / "ray" / "driver.log").read_text().splitlines()
    assert sum(len(p.read_text().splitlines()) for p in files.iterdir()) == len(lines)
    assert {ln.split(")", 1)[0] + ")" for ln in lines} == {
        "(SGLangEngine pid=4100, ip=10.0.0.1)", "(SGLangEngine pid=4101, ip=10.0.0.2)",
        "(MegatronTrainRayActor pid=3900, ip=10.0.0.9)"}
    for t in truth:
        block = "\n".join(lines[t.start - 1:t.end])
        assert t.evidence == [] or any(e in block or e.replace("\\'", "'") in block for e in t.evidence), t.case
    report = json.loads(render("json", analyze(Settings(paths=[str(tmp_path / "ray")])), RenderOptions()))
    found, missing = recall(report, [t.__dict__ for t in truth])
    assert missing == [] and found == len(truth)
