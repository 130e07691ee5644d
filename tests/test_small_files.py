"""Many small files (issue 13): shared among processes in batches (scan/batches.py) with the report one process
gives, whatever file dies, is odd or is lost; and discovery counts only the content markers its decision needs."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest

from triage.analyze import Settings, analyze
from triage.input import discover
from triage.model import LogFile
from triage.report import RenderOptions, render
from triage.scan import batches, parallel

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB"


def rank_log(rank: int, steps: int = 4, oom: bool = False) -> str:
    lines = []
    for s in range(steps):
        lines.append(f"[2026-05-24 00:51:18] timer.py:32 - Timer actor_train end (elapsed: {40 + (rank + s) % 7}.5s)")
        lines.append(f"[2026-05-24 00:51:18] log_utils.py:542 - step {s}: {{'train/loss': -0.0{rank % 10}, "
                     f"'train/grad_norm': 0.{(rank * 7 + s) % 9 + 1}, 'train/step': {s}}}")
        lines.append(f"[2026-05-24 00:51:18] metrics.py:88 - rollout {s}: {{'rollout/raw_reward': 0.{s % 9 + 1}, "
                     f"'rollout/response_lengths': {1000 + rank * 3 + s}.0}}")
        if oom and s == 2:
            lines += ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>', OOM]
    return "\n".join(lines) + "\n"


def sample_log(i: int) -> str:
    return "".join(f"INFO:2026-05-24 00:5{k}:00,000: sample {i} rollout {k}: parsed answer \\boxed{{{i}}} against gold "
                   f"{i + k % 2}: score {float(k % 2 == 0):.1f} (0.01{k} s)\n" for k in range(5))


def mixed_tree(root: Path, ranks: int = 24, samples: int = 24) -> Path:
    """Small per-rank trainer logs and per-sample verifier logs, with a compressed one, a binary, a log behind a head
    of NULs, an empty file, a dangling link and a link out of the run dir among them."""
    run = root / "run"
    (run / "ranks").mkdir(parents=True)
    (run / "verifier").mkdir()
    for r in range(ranks):
        (run / "ranks" / f"train-rank-{r:03d}.log").write_text(rank_log(r, oom=r == 17))
    for i in range(samples):
        (run / "verifier" / f"verify-sample-{i:03d}.log").write_text(sample_log(i))
    (run / "ranks" / "train-rank-005.log.1.gz").write_bytes(gzip.compress(rank_log(105, oom=True).encode()))
    (run / "ranks" / "core.bin").write_bytes(b"\x7fELF" + bytes(range(256)) * 8)
    (run / "ranks" / "train-rank-009.log.hole").write_bytes(b"\x00" * (70 << 10) + rank_log(109, oom=True).encode())
    (run / "verifier" / "verify-sample-empty.log").write_text("")
    (run / "verifier" / "gone.log").symlink_to(run / "verifier" / "nowhere.log")
    (root / "secret.log").write_text(OOM + "\n")
    (run / "verifier" / "outside.log").symlink_to(root / "secret.log")
    return run


def report(run: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> dict[str, Any]:
    monkeypatch.setenv("TRIAGE_JOBS", jobs)
    return json.loads(render("json", analyze(Settings(paths=[str(run)])), RenderOptions()))


def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "MANY", 8)  # this tree's few dozen files in batches of 4: a dozen batches
    monkeypatch.setattr(batches, "FILES", 4)


def worker_marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each batch a worker scans leaves a marker file. This process pauses before its first batch, so that the worker
    takes the first one, and the worker pauses over it, so that its result comes after this process's later ones:
    the tapes arrive out of order."""
    real, parent = parallel._scan_batch, os.getpid()
    paused = []

    def spy(files: list[LogFile]) -> Any:
        if not paused:
            paused.append(time.sleep(0.6 if os.getpid() != parent else 0.1))
        if os.getpid() != parent:
            (tmp_path / f"worker-batch-{files[0].rel.replace('/', '_')}").write_text("")
        return real(files)

    monkeypatch.setattr(parallel, "_scan_batch", spy)


