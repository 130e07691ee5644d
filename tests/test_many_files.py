"""Many small files (issue 13): a run's metric records and timer readings go into one store each, so memory is
bounded across the run, not per file; the answers are those of the records themselves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.analyze import Settings, analyze
from triage.findings import MAX_TEXT, family
from triage.input.read import read_text
from triage.library.rules import load_library
from triage.model import Line, LogFile
from triage.parsers.series_store import CAP, TAIL
from triage.redact import PATTERNS, redact
from triage.scan.scanner import Scanner
from triage.scan.series import RunSeries
from triage.template import FAMILY_TEXT, SHAPE_EXACT, shape

LIB = load_library()
# pieces of error lines: numbers of every length, ids, hex, addresses, times, quotes, secrets' gates and prefixes
PIECES = ["ERROR ", "failed ", "Error in x: ", "ValueError: ", " ", " ", "=", ",", ";", ":", ".", "-", "_", "/", "(",
          ")", "[", "]", "'", '"', "0x", "0x7fab", "0xDEAD", "7", "42", "1234", "123456789012", "3.25", "10.0.0.1",
          "10.0.0.1:8080", "2026-05-24 00:50:00", "00:50:00", "deadbeef", "deadbeef12", "abc123def456ab",
          "3fa85f64-5717-4562-b3fc-2c963f66afa6", "req_id=", "request id ", "req-", "chatcmpl-", "/mnt/ckpt/",
          "shard_", "http://", "user:pw@host", "bearer ", "Bearer abc", "token=", "api_key: ", "sk-", "AKIA",
          "sig=", "--api-key ", "AbCdEf1234567890XyZw", "host.example.com", "pid=", "(Worker pid=12) ", "TP0] ",
          "'shard_17'", '"a long quoted message of many words"', "e", "f", "x"]
NUMBER_RUN = re.compile(r"\d+")


def _rank_log(rank: int, steps: int) -> str:
    lines = []
    for s in range(steps):
        lines.append(f"[2026-05-24 00:51:18] timer.py:32 - Timer actor_train end (elapsed: {40 + (rank + s) % 7}.5s)")
        lines.append(f"[2026-05-24 00:51:18] log_utils.py:542 - step {s}: {{'train/loss': -0.0{rank % 10}, "
                     f"'train/grad_norm': 0.{(rank * 7 + s) % 9 + 1}, 'train/step': {s}}}")
        lines.append(f"[2026-05-24 00:51:18] metrics.py:88 - rollout {s}: {{'rollout/raw_reward': 0.{s % 9 + 1}}}")
    return "\n".join(lines) + "\n"


def test_many_rank_logs_share_one_store_of_bounded_size() -> None:
    # 1,000 files of 10 steps (2 records a step): 20,000 records, 10,000 timer lines; one store, one timer series
    scanner = Scanner(LIB)
    scanner.series = RunSeries()
    ends = []
    for rank in range(1000):
        lf = LogFile(path="<t>", rel=f"ranks/train-rank-{rank:05d}.log", kind="trainer")
        res = scanner.scan(lf, read_text(_rank_log(rank, 10).encode()))
        assert not [e for e in res.events if e.kind in ("metric_series", "timer_series", "metrics", "timer")]
        ends.append(lf.lines)
    assert ends == [30] * 1000
    events = scanner.series.close()
    assert [e.kind for e in events] == ["metric_series", "timer_series"]
    store = events[0].fields["store"]
    assert store.total == 20_000
    assert store.sums["train/grad_norm"].n == 10_000 and store.sums["rollout/raw_reward"].n == 10_000
    assert store.thinned
    # bounded across the run: the sample, the tail and the records the summaries point at (a few per key)
    assert store.retained() <= CAP + TAIL + 100
    readings = events[1].fields["timers"]
    assert len(readings) == 7  # 40.5 .. 46.5 s: one event per distinct reading, whichever file printed it
    assert sum(n for _, n in readings) == 10_000
    # the first file to print a reading is its evidence
    assert readings[0][0].line.file == "ranks/train-rank-00000.log" and readings[0][0].line.lineno == 1


def test_a_scanner_without_run_series_keeps_a_store_per_file() -> None:
    scanner = Scanner(LIB)
    lf = LogFile(path="<t>", rel="train.log", kind="trainer")
    res = scanner.scan(lf, read_text(_rank_log(3, 4).encode()))
    (series,) = [e for e in res.events if e.kind == "metric_series"]
    assert series.fields["store"].total == 8 and series.line.lineno == 12


def test_many_small_files_give_the_run_health_of_all_their_records(tmp_path: Path) -> None:
    for rank in range(300):
        (tmp_path / f"train-rank-{rank:03d}.log").write_text(_rank_log(rank, 8))
    report = analyze(Settings(paths=[str(tmp_path)]))
    (summary,) = [f for f in report.findings if f.rule == "health.summary"]
    assert summary.count == 300 * 8 * 2
    assert summary.numbers["stage_seconds"]["Timer actor_train"] == 43.5
    assert summary.numbers["grad_norm_min"] == 0.1 and summary.numbers["grad_norm_max"] == 0.9
    assert (summary.first.file, summary.first.line) == ("train-rank-000.log", 2)
    assert (summary.last.file, summary.last.line) == ("train-rank-299.log", 24)


# -- error-like lines folded per shape (scan/unexplained.py, template.shape) ----------------------------------------

def _error(i: int) -> str:
    """One of 12 messages; numbers, a UUID, a hex handle, a digest and a shard path change from line to line."""
    r = (i * 2654435761) % 2**32
    uuid = f"{r:08x}-{r % 65536:04x}-4{r % 4096:03x}-a{r % 999:03x}-{r * 7 % 2**48:012x}"
    msgs = [f"ERROR scheduler: request {uuid} failed after {r % 9 + 1} attempts ({r % 100000} ms)",
            f"ERROR memory_pool: handle 0x{r * 13 % 2**48:012x} is stale (generation {r % 977}, expected {r % 31})",
            f"router failed to load shard /mnt/ckpt/shard_{r % 4096:05d}/part-{r:08x}.bin: digest {r * 31:016x}",
            f"Error in detokenizer while processing batch {r % 12345}: {r % 7} of {r % 64} items dropped"]
    return f"[2026-05-24 00:{i // 60 % 60:02d}:{i % 60:02d}] " + msgs[i % 4].replace("ERROR", "ERROR" if i % 3 else "CRITICAL")


def test_a_storm_of_error_lines_keeps_one_fold_per_message() -> None:
    n = 20_000
    text = "\n".join(["[2026-05-24 00:00:00] server up"] + [_error(i) for i in range(n)]) + "\n"
    res = Scanner(LIB).scan(LogFile(path="<t>", rel="engine.log", kind="sglang"), read_text(text.encode()))
    # 8 messages (4 wordings, ERROR or CRITICAL), each in a few shapes (a number before `:` keeps its length, a
    # part name of 8 letters stays as it is): a few dozen lines kept whole or folds, not one per line
    assert len(res.unclaimed) + len(res.folded) <= 30
    assert sum(f.count for f in res.folded) + len(res.unclaimed) == n
    first = min(res.folded, key=lambda f: f.first.lineno)
    assert first.first.lineno == 2 and max(f.last.lineno for f in res.folded) >= n


def test_folded_error_lines_give_the_findings_of_every_line(tmp_path: Path) -> None:
    lines = ["[2026-05-24 00:00:00] server up"] + [_error(i) for i in range(3000)]
    (tmp_path / "engine-0.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "engine-1.log").write_text("\n".join(lines[:1] + [_error(i) for i in range(5000, 5400)]) + "\n")
    report = analyze(Settings(paths=[str(tmp_path)]))
    got = {f.title: (f.count, f.first.file, f.first.line, f.last.file, f.last.line)
           for f in report.findings if f.rule == "unclassified"}
    # every line, templated one by one (findings.unclassified without folds)
    from triage.findings import unclassified
    every = []
    for name, text in (("engine-0.log", lines[1:]), ("engine-1.log", [_error(i) for i in range(5000, 5400)])):
        every += [Line(name, no, t, t.split("] ", 1)[1]) for no, t in enumerate(text, 2)]
    want = {f.title: (f.count, f.first.file, f.first.line, f.last.file, f.last.line)
            for f in unclassified(LIB, every, True)}
    assert got == want and len(got) == 6  # scheduler and memory_pool lines at ERROR or CRITICAL, router, detokenizer
    assert sum(c for c, *_ in got.values()) == 3400


def test_lines_a_later_step_singles_out_are_never_folded() -> None:
    text = "\n".join([_error(i) for i in range(50)]
                     + ["[2026-05-24 01:00:00] Received SIGTERM, shutting down"]
                     + [_error(i) for i in range(50, 80)]) + "\n"
    res = Scanner(LIB).scan(LogFile(path="<t>", rel="engine.log", kind="sglang"), read_text(text.encode()))
    # after the orderly shutdown the error lines are teardown noise: judge drops them whole, as before
    assert all(f.last.lineno < 51 for f in res.folded)
    assert not [ln for ln in res.unclaimed if ln.lineno > 51]
    shutdown = [e for e in res.events if e.kind == "shutdown"]
    assert shutdown and shutdown[0].fields["quiet"] == 30


@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=14), st.randoms(use_true_random=False))
@settings(max_examples=400, deadline=None)
def test_lines_of_one_shape_have_one_family(pieces: list[str], rnd: Any) -> None:
    a = "".join(pieces)
    # the same line with its digits and hex letters drawn afresh: where that keeps the shape, it keeps the family
    b = "".join(rnd.choice("0123456789") if c.isdigit() else rnd.choice("abcdef") if c in "abcdef"
                else rnd.choice("ABCDEF") if c in "ABCDEF" else c for c in a)
    c = NUMBER_RUN.sub(lambda m: str(rnd.randrange(10 ** rnd.randrange(1, 12))), a)
    for other in (b, c):
        if shape(a) == shape(other):
            assert family(redact(a)) == family(redact(other)), (a, other)


def test_the_secret_patterns_that_name_a_digit_make_a_line_its_own_shape() -> None:
    gates = {g for gate, _, _ in PATTERNS for g in gate.split("|")}
    backrefs = {g for gate, rx, _ in PATTERNS if re.search(r"\\[1-9]", rx.pattern) for g in gate.split("|")}
    named = {g for g in gates if any(c.isdigit() for c in g)} | backrefs
    assert named and all(any(e in g for e in SHAPE_EXACT) for g in named)  # a line holding the gate is exact
    assert FAMILY_TEXT == 2 * MAX_TEXT
    assert shape("sig 0x7fab then 1x7f") != shape("sig 0x7fab then 0x7f")
    assert shape("took 12 ms, peer 10.0.0.1:80") == shape("took 987654 ms, peer 10.0.0.1:80")
    assert shape("peer 10.0.0.1:80") != shape("peer 1000.0.0.1:80")  # an address only with parts of 1-3 digits
    # where a number's length decides a mask, lines whose numbers differ in length are of different shapes
    for short, long in (("auth bearer 1234567", "auth bearer 12345678"),  # a bearer token has 8+ characters
                        ("'k=1,v=2,w=3,x=4,y=5,z=6'", "'k=1,v=2,w=3,x=4,y=5,z=678'"),  # a quote of 24+ is free text
                        ("id 12345678901", "id 123456789012")):  # 12 digits are an id
        assert family(redact(short)) != family(redact(long))
        assert shape(short) != shape(long)


# -- pending claims keep no match objects ---------------------------------------------------------------------------

def test_a_storm_of_claims_keeps_one_shared_entry_per_rule_not_a_match_per_line(monkeypatch: Any) -> None:
    """100 k OOM lines under `near`/`not_near` rules wait as pending claims until the file is done: each keeps its
    line and the rules it matched (one shared entry a rule), never the `regex` match objects (~1 kB each, a dozen a
    line), whose numbers are taken again for the claims that need them."""
    from triage.scan import scanner as scanner_mod
    seen: dict[str, int] = {}
    real = scanner_mod.Scanner._resolve

    def looking(self: Scanner, fs: Any) -> None:
        entries = [c for _, matched in fs.pending for c in matched]
        seen.update(claims=len(entries), distinct=len({id(c) for c in entries}), lines=len(fs.pending),
                    matches=sum(1 for c in entries if c[1] is not None))
        real(self, fs)

    monkeypatch.setattr(scanner_mod.Scanner, "_resolve", looking)
    monkeypatch.setenv("TRIAGE_NO_NEARFOLD", "1")  # every line a claim of its own (test_nearfold.py: the lines folded)
    n = 20_000
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {}.25 GiB. GPU {} has a total capacity of "
           "79.11 GiB of which {}.50 MiB is free.")
    text = "\n".join(['  File "/opt/slime/train.py", line 412, in train_one_step', "    loss.backward()"]
                     + [oom.format(i % 97, i % 8, i % 13) for i in range(n)]) + "\n"
    res = Scanner(LIB).scan(LogFile(path="<t>", rel="train.log", kind="trainer"), read_text(text.encode()))
    assert seen["lines"] == n and seen["claims"] >= n and seen["matches"] == 0
    assert seen["distinct"] <= len(LIB.rules)  # shared per rule, whatever the number of lines
    cuda = [h for h in res.hits if h.rule == "trainer.cuda-oom"]
    # the numbers, taken again on the hit: line n + 2 printed allocation (n - 1) % 97 + .25 GiB on GPU (n - 1) % 8
    assert cuda[-1].line.lineno == n + 2
    assert cuda[-1].numbers == {"tried": (n - 1) % 97 + 0.25, "gpu": (n - 1) % 8, "capacity": 79.11,
                                "free": round(((n - 1) % 13 + 0.5) / 1024, 6)}
