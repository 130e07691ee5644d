"""`--export DIR`: findings, engine timelines, trainer series and run figures as Parquet, read back with polars and
checked against the JSON report of the same run; `triage diff` takes an export directory as a side."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from realcases import case, cli, copy_case, long_run  # noqa: F401  (cli is a fixture)


@pytest.fixture
def exported(cli, tmp_path: Path) -> tuple[dict, Path]:  # noqa: F811
    report = tmp_path / "report.json"
    run = long_run(tmp_path / "run")  # an engine timeline, 8 trainer steps, retractions: every table has rows
    r = cli(run, "--format", "json", "--output", report, "--export", tmp_path / "tables", "--fail-on", "never")
    assert r.code == 0 and r.err == ""
    return json.loads(report.read_text()), tmp_path / "tables"


def _points(timelines: list[dict]) -> list[tuple]:
    return sorted((t["source"], t["file"], x, name, v) for t in timelines for name, values in t["series"].items()
                  for x, v in zip(t["x"], values))


def test_the_tables_hold_what_the_json_report_holds(exported: tuple[dict, Path]) -> None:
    data, tables = exported
    assert sorted(p.name for p in tables.iterdir()) == ["engine_timelines.parquet", "figures.parquet",
                                                        "findings.parquet", "trainer_series.parquet"]
    findings = pl.read_parquet(tables / "findings.parquet").sort("rank")
    assert findings["rule"].to_list() == [f["rule"] for f in data["findings"]]
    first = data["findings"][0]["evidence"][0]
    assert (findings["file"][0], findings["line"][0], findings["text"][0]) == (first["file"], first["line"], first["text"])
    assert findings["fingerprint"].to_list() == [f["fingerprint"] for f in data["findings"]]
    assert findings["evidence"].to_list() == [f["evidence"] for f in data["findings"]]
    assert [[k["name"] for k in ks] for ks in findings["knobs"]] == [[k["name"] for k in f["knobs"]]
                                                                      for f in data["findings"]]
    assert "serving.kv-retraction" in findings["rule"].to_list()
    engines = pl.read_parquet(tables / "engine_timelines.parquet")
    assert set(engines["series"]) >= {"token usage", "running requests", "queued requests"}
    assert sorted(engines.iter_rows()) == _points([t for t in data["timelines"] if t["kind"] == "engine"])
    assert engines.height == 4 * len(data["timelines"][0]["x"]) > 100
    trainer = pl.read_parquet(tables / "trainer_series.parquet")
    assert trainer.height == 8 and trainer["value"].max() == 600.0
    assert sorted(trainer.iter_rows()) == _points([t for t in data["timelines"] if t["kind"] != "engine"])
    figures = dict(pl.read_parquet(tables / "figures.parquet").iter_rows())
    assert figures == {k: (None if v is None else float(v)) for k, v in data["figures"].items()}
    assert figures["retractions"] == 12.0 and figures["first_step_time"] == 600.0


def test_diff_reads_an_export_as_it_reads_the_json_report(cli, exported: tuple[dict, Path], tmp_path: Path) -> None:  # noqa: F811
    data, tables = exported
    old = copy_case("004", tmp_path / "old")
    from_json = cli("diff", old, tmp_path / "report.json", "--format", "json")
    from_export = cli("diff", old, tables, "--format", "json")
    assert from_json.code == from_export.code
    a, b = json.loads(from_json.out), json.loads(from_export.out)
    assert [f["fingerprint"] for f in a["new_findings"]] == [f["fingerprint"] for f in b["new_findings"]]
    assert [f["rule"] for f in b["resolved"]] == ["trainer.cuda-oom"] == [f["rule"] for f in a["resolved"]]
    assert "serving.kv-retraction" in [f["rule"] for f in b["new_findings"]]
    assert a["figures"] == b["figures"] and a["regressions"] == b["regressions"]


def test_an_export_over_a_file_or_a_broken_table_is_one_line(cli, tmp_path: Path) -> None:  # noqa: F811
    blocker = tmp_path / "taken"
    blocker.write_text("a file, not a directory")
    r = cli(case("004"), "--export", blocker)
    assert r.code == 2 and r.err.startswith(f"triage: error: {blocker}: cannot write the export") and \
        r.err.count("\n") == 1
    broken = tmp_path / "broken"
    shutil.copytree(tmp_path, broken, ignore=lambda *_: ["broken"])
    (broken / "findings.parquet").write_bytes(b"PAR1 not really")
    r = cli("diff", broken, broken)
    assert r.code == 2 and r.err.startswith(f"triage: error: {broken}: not a readable triage export (")
