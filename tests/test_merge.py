"""`triage merge`: the JSON reports of parts of a run (one per node) give the verdict one scan of the whole run
gives — the same findings, ranking, counts, fingerprints and exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.gen import generate
from triage.analyze import Settings, analyze
from triage.library.rules import load_library
from triage.report import merge as mg
from triage.report.json_format import as_dict

ROOT = Path(__file__).resolve().parent.parent
MULTI = ROOT / "fixtures/real/077-multi-slime-trainer-illegal-memory-access-plus-miles-engine/input"


def split(run: Path, dest: Path, on_a) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """Copy the run's files into two node directories, keeping their paths relative to the run root."""
    a, b = dest / "node-a", dest / "node-b"
    for f in sorted(p for p in run.rglob("*") if p.is_file()):
        rel = f.relative_to(run)
        target = (a if on_a(rel) else b) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    return a, b


def node_report(path: Path, out: Path) -> Path:
    out.write_text(json.dumps(as_dict(analyze(Settings(paths=[str(path)])))), encoding="utf-8")
    return out


def shape(report) -> list[tuple[str, str, str, int, str]]:  # type: ignore[no-untyped-def]
    return [(f.rule, f.category, f.severity, f.count, f.fingerprint) for f in report.findings]


def is_engine(rel: Path) -> bool:
    """Engines (and the rollout driver that serves them) on node-a; the trainer and the verifier on node-b."""
    return not rel.name.startswith(("train", "verifier"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("gen") / "run"
    generate(run, 3 << 20, engines=3)
    return run


@pytest.mark.parametrize("which", ["demo", "multi", "generated"])
def test_merged_parts_equal_the_whole(which: str, tmp_path: Path, generated: Path) -> None:
    run = {"demo": ROOT / "fixtures/demo-run", "multi": MULTI, "generated": generated}[which]
    whole = analyze(Settings(paths=[str(run)]))
    a, b = split(run, tmp_path, is_engine)
    assert any(a.rglob("*")) and any(b.rglob("*")), "both nodes hold files"
    parts = [node_report(a, tmp_path / "node-a.json"), node_report(b, tmp_path / "node-b.json")]
    merged = mg.merge_files(parts, load_library([]))
    assert shape(merged) == shape(whole)
    assert merged.worst() == whole.worst()
    assert sorted(f.rel for f in merged.files) == sorted(f.rel for f in whole.files)
    assert {f.node for f in merged.files} == {"node-a", "node-b"}


def test_evidence_names_its_node_and_a_symptom_folds_across_nodes(tmp_path: Path) -> None:
    """The demo run's trainer OOM (train.log) is on node-b; its engines on node-a. Every evidence line says
    which node it was read on, and the trainer finding's first line is train.log:11 as in a single scan."""
    a, b = split(ROOT / "fixtures/demo-run", tmp_path, is_engine)
    parts = [node_report(a, tmp_path / "node-a.json"), node_report(b, tmp_path / "node-b.json")]
    merged = mg.merge_files(parts, load_library([]))
    top = merged.findings[0]
    assert (top.rule, top.first.file, top.first.line, top.first.node) == ("trainer.cuda-oom", "train.log", 11, "node-b")
    assert all(e.node in {"node-a", "node-b"} for f in merged.findings for e in f.evidence)
    engine_files = {e.file for f in merged.findings for e in f.evidence if e.node == "node-a"}
    assert engine_files and all(name.startswith("engines/") for name in engine_files)


def test_cli_merge_gates_and_renders(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    a, b = split(ROOT / "fixtures/demo-run", tmp_path, is_engine)
    parts = [node_report(a, tmp_path / "node-a.json"), node_report(b, tmp_path / "node-b.json")]
    res = cli("merge", *parts, "--format", "json")
    assert res.code == 1  # an error finding: the same gate as a scan
    out = json.loads(res.out)
    assert out["findings"][0]["rule"] == "trainer.cuda-oom"
    assert {f["node"] for f in out["files"]} == {"node-a", "node-b"}


def test_incompatible_or_broken_reports_are_one_line_errors(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    good = node_report(ROOT / "fixtures/demo-run", tmp_path / "good.json")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(json.loads(good.read_text()) | {"version": "9.0.0"}), encoding="utf-8")
    typed = tmp_path / "typed.json"
    data = json.loads(good.read_text())
    data["findings"][0]["count"] = "many"
    typed.write_text(json.dumps(data), encoding="utf-8")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000, encoding="utf-8")
    for bad, words in [(old, "written by triage 9.0.0"), (typed, "'count'"), (deep, "not a triage JSON report"),
                       (tmp_path, "not a regular file")]:
        with pytest.raises(mg.MergeError) as e:
            mg.merge_files([good, bad], load_library([]))
        assert words in str(e.value) and str(bad) in str(e.value)
        res = cli("merge", good, bad)
        assert res.code == 2
        assert res.err.count("\n") == 1 and "Traceback" not in res.err and str(bad) in res.err


def test_a_merge_of_merges_keeps_the_first_node_names(tmp_path: Path) -> None:
    a, b = split(ROOT / "fixtures/demo-run", tmp_path, is_engine)
    ra, rb = node_report(a, tmp_path / "node-a.json"), node_report(b, tmp_path / "node-b.json")
    once = mg.merge_files([ra, rb], load_library([]))
    (tmp_path / "both.json").write_text(json.dumps(as_dict(once)), encoding="utf-8")
    again = mg.merge_files([tmp_path / "both.json"], load_library([]))
    assert shape(again) == shape(once)
    assert {f.node for f in again.files} == {"node-a", "node-b"}