@needs_fork
def test_batches_shared_with_a_worker_give_the_report_one_process_gives(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path)
    small_batches(monkeypatch)
    alone = report(run, monkeypatch, "1")
    worker_marks(tmp_path, monkeypatch)
    shared = report(run, monkeypatch, "2")
    assert list(tmp_path.glob("worker-batch-*")), "a worker scanned no batch"
    assert shared == alone
    # what the report holds, either way: the OOMs at their lines, each odd file's coverage note
    ooms = {(e["file"], e["line"]) for f in shared["findings"] if f["category"] == "trainer-oom" for e in f["evidence"]}
    assert ooms == {("ranks/train-rank-005.log.1.gz", 12), ("ranks/train-rank-017.log", 12)}  # first and last
    assert [f["count"] for f in shared["findings"] if f["category"] == "trainer-oom"] == [3]  # and the one past NULs
    files = {f["path"]: f for f in shared["files"]}
    assert files["ranks/core.bin"]["status"] == "skipped"
    assert files["verifier/outside.log"]["status"] == "skipped"
    assert files["verifier/gone.log"]["status"] == "unreadable"
    assert files["ranks/train-rank-009.log.hole"]["status"] == "read"
    assert "text starts at byte 71680" in files["ranks/train-rank-009.log.hole"]["reason"]
    assert files["ranks/train-rank-005.log.1.gz"]["status"] == "read"


@needs_fork
def test_a_worker_that_dies_in_a_batch_loses_that_batch_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path)
    small_batches(monkeypatch)
    real, parent = parallel._scan_batch, os.getpid()
    paused = []

    def die_in_worker(files: list[LogFile]) -> Any:
        if os.getpid() != parent:
            os._exit(9)  # killed as the kernel kills it: no result, no goodbye
        if not paused:
            paused.append(time.sleep(0.3))
        return real(files)

    monkeypatch.setattr(parallel, "_scan_batch", die_in_worker)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    rep = analyze(Settings(paths=[str(run)]))
    lost = [e for e in rep.errors if "not scanned" in e]
    assert len(lost) == batches.FILES  # the one batch the worker took; this process scanned every other
    assert all(e.endswith("not scanned: the process scanning it died (killed or out of memory?)") for e in lost)
    unread = [f.rel for f in rep.files if f.status == "unreadable" and "not scanned" in f.reason]
    assert len(unread) == batches.FILES
    assert any(f.category == "trainer-oom" for f in rep.findings)


class FakeSeries:
    def __init__(self) -> None:
        self.got: list[Any] = []
        self.store = self.timers = self

    def add(self, item: Any) -> None:
        self.got.append(item)


def test_tapes_are_played_in_batch_order_whatever_order_they_come_in() -> None:
    series = FakeSeries()
    in_order = batches.InOrder(series, first=3)  # jobs 0-2 are engine logs, batches start at 3
    in_order.put(5, [(batches.RECORD, "e")])
    in_order.put(4, [(batches.TIMER, "c"), (batches.RECORD, "d")])
    assert series.got == []  # batch 3 not in yet
    in_order.put(3, [(batches.RECORD, "a"), (batches.RECORD, "b")])
    assert series.got == ["a", "b", "c", "d", "e"]
    in_order.put(8, [(batches.RECORD, "h")])  # 6 lost (None), 7 never came
    in_order.put(6, None)
    assert series.got == ["a", "b", "c", "d", "e"]
    in_order.finish(9)
    assert series.got == ["a", "b", "c", "d", "e", "h"] and in_order.waiting == {}


def test_small_files_are_cut_into_batches_of_neighbours_in_file_order() -> None:
    files = [LogFile(f"f{i}", f"f{i}", kind="trainer", size=1000) for i in range(600)]
    big = LogFile("big", "big", kind="trainer", size=batches.SMALL)
    rest, cut = batches.split(files[:300] + [big] + files[300:])
    assert rest == [big]
    assert [lf for b in cut for lf in b] == files
    assert [len(b) for b in cut] == [128, 128, 128, 128, 88]
    assert batches.split(files[:batches.MANY - 1]) == (files[:batches.MANY - 1], [])  # too few to share
    heavy = [LogFile(f"h{i}", f"h{i}", kind="trainer", size=200 << 10) for i in range(batches.MANY)]
    assert [len(b) for b in batches.split(heavy)[1]] == [20] * 12 + [16]  # 4 MiB at most: 20 files of 200 KiB


