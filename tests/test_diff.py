"""`triage diff OLD NEW`: new / resolved / persisting findings and run-figure regressions; exit 1 on new errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from realcases import case, cli, copy_case, long_run  # noqa: F401  (cli is a fixture)

from triage.report.diff import compare, regressed


def test_a_new_error_fails_the_nightly_comparison(cli, tmp_path: Path) -> None:  # noqa: F811
    old = copy_case("036", tmp_path / "old")
    new = copy_case("036", tmp_path / "new")
    shutil.copy(case("004") / "train.log", new / "train.log")
    r = cli("diff", old, new, "--format", "json")
    assert r.code == 1
    d = json.loads(r.out)
    assert [f["rule"] for f in d["new_findings"]] == ["trainer.cuda-oom"]
    assert [f["rule"] for f in d["persisting"]] == ["serving.kv-pool-saturated"]
    assert d["resolved"] == []


def test_a_resolved_error_passes_and_is_listed(cli, tmp_path: Path) -> None:  # noqa: F811
    old = copy_case("036", tmp_path / "old")
    shutil.copy(case("004") / "train.log", old / "train.log")
    r = cli("diff", old, case("036"))
    assert r.code == 0
    assert r.out.startswith("triage diff: 0 new, 1 resolved, 1 persisting, 0 regression(s)")
    assert "resolved:\n  ERROR   trainer-oom            Trainer ran out of GPU memory  train.log:10  trainer.cuda-oom" in r.out


def test_new_warning_only_fails_with_fail_on_warning(cli, tmp_path: Path) -> None:  # noqa: F811
    assert cli("diff", case("045"), case("036")).code == 0
    assert cli("diff", case("045"), case("036"), "--fail-on", "warning").code == 1


def test_json_reports_work_as_sides(cli, tmp_path: Path) -> None:  # noqa: F811
    old = tmp_path / "old.json"
    assert cli(case("045"), "--format", "json", "--output", old).code == 0
    r = cli("diff", old, case("036"), "--format", "json")
    d = json.loads(r.out)
    assert d["regressions"] == ["peak_token_usage"]
    assert d["figures"]["peak_token_usage"] == {"old": 0.77, "new": 1.0}
    assert d["figures"]["peak_queue"] == {"old": 38.0, "new": 3.0}  # fewer queued: not a regression


def test_figure_regressions_between_two_nights(cli, tmp_path: Path) -> None:  # noqa: F811
    old = long_run(tmp_path / "old", retract_every=3000, first_step=300.0)
    new = long_run(tmp_path / "new", retract_every=1000, first_step=900.0)
    r = cli("diff", old, new)
    assert r.code == 0  # new warnings, no new error
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in r.out.split("run figures (old -> new):\n")[1].splitlines()}
    assert rows["retractions"] == "6 -> 18 REGRESSED"
    assert rows["first_step_time"] == "300 -> 900 REGRESSED"
    assert rows["step_time"] == "104 -> 104"
    assert rows["first_step_time"] and "new:\n  WARNING cold-start" in r.out


def test_tolerances_keep_noise_quiet() -> None:
    assert not regressed("step_time", 100.0, 110.0)
    assert regressed("step_time", 100.0, 130.0)
    assert not regressed("peak_token_usage", 0.90, 0.93)
    assert regressed("truncation_ratio", 0.10, 0.20)
    assert not regressed("retractions", None, 5)
    d = compare({"findings": [], "figures": {"retractions": 0}}, {"findings": [], "figures": {"retractions": 1}}, "a", "b")
    assert d.regressions == ["retractions"]


def test_bad_sides_are_exit_2(cli, tmp_path: Path) -> None:  # noqa: F811
    bad = tmp_path / "r.json"
    bad.write_text('{"not": "a report"}')
    r = cli("diff", bad, case("004"))
    assert r.code == 2 and "not a triage JSON report" in r.err and "Traceback" not in r.err
    assert cli("diff", tmp_path / "missing", case("004")).code == 2
