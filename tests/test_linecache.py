"""The rule search cached per line key (Scanner._cached_search, digitkey.runs_alike): which regexes answer alike on
every message of a key, checked against the regex module on the library's own regexes; and the same report with and
without the cache (TRIAGE_NO_LINECACHE=1), on both scan paths, on the fixtures and on generated storms."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
import regex
from conftest import FIXTURES
from test_nearfold import engine_storm, trainer_storm, write

from bench.oomgen import HEAD, TRACEBACK, oom
from triage.analyze import Settings, analyze
from triage.input.discover import discover
from triage.library.rules import load_library
from triage.report import RenderOptions, render
from triage.scan.digitkey import key, runs_alike
from triage.scan.masked import impossible
from triage.scan.scanner import ERRORISH, FINAL_EXC, Scanner

LIB = load_library()
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.34 GiB. GPU 3 has a total capacity of 79.11 GiB"


def report(run: Path, monkeypatch: pytest.MonkeyPatch, cache: bool, native: bool = True,
           patterns: list[Path] | None = None) -> dict:
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    for name, on in (("TRIAGE_NO_LINECACHE", cache), ("TRIAGE_NO_NATIVE", native)):
        if on:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, "1")
    got = json.loads(render("json", analyze(Settings(paths=[str(run)], patterns=patterns or []),
                                            None if patterns else LIB), RenderOptions()))
    got.pop("generated", None)
    return got


def variants(msg: str, rnd: random.Random, n: int = 12) -> list[str]:
    """Messages of msg's key: each digit run replaced by one of another length and value (1 to 90 digits)."""
    out = []
    for _ in range(n):
        out.append(re.sub(r"[0-9]+", lambda m: str(rnd.randint(1, 9)) + "".join(
            rnd.choice("0123456789") for _ in range(rnd.choice((0, 0, 1, 2, 5, 89)))), msg))
    return out


# -- which regexes answer alike on every message of a key ----------------------------------------------------------

@pytest.mark.parametrize(("rx", "msg", "alike"), [
    (r"Tried to allocate (?P<t>[\d.]+ ?[KMGT]iB)", OOM, True),  # each run eaten whole
    (r"GPU (?P<gpu>\d+) has", OOM, True),
    (r"capacity of .*? GiB", OOM, True),  # `.*?` holds every digit
    (r"GPU \d has", OOM, False),  # one digit: `GPU 12 has` would not match
    (r"GPU \d{1,2} has", OOM, False),  # a bounded repeat tells lengths apart
    (r"allocate 1", OOM, False),  # a literal digit
    (r"GPU [0-3]", OOM, False),  # a class of some digits
    (r"\d+\d+ GiB", OOM, False),  # two parts share one run: `5 GiB` would not match
    (r"[\d.]+\w* GiB", OOM, False),
    (r"\b\d+ GiB", OOM, False),  # a match that may begin inside a run holds an assertion
    (r"^torch\.\w+: CUDA .*? GiB\b", OOM, True),  # it begins at the message's start: never inside a run
    (r"(?:\d+,)+ end", "ids 1,22,333, end", True),  # the repeats' runs are apart
    (r"(?:\d+)+x", "ids 12x", False),
    (r"Attempting to reserve [\d.]+\w* at", OOM, True),  # needs a literal the message lacks: matches none
    (r"(?i:OUT OF MEMORY)\. Tried \d", OOM, False),  # the scoped flag's literal is in the message (case folded)
    (r"(x)\1", "x1x", False),  # a back reference: not analysed
    (r"(?>\d+)GiB", OOM, False),  # an atomic group: not analysed
    (r"GiB{e<=1}", OOM, False),  # the regex module's fuzzy match: not analysed
    (r"[[:digit:]]+ GiB", OOM, False),  # a POSIX class: not analysed
])
def test_a_regex_answers_alike_when_it_reads_each_digit_run_whole(rx: str, msg: str, alike: bool) -> None:
    assert runs_alike(rx, msg) is alike


def test_what_runs_alike_proves_holds_on_the_librarys_regexes() -> None:
    """Every library regex (rules' match, near, not_near; sides' markers; the error-line tests), on every example
    message of the library and the storms' lines: when runs_alike says so, the regex module answers the same on
    messages of the key whose runs have other lengths and values."""
    rnd = random.Random(3)
    sources = {p.pattern for r in LIB.rules for p in r.patterns()} | {m.pattern for m in LIB.sides.values()}
    sources |= {ERRORISH.pattern, FINAL_EXC.pattern}
    msgs = {m for r in LIB.rules for ex in r.examples.values() for m in ex if re.search(r"[0-9]", m)}
    msgs |= {OOM, oom(rnd), "available memory 5 GiB less than needed", "ray::WorkerDict.update_actor() failed 3 times"}
    proved = 0
    for src in sorted(sources):
        rx = regex.compile(src)
        for msg in sorted(msgs):
            if not runs_alike(src, msg):
                continue
            proved += 1
            want = rx.search(msg) is not None
            for other in variants(msg, rnd, 4):
                assert key(other) == key(msg)
                assert (rx.search(other) is not None) is want, (src, msg, other)
    assert proved > 1000


