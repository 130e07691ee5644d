"""`triage --ray`: one task per node of a running Ray cluster, each over that node's logs, reports merged.

The cluster is started here on this machine (ray.cluster_utils: a head node and a second node, each its own
raylet with its own node id); each node's log directory comes from the pattern's `{node_id}`. Skipped, saying
so, where Ray is not installed (it is the optional extra `triage[ray]`; CI installs it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'triage[ray]')")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from triage.analyze import Settings, analyze  # noqa: E402
from triage.cluster import ClusterError, triage_cluster  # noqa: E402
from triage.library.rules import load_library  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures/demo-run"


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    second = c.add_node(num_cpus=1)
    c.wait_for_nodes()
    head = c.head_node
    yield c, head.node_id, second.node_id
    ray.shutdown()
    c.shutdown()


def _copy(files: list[str], dest: Path) -> None:
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(DEMO / rel, dest / rel)


def test_each_node_scans_its_own_logs_and_reports_merge(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    c, head_id, second_id = cluster
    _copy(["engines/sglang-engine-0.log", "engines/sglang-engine-1.log"], tmp_path / head_id)
    _copy(["train.log", "verifier.log"], tmp_path / second_id)
    report = triage_cluster(c.address, str(tmp_path / "{node_id}"), load_library([]), [])
    whole = analyze(Settings(paths=[str(DEMO)]))
    assert [(f.rule, f.severity, f.count) for f in report.findings] == [
        (f.rule, f.severity, f.count) for f in whole.findings]
    assert report.errors == []
    top = report.findings[0]
    assert (top.rule, top.first.file, top.first.line) == ("trainer.cuda-oom", "train.log", 11)
    assert second_id[:8] in top.first.node  # the evidence names the node it was read on


def test_a_node_whose_task_fails_is_a_note_and_the_others_merge(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    c, head_id, second_id = cluster
    _copy(["train.log", "verifier.log"], tmp_path / second_id)  # nothing for the head node: its task fails
    report = triage_cluster(c.address, str(tmp_path / "{node_id}"), load_library([]), [], timeout=120)
    assert report.findings[0].rule == "trainer.cuda-oom"
    assert len(report.errors) == 1
    note = report.errors[0]
    assert head_id[:8] in note and "not scanned" in note and "no such file or directory" in note


def test_no_scannable_node_is_an_error(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    c, _, _ = cluster
    with pytest.raises(ClusterError, match="no node could be scanned"):
        triage_cluster(c.address, str(tmp_path / "missing-{node_id}"), load_library([]), [], timeout=120)


def test_cli_ray_reads_address_and_pattern(cluster, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    c, head_id, second_id = cluster
    _copy(["train.log"], tmp_path / second_id)
    _copy(["engines/sglang-engine-0.log"], tmp_path / head_id)
    res = cli("--ray", c.address, str(tmp_path / "{node_id}"), "--format", "json")
    assert res.code == 1, res.err  # the trainer OOM gates as it does in a single scan
    import json

    out = json.loads(res.out)
    assert out["findings"][0]["rule"] == "trainer.cuda-oom"
    assert {f["node"][-8:] for f in out["files"]} == {head_id[:8], second_id[:8]}