def test_a_named_trainer_log_counts_only_the_markers_that_can_change_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[Any] = []
    real = discover._count
    monkeypatch.setattr(discover, "_count", lambda rx, text, raw: counted.append(rx) or real(rx, text, raw))
    engine_words = "[2026-05-24 00:51:18 TP0] Decode batch, #running-req: 3, token usage: 0.10\n" * 5
    assert discover.decide_kind("ranks/train-rank-3.log", engine_words + rank_log(3)) == "trainer"
    assert counted == [discover.VERL_MARKERS]  # a verl driver's log could still claim it; nothing else can
    counted.clear()
    assert discover.decide_kind("verifier/verify-sample-1.log", sample_log(1)) == "verifier"
    assert counted == [discover.VERL_MARKERS]
    counted.clear()
    assert discover.decide_kind("worker-3.err", engine_words) == "sglang"  # a generic name: engine content wins
    assert discover.CONTENT_MARKERS["sglang"] in counted
    counted.clear()
    verl = "".join(f"(TaskRunner pid=87031) step:{s} - critic/score/mean:0.5 - timing_s/step:90.0\n" for s in range(4))
    assert discover.decide_kind("ranks/train-rank-4.log", verl) == "driver"


def test_the_configuration_guard_holds_every_word_a_configuration_key_starts_with() -> None:
    from triage.parsers.config_file import NAMESPACE_KEY

    assert NAMESPACE_KEY.pattern.startswith("^(?:" + "|".join(discover.CONFIG_WORDS) + ")")
    assert discover.decide_kind("exp.cfg", "# run\njudge:\n  timeout: 30\n") == "config"
    assert discover.decide_kind("args", "inference.max_context_length: 16384\n") == "config"
    assert discover.decide_kind("exp.cfg", "# run\n  judge:\n  timeout: 30\n") != "config"  # not at a line start


PARENT = os.getpid()


def square_or_die(x: int) -> int:
    if x == 300 and os.getpid() != PARENT:
        os._exit(9)  # the worker holding item 300 is killed: its chunk is done again here
    return x * x


@needs_fork
def test_shared_map_gives_the_plain_map_even_when_a_worker_dies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    items = list(range(3000))
    assert parallel.map_shared(square_or_die, items) == [x * x for x in items]


def fails_on_7(x: int) -> int:
    if x == 7:
        raise ValueError("seven")
    return x


@needs_fork
def test_shared_map_raises_here_what_the_plain_map_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    with pytest.raises(ValueError, match="seven"):
        parallel.map_shared(fails_on_7, list(range(2000)))


@needs_fork
def test_discovery_shared_among_processes_finds_what_one_process_finds(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path, ranks=300, samples=300)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    alone, _ = discover.discover([str(run)])
    shared, _ = discover.discover([str(run)], mapper=parallel.map_shared)
    fields = ("path", "rel", "kind", "status", "reason", "size", "compression")
    assert [[getattr(lf, f) for f in fields] for lf in shared] == [[getattr(lf, f) for f in fields] for lf in alone]
    assert len(alone) == 606  # 600 logs, the .gz, the binary, the hole, the empty file, the two links
    # the walk keeps each file's path relative to the root; the path opened is the root's as given, joined to it
    slashed, _ = discover.discover([str(run) + "//"], mapper=parallel.map_shared)
    assert [lf.path for lf in slashed] == [str(run) + "//" + lf.rel for lf in alone]
    assert [lf.rel for lf in slashed] == [lf.rel for lf in alone]
    assert {lf.path for lf in alone} >= {str(run / "ranks" / "train-rank-007.log")}


def test_a_batch_result_and_its_tape_travel_back_unchanged(tmp_path: Path) -> None:
    import pickle

    from triage.library.rules import load_library
    from triage.scan.scanner import Scanner
    from triage.scan.series import RunSeries

    run = mixed_tree(tmp_path, ranks=6, samples=2)
    files, _ = discover.discover([str(run)])
    scanner = Scanner(load_library())
    scanner.series = RunSeries()
    monkey_scanner, parallel._scanner = parallel._scanner, scanner
    try:
        results, tape = parallel._scan_batch([lf for lf in files if lf.status == "read"])
    finally:
        parallel._scanner = monkey_scanner
    back_results, back_tape = pickle.loads(pickle.dumps((results, tape)))
    assert back_results == results and plain(back_tape) == plain(tape)
    hits = [h for r in back_results if not isinstance(r, (str, tuple)) for h in r.hits]  # a tuple: notes only
    assert {(h.rule, h.line.file, h.line.lineno, h.line.msg) for h in hits} >= {
        ("trainer.cuda-oom", "ranks/train-rank-005.log.1.gz", 12, OOM)}
    # a timer reading and two records a step: 6 rank logs, the .gz, the one past NULs (the records of registered
    # line shapes as the rows they came in: prefiltered.shapes_for)
    assert len(plain(tape)) == 8 * 4 * 3


