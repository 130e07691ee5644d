"""Memory of a run with forked workers (issue 16): the parent trims malloc's free pages before it forks, a worker
reads smaller chunks than the parent does, and the report is the one a single process gives."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from tests.test_parallel import report
from triage.scan import parallel
from triage.scan import prefiltered as fastscan

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
STATS = ("[2026-05-24 00:53:{s:02d} TP0] Decode batch, #running-req: 40, #token: 200000, token usage: {u}, "
         "cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: {q}")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB"


def engine_run(root: Path) -> Path:
    """Two engine logs of ~150 KB each (many chunks of a small worker read), one under KV pressure at its end."""
    for e, (u, tail) in enumerate((("0.40", "0.99"), ("0.30", "0.35"))):
        rows = [STATS.format(s=i % 60, u=u, q=0) for i in range(900)]
        rows += [STATS.format(s=i % 60, u=tail, q=7) for i in range(40)]
        (root / f"sglang-engine-{e}.log").write_text("\n".join(rows) + "\n")
    (root / "train.log").write_text("step 1: {'train/loss': 0.1}\n" + OOM + "\n")
    return root


@needs_fork
def test_a_worker_reads_smaller_chunks_and_gives_the_report_one_process_gives(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "BIG", 0)  # every engine log may go to a worker
    monkeypatch.setattr(parallel, "WORKER_READ", 16 << 10)  # a chunk of ~100 rows: runs cross chunk ends
    (tmp_path / "run").mkdir()
    run = engine_run(tmp_path / "run")
    real = fastscan.read_chunks

    def spy(needles, lf, *args):  # type: ignore[no-untyped-def]
        if os.getpid() != parent:  # in a worker: what it reads at a time
            (tmp_path / f"read-{lf.rel}").write_text(f"{fastscan.read_size} {fastscan.rows_chunk}")
        return real(needles, lf, *args)

    parent = os.getpid()
    monkeypatch.setattr(fastscan, "read_chunks", spy)
    workers = report(run, monkeypatch, "3")
    assert workers == report(run, monkeypatch, "1")
    assert fastscan.read_size is None and fastscan.rows_chunk == fastscan.ROWS_CHUNK  # this process's, untouched
    seen = {p.name: p.read_text() for p in tmp_path.glob("read-*")}
    assert seen and set(seen.values()) == {f"{16 << 10} {16 << 10}"}
    rules = {f["rule"] for f in workers["findings"]}
    assert "trainer.cuda-oom" in rules
    assert {f["path"]: f["lines"] for f in workers["files"]}["sglang-engine-0.log"] == 940


@needs_fork
def test_the_heap_is_trimmed_before_workers_are_forked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "BIG", 0)
    (tmp_path / "run").mkdir()
    run = engine_run(tmp_path / "run")
    calls: list[str] = []
    real_trim, real_start = parallel.trim, parallel._start
    monkeypatch.setattr(parallel, "trim", lambda: (calls.append("trim"), real_trim())[1])
    monkeypatch.setattr(parallel, "_start", lambda *a: (calls.append("fork"), real_start(*a))[1])
    report(run, monkeypatch, "2")
    assert calls and calls[0] == "trim" and "fork" in calls


def test_trim_is_harmless_without_workers() -> None:
    parallel.trim()
    parallel.trim()  # the C library's function is looked up once
    assert parallel._malloc_trim is not None


def test_a_file_of_a_walk_keeps_no_path_of_its_own(tmp_path: Path) -> None:
    import pickle

    from triage.input.discover import discover
    from triage.model import LogFile, own_path

    (tmp_path / "ranks").mkdir()
    (tmp_path / "ranks" / "train-rank-0.log").write_text("step 1\n")
    (tmp_path / "odd\x01name.log").write_text("x\n")
    files, problems = discover([str(tmp_path)], mapper=parallel.map_shared)
    assert not problems
    by_rel = {lf.rel: lf for lf in files}
    plain, odd = by_rel["ranks/train-rank-0.log"], by_rel["odd\\x01name.log"]
    assert own_path(plain) is None and plain.path == os.path.join(str(tmp_path), "ranks", "train-rank-0.log")
    assert plain._dir == os.path.join(str(tmp_path), "") and all(lf._dir is plain._dir for lf in files if lf._dir)
    assert own_path(odd) == os.path.join(str(tmp_path), "odd\x01name.log")  # its name is printed escaped
    sent = pickle.dumps([plain, plain])
    assert plain.path.encode() not in sent  # a worker's message holds the root once and the rel, not the path
    back = pickle.loads(sent)[0]
    assert back == plain and back.path == plain.path and own_path(back) is None
    given = LogFile(path="/a/b.log", rel="b.log")
    assert own_path(given) == "/a/b.log" == pickle.loads(pickle.dumps(given)).path


def test_files_of_several_roots_keep_their_paths(tmp_path: Path) -> None:
    from triage.input.discover import discover
    from triage.model import own_path

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_text("step 1\n")
    files, _ = discover([str(tmp_path / "a"), str(tmp_path / "b")])
    assert [(lf.rel, lf.path) for lf in files] == [(str(tmp_path / n / "train.log"), str(tmp_path / n / "train.log"))
                                                   for n in ("a", "b")]
    assert all(own_path(lf) == lf.path for lf in files)


def test_a_walk_lists_links_out_of_the_run_and_reads_the_rest(tmp_path: Path) -> None:
    from triage.input.discover import discover

    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "b.log").write_text("x\n")
    (run / "a.log").write_text("y\n")
    (run / "sub" / "c.log").write_text("z\n")
    (tmp_path / "secret").write_text("s\n")
    (run / "link.log").symlink_to(tmp_path / "secret")
    (run / "inside.log").symlink_to(run / "a.log")
    files, _ = discover([str(run)])
    assert [(lf.rel, lf.kind if lf.kind == "link" else lf.status) for lf in files] == [
        ("a.log", "read"), ("b.log", "read"), ("inside.log", "read"), ("link.log", "link"), ("sub/c.log", "read")]
    assert {lf.rel: lf.path for lf in files}["inside.log"] == str(run / "inside.log")


def test_the_json_report_is_written_a_block_of_files_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.model import LogFile, Report
    from triage.report import json_format, outputs, render, render_pieces

    monkeypatch.setattr(json_format, "FILES_BLOCK", 3)
    files = [LogFile.found(str(tmp_path) + os.sep, f"rank-{i}.log") for i in range(10)]
    for i, lf in enumerate(files):
        lf.lines, lf.size, lf.kind = i, 1000 * i, "trainer"
    rep = Report(version="0.1.0", root=str(tmp_path), files=files, figures={"x": 1.0})
    parts = list(render_pieces("json", rep))
    assert "".join(parts) == render("json", rep) and len(parts) == 1 + 4 + 1 + 1  # head, 4 blocks, "]", tail
    assert json.loads("".join(parts))["files"][9] == {"path": "rank-9.log", "kind": "trainer", "status": "read",
                                                       "reason": "", "lines": 9, "size": 9000}
    empty = Report(version="0.1.0", root=str(tmp_path))
    assert "".join(render_pieces("json", empty)) == render("json", empty)
    assert list(render_pieces("markdown", rep)) == [render("markdown", rep)]  # a format without pieces: one
    out = tmp_path / "report.json"
    outputs.write_text(out, render_pieces("json", rep))
    assert out.read_text() == render("json", rep)