def test_a_scoped_ignorecase_group_needs_no_literal_as_written() -> None:
    """masked.impossible: a `(?i:...)` group's literal in another case is no missing literal."""
    assert not impossible(r"(?i:out of memory)", "CUDA OUT OF MEMORY")
    assert impossible(r"out of memory", "CUDA OUT OF MEMORY")


def test_a_rule_that_reads_a_runs_length_is_searched_on_each_line(tmp_path: Path) -> None:
    """`.{0,80}` in the vocabulary rule: a long digit run pushes `less than` out of its reach; the cache must not
    hand the first line's answer to the second (same key)."""
    short = "ERROR: available memory 5 GiB less than needed"
    long_ = "ERROR: available memory " + "5" * 100 + " GiB less than needed"
    assert key(short) == key(long_)
    run = write(tmp_path / "run", [short, "x", long_, "y", short], "sglang-engine-0.log")
    files, _ = discover([str(run)])
    res = Scanner(LIB).scan(files[0])
    rules = {(h.line.lineno, h.rule) for h in res.hits}
    assert (1, "vocabulary.engine-out-of-memory") in rules and (5, "vocabulary.engine-out-of-memory") in rules
    assert not any(ln == 3 for ln, _ in rules)


# -- the same report ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_an_engine_oom_storm_gives_one_report_with_and_without_the_cache(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        native: bool) -> None:
    run = write(tmp_path / "run", engine_storm(5000, 11))
    cached = report(run, monkeypatch, True, native)
    assert cached == report(run, monkeypatch, False, native)
    counts = {f["rule"]: f["count"] for f in cached["findings"]}
    assert counts["serving.engine-cuda-oom"] > 0 and counts["serving.engine-oom-prefill"] > 0


def test_a_trainer_oom_storm_gives_one_report_with_and_without_the_cache(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    run = write(tmp_path / "run", trainer_storm(4000, 12), "train.log")
    assert report(run, monkeypatch, True) == report(run, monkeypatch, False)


def test_error_lines_whose_digits_decide_give_one_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines of one key that are error lines or not by their digits (`exit code 0` / `exit code 10`: ERRORISH reads
    them) and that a rule matches or not by a run's length, among OOM lines of changing numbers."""
    rnd = random.Random(13)
    log = list(HEAD) + TRACEBACK
    for i in range(3000):
        r = rnd.random()
        if r < 0.2:
            log.append(f"worker {rnd.randint(0, 99)} exit code {rnd.choice((0, 1, 10, 137))}: out of memory")
        elif r < 0.3:
            log.append("ERROR: available memory " + "5" * rnd.choice((1, 3, 90)) + " GiB less than needed")
        elif r < 0.35:
            log.append(f"[2026-05-24 01:00:{i % 60:02d} TP0] ERROR out of memory on rank {rnd.randint(0, 7)}")
        else:
            log.append(oom(rnd))
    run = write(tmp_path / "run", log)
    for native in (True, False):
        assert report(run, monkeypatch, True, native) == report(run, monkeypatch, False, native)


def test_a_users_rule_beside_the_cached_ones_gives_one_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pats = tmp_path / "pats"
    pats.mkdir()
    (pats / "mine.yaml").write_text(
        "rules:\n"
        "  - id: serving.my-big-oom\n"
        "    category: serving-oom-retraction\n    severity: error\n    priority: 95\n"
        "    title: A big OOM\n    knobs: [inference.sglang_mem_fraction_static]\n"
        "    explain: An OOM of a big allocation.\n"
        "    anchor: [CUDA out of memory]\n"
        "    match: ['CUDA out of memory\\. Tried to allocate [1-6]\\d\\.']\n"
        "    examples:\n"
        "      match: ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.00 GiB. GPU 0']\n"
        "      no_match: ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0']\n")
    run = write(tmp_path / "run", engine_storm(2000, 14))
    cached = report(run, monkeypatch, True, patterns=[pats])
    assert cached == report(run, monkeypatch, False, patterns=[pats])
    assert any(f["rule"] == "serving.my-big-oom" for f in cached["findings"])


def fixture_runs() -> list[Path]:
    return sorted(p for p in (FIXTURES / "real").glob("*/input")) + sorted((FIXTURES / "real-extra").glob("*/input"))


@pytest.mark.parametrize("run", fixture_runs(), ids=lambda p: p.parent.name)
def test_the_fixtures_give_one_report_with_and_without_the_cache(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert report(run, monkeypatch, True) == report(run, monkeypatch, False)


def test_the_side_lookup_keeps_a_keys_answer_only_when_its_markers_read_runs_whole() -> None:
    from triage.library.rules import Pattern
    from triage.scan.origins import SideFinder

    whole = SideFinder({"engine": Pattern(r"rank \d+:", "t", "m"), "trainer": Pattern("megatron/", "t", "m")}, {})
    assert [whole.of_text(f"rank {n}: step") for n in (1, 12, 3, 456)] == ["engine"] * 4
    assert len(whole.of_text._memo) == 1  # the key's answer, proved on its second message, served the others
    one = SideFinder({"engine": Pattern(r"rank \d:", "t", "m")}, {})  # one digit: `rank 12:` is no engine's
    assert [one.of_text(f"rank {n}: step") for n in (1, 12, 3, 456, 7)] == ["engine", "", "engine", "", "engine"]