def plain(tape: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """A tape's entries as plain data, a write-out of rows as the records it stands for."""
    out: list[tuple[int, Any]] = []
    for what, item in tape:
        evs = [(batches.RECORD, item.event(k)) for k in range(item.n)] if what == batches.RECORD_ROWS else [(what, item)]
        out += [(w, (ev.kind, ev.line.file, ev.line.lineno, ev.line.text, dict(ev.fields)) if w != batches.TIMER_AGAIN
                 else ev) for w, ev in evs]
    return out


@needs_fork
def test_a_result_that_holds_nothing_is_not_kept_and_its_file_notes_are(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.library.rules import load_library
    from triage.scan.scanner import Scanner
    from triage.scan.series import RunSeries

    run = mixed_tree(tmp_path)
    small_batches(monkeypatch)
    monkeypatch.setenv("TRIAGE_JOBS", "2")
    files = [lf for lf in discover.discover([str(run)])[0] if lf.status == "read"]
    scanner = Scanner(load_library())
    scanner.series = RunSeries()
    out = dict(zip((lf.rel for lf in files), parallel.scan_files(scanner, files)))
    assert {rel for rel, r in out.items() if r is not None} == {
        "ranks/train-rank-017.log", "ranks/train-rank-005.log.1.gz", "ranks/train-rank-009.log.hole"}  # the OOMs
    assert {lf.rel: lf.lines for lf in files}["verifier/verify-sample-003.log"] == 5  # its count came home
    lines = {lf.rel: lf.lines for lf in files}
    assert (lines["ranks/train-rank-001.log"], lines["ranks/train-rank-017.log"]) == (12, 15)  # 4 steps; a traceback


def timer_log(rank: int) -> str:
    """Timer readings printed again and again (a start, a few end seconds), and some whose seconds rounding to 3
    significant figures changes (1234.5 s: 1230), which a tape always writes in full."""
    lines = []
    for s in range(6):
        lines.append("[2026-05-24 00:51:18] timer.py:24 - Timer actor_train start")
        lines.append(f"[2026-05-24 00:51:18] timer.py:32 - Timer actor_train end (elapsed: {40 + s % 2}.5s)")
        lines.append(f"[2026-05-24 00:51:18] timer.py:32 - Timer update_weights end (elapsed: {1230 + (rank + s) % 9}.5s)")
    lines.append("[2026-05-24 00:51:18] timer.py:24 - Timer actor_train start")  # the last: a reading again
    return "\n".join(lines) + "\n"


def timer_state(scanner: Any) -> Any:
    events = scanner.series.close()
    (series,) = [ev for ev in events if ev.kind == "timer_series"]
    return ([(ev.line.file, ev.line.lineno, dict(ev.fields), n) for ev, n in series.fields["timers"]],
            (series.line.file, series.line.lineno))


@needs_fork
@pytest.mark.parametrize("bound", [4096, 5])  # 5: past the fifth reading, new readings' seconds are rounded
def test_timer_readings_are_kept_alike_by_one_process_and_by_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     bound: int) -> None:
    from triage.library.rules import load_library
    from triage.parsers import metrics
    from triage.scan.scanner import Scanner
    from triage.scan.series import RunSeries

    monkeypatch.setattr(metrics, "TIMER_READINGS", bound)
    run = tmp_path / "run"
    run.mkdir()
    for r in range(24):
        (run / f"train-rank-{r:03d}.log").write_text(timer_log(r))
    files = [lf for lf in discover.discover([str(run)])[0] if lf.status == "read"]
    lib = load_library()
    states = []
    for jobs in ("1", "2"):
        monkeypatch.setenv("TRIAGE_JOBS", jobs)
        if jobs == "2":
            small_batches(monkeypatch)
            worker_marks(tmp_path, monkeypatch)
        scanner = Scanner(lib)
        scanner.series = RunSeries()
        parallel.scan_files(scanner, files)
        states.append(timer_state(scanner))
    assert list(tmp_path.glob("worker-batch-*")), "a worker scanned no batch"
    assert states[1] == states[0]
    readings, last = states[0]
    assert last == ("train-rank-023.log", 19)
    assert sum(n for *_, n in readings) == 24 * 19
    assert readings[0][:2] == ("train-rank-000.log", 1)
    if bound == 5:
        assert any(f.get("seconds") == 1230.0 for _, _, f, _ in readings)  # rounded: 1230.5, 1231.5 ... as one


def test_the_matcher_small_files_share_is_picked_from_their_text_and_changes_no_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = mixed_tree(tmp_path)
    monkeypatch.setattr(batches, "MANY", 8)
    monkeypatch.setattr(batches, "SAMPLE_FILES", 4)
    files, _ = discover.discover([str(run)])
    text = batches.sample(files)
    # spread over the run: trainer logs and verifier logs both, never a compressed file's bytes
    assert b"Timer actor_train end" in text and b"parsed answer" in text and b"\x1f\x8b" not in text
    assert batches.sample(files[:7]) == b""  # fewer than MANY small files: the matcher of no text stays
    taught = report(run, monkeypatch, "1")
    monkeypatch.setattr(batches, "teach", lambda needles, files: None)  # every needle under its first pair
    assert report(run, monkeypatch, "1") == taught


def test_the_files_of_a_json_report_are_written_entry_by_entry_as_the_encoder_writes_them() -> None:
    """render writes the files list itself (a dict per file held for the whole list cost a run of 200 k files
    ~100 MB): the report's bytes are those json.dumps writes of as_dict, for any number of files (more than a block
    of entries, none), odd names, a node; a file whose text is already safe is not copied for it."""
    from triage.model import Report
    from triage.report import RenderOptions
    from triage.report.common import safe_report
    from triage.report.json_format import FILES_BLOCK, as_dict, render

    def expected(report: Report) -> str:  # no error, finding or timeline: every array is of dicts, or empty
        return json.dumps(as_dict(safe_report(report)), indent=2, ensure_ascii=True) + "\n"

    odd = LogFile(path="p", rel="a\x1b\"b\u00e4.log", kind="trainer", status="partial", reason="cut ##[x]", size=7,
                  lines=3, node="n1")
    many = [LogFile(path=f"p{i}", rel=f"r/{i}.log", size=i, lines=i % 5) for i in range(FILES_BLOCK + 3)]
    for files in ([], [odd], [*many, odd]):
        report = Report(version="0", root="r", files=files)
        assert render(report, RenderOptions()) == expected(report)
    entries = json.loads(render(Report(version="0", root="r", files=[*many, odd]), RenderOptions()))["files"]
    assert len(entries) == FILES_BLOCK + 4 and entries[FILES_BLOCK] == {
        "path": f"r/{FILES_BLOCK}.log", "kind": "text", "status": "read", "reason": "", "lines": FILES_BLOCK % 5,
        "size": FILES_BLOCK}
    assert entries[-1] == {"path": "a\\x1b\"b\u00e4.log", "kind": "trainer", "status": "partial",
                           "reason": "cut #\\x23[x]", "lines": 3, "size": 7, "node": "n1"}
    safe = safe_report(Report(version="0", root="r", files=[odd, many[0]]))
    assert safe.files[1] is many[0] and safe.files[0] is not odd and odd.rel == "a\x1b\"b\u00e4.log"


def test_a_file_entry_is_written_as_the_json_encoder_writes_it() -> None:
    """json_format writes a dict's strings and whole numbers itself (a run of 200 k files has 1.2 M of them): the
    bytes are those of json.dumps for every kind of value an entry or a figure may hold."""
    from enum import IntEnum

    from triage.report.json_format import dumps

    class Level(IntEnum):
        HIGH = 3

    value = {"path": "ranks/tr\u00e4in-\x1b[31m-\"q\"\\.log", "kind": "trainer", "status": "read", "reason": "",
             "lines": 41, "size": 6_143, "big": 2**70, "neg": -5, "yes": True, "no": False, "none": None,
             "float": 0.1, "inf": float("inf"), "level": Level.HIGH, "nested": {"a": 1, "b": "x", "c": {}},
             "empty": {}, "unicode": "\u2192 \ud83d\ude00"}
    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=True)
    assert json.loads(dumps(value)) == json.loads(json.dumps(value))
