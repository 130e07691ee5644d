"""Baselines: written sorted and line-free, hide known findings, expire, and never hide a new failure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from realcases import case, cli, copy_case  # noqa: F401  (cli is a fixture)


def test_write_baseline_is_sorted_without_line_numbers_or_timestamps(cli, tmp_path: Path) -> None:  # noqa: F811
    run = copy_case("025", tmp_path / "run")
    shutil.copy(case("004") / "train.log", run / "trainer-oom.log")
    path = tmp_path / "baseline.json"
    r = cli(run, "--write-baseline", path, "--format", "json", "--output", tmp_path / "r.json")
    assert r.code == 0
    data = json.loads(path.read_text())
    assert data["triage_baseline"] == 1
    fps = [e["fingerprint"] for e in data["entries"]]
    assert fps == sorted(fps) and len(fps) == 2
    assert {e["rule"] for e in data["entries"]} == {"trainer.cuda-oom", "other.nccl-watchdog-timeout"}
    assert all(set(e) == {"fingerprint", "rule", "file", "title", "reason", "ticket", "expires"} for e in data["entries"])
    assert '"line"' not in path.read_text() and "2025-" not in path.read_text() and "06:24" not in path.read_text()
    report = json.loads((tmp_path / "r.json").read_text())
    assert sorted(f["fingerprint"] for f in report["findings"]) == fps


def test_baseline_round_trip_hides_known_findings(cli, tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "baseline.json"
    assert cli(case("004"), "--write-baseline", path).code == 0
    assert cli(case("004")).code == 1
    r = cli(case("004"), "--baseline", path)
    assert r.code == 0
    assert r.out.startswith("triage: no new problems (1 known)")
    assert "(known, baselined)" in r.out


def test_shifted_lines_still_match_the_baseline(cli, tmp_path: Path) -> None:  # noqa: F811
    run = copy_case("004", tmp_path / "run")
    path = tmp_path / "baseline.json"
    cli(run, "--write-baseline", path)
    log = run / "train.log"
    log.write_bytes(b"[launcher] starting\n" * 7 + log.read_bytes())
    assert cli(run, "--baseline", path).code == 0


def test_a_new_failure_under_a_baseline_still_fails(cli, tmp_path: Path) -> None:  # noqa: F811
    run = copy_case("004", tmp_path / "run")
    path = tmp_path / "baseline.json"
    cli(run, "--write-baseline", path)
    shutil.copy(case("025") / "train.log", run / "nccl.log")
    r = cli(run, "--baseline", path, "--format", "json")
    assert r.code == 1
    findings = json.loads(r.out)["findings"]
    assert {(f["rule"], f["known"]) for f in findings} == {("other.nccl-watchdog-timeout", False),
                                                          ("trainer.cuda-oom", True)}


def annotated_baseline(cli, path: Path, expires: str) -> dict:  # type: ignore[no-untyped-def,type-arg]  # noqa: F811
    """A baseline of case 004 in which a person filled in reason, ticket and expiry."""
    cli(case("004"), "--write-baseline", path)
    data = json.loads(path.read_text())
    data["entries"][0].update(reason="known OOM", ticket="INC-7", expires=expires)
    path.write_text(json.dumps(data))
    return data


def test_expired_entries_stop_hiding(cli, tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "baseline.json"
    data = annotated_baseline(cli, path, "2000-01-31")
    r = cli(case("004"), "--baseline", path)
    assert r.code == 1
    assert "expired on 2000-01-31: the finding gates again" in " ".join(r.out.split())
    data["entries"][0]["expires"] = "2999-12-31"
    path.write_text(json.dumps(data))
    assert cli(case("004"), "--baseline", path).code == 0


def test_rewriting_keeps_reason_ticket_and_expiry(cli, tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "baseline.json"
    annotated_baseline(cli, path, "2999-01-01")
    cli(case("004"), "--write-baseline", path)
    (entry,) = json.loads(path.read_text())["entries"]
    assert (entry["reason"], entry["ticket"], entry["expires"]) == ("known OOM", "INC-7", "2999-01-01")


def test_malformed_baselines_are_a_one_line_usage_error(cli, tmp_path: Path) -> None:  # noqa: F811
    bad = tmp_path / "bad.json"
    for content, says in [("{not json", "invalid JSON"), ('{"entries": []}', "not a triage baseline"),
                          ('{"triage_baseline": 1, "entries": [{"rule": "x"}]}', "entry 1: needs a non-empty string"),
                          ('{"triage_baseline": 1, "entries": [{"fingerprint": "ab", "expires": "soon"}]}',
                           "expires must be a date")]:
        bad.write_text(content)
        r = cli(case("004"), "--baseline", bad)
        assert r.code == 2, content
        assert r.err.count("\n") == 1 and says in r.err and "Traceback" not in r.err
    r = cli(case("004"), "--baseline", tmp_path / "missing.json")
    assert r.code == 2 and "cannot read baseline" in r.err
