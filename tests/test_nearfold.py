"""Claims of one line family folded (scan/nearfold.py): the same report with and without the fold
(TRIAGE_NO_NEARFOLD=1), on both scan paths, on the fixtures and on OOM storms with `near` / `not_near` windows among
them; and a storm's claims bounded by its windows, not its lines."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from conftest import FIXTURES

from bench.oomgen import HEAD, TRACEBACK, WINDOWS, lines, oom
from triage.analyze import Settings, analyze
from triage.input.discover import discover
from triage.library.rules import load_library
from triage.report import RenderOptions, render
from triage.scan.digitkey import answers_alike, digit_blind, key
from triage.scan.scanner import Scanner

LIB = load_library()
BACKWARD = '  File "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py", line 825, in _engine_run_backward'
WEIGHTS = '  File "/opt/slime/slime/backends/megatron_utils/update_weight_utils.py", line 310, in update_weights'
LOADING = "Loading checkpoint shards: 100%|██████████| 4/4 [00:03<00:00,  1.21it/s]"


def report(run: Path, monkeypatch: pytest.MonkeyPatch, fold: bool, native: bool = True,
           patterns: list[Path] | None = None) -> dict:
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    for name, on in (("TRIAGE_NO_NEARFOLD", fold), ("TRIAGE_NO_NATIVE", native)):
        if on:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, "1")
    settings = Settings(paths=[str(run)], patterns=patterns or [])
    got = json.loads(render("json", analyze(settings, None if patterns else LIB), RenderOptions()))
    got.pop("generated", None)
    return got


def engine_storm(n: int, seed: int) -> list[str]:
    """OOM lines of changing numbers; now and then a traceback a `near` rule reads, a stats row, a run of identical
    lines, another message, a line of another process."""
    rnd = random.Random(seed)
    out = list(HEAD) + TRACEBACK
    same = oom(rnd)
    for i in range(n):
        r = rnd.random()
        if i % 700 == 350:
            out += TRACEBACK[:2] + WINDOWS[i // 700 % 2]
        if r < 0.01:
            out.append("[2026-05-24 01:00:00 TP0] Decode batch, #running-req: 3, #token: 4096, token usage: 0.41, "
                       "cuda graph: True, gen throughput (token/s): 812.20, #queue-req: 0")
        elif r < 0.012:
            out += [same] * rnd.randint(2, 40)
        elif r < 0.013:
            out.append(f"[2026-05-24 01:00:00] INFO:     127.0.0.1:{rnd.randint(1000, 9999)} - \"POST /generate "
                       "HTTP/1.1\" 200 OK")
        elif r < 0.015:
            out.append(f"(SGLangEngine pid={rnd.choice((11, 12))}) {oom(rnd)}")
        out.append(oom(rnd))
    return out


def trainer_storm(n: int, seed: int) -> list[str]:
    """A trainer's OOM lines: after a backward pass's frames (a `near` rule), a weight update's (`near`, with a
    `not_near` a checkpoint load names), or none."""
    rnd = random.Random(seed)
    out = ["step 1: {'loss': 0.5}"]
    for i in range(n):
        if i % 900 == 100:
            out += ["Traceback (most recent call last):", (BACKWARD, WEIGHTS, WEIGHTS)[i // 900 % 3]]
            if i // 900 % 3 == 2:
                out.append(LOADING)
        out.append(oom(rnd))
    return out


def write(run: Path, lines: list[str], name: str = "sglang-engine-0.log") -> Path:
    run.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode()
    if name.endswith(".gz"):
        data = gzip.compress(data)
    (run / name).write_bytes(data)
    return run


# -- which regexes answer alike on every message of a key ----------------------------------------------------------

def test_the_key_drops_the_digit_runs_values_and_lengths() -> None:
    a = "CUDA out of memory. Tried to allocate 18.72 GiB. GPU 1 has 261.50 MiB free"
    assert key(a) == key("CUDA out of memory. Tried to allocate 3.05 GiB. GPU 7 has 0.50 MiB free")
    assert key(a) != key("CUDA out of memory. Tried to allocate 3.05 MiB. GPU 7 has 0.50 MiB free")


@pytest.mark.parametrize(("regex", "alike"), [
    ("forward_extend|prefill|chunked_prefill", True),
    (r"backward|autograd\b", True),
    (r"[A-Z]+ fault\s+here", True),
    (r"\D+ at [^\d]", False),  # a negated class: not analysed
    (r"exit code \d+", False),
    (r"exit code 1", False),
    (r"GPU [0-3]", False),
    (r"\w+_adam", False),
    (r"a.b", False),
    (r"(x)\1", False),
])
def test_a_regex_is_digit_blind_when_no_part_of_it_can_read_a_digit(regex: str, alike: bool) -> None:
    assert digit_blind(regex) is alike


def test_a_regex_needing_a_missing_literal_answers_alike_though_it_reads_digits() -> None:
    msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert answers_alike(r'(?:optimizer|zero/stage\w*)\.py", line \d+, in step', msg)
    assert not answers_alike(r"allocate \d\.", msg)  # reads the digits, and its literals are in the line


# -- the same report ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_an_engine_oom_storm_with_windows_gives_one_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          native: bool) -> None:
    run = write(tmp_path / "run", engine_storm(6000, 1))
    folded = report(run, monkeypatch, True, native)
    assert folded == report(run, monkeypatch, False, native)
    counts = {f["rule"]: f["count"] for f in folded["findings"]}
    # the lines after a prefill or capture traceback go to its rule, the others to the generic one
    assert counts["serving.engine-oom-prefill"] > 0 and counts["serving.engine-oom-graph-capture"] > 0
    assert sum(counts[r] for r in ("serving.engine-oom-prefill", "serving.engine-oom-graph-capture",
                                   "serving.engine-cuda-oom")) == sum(
        1 for ln in engine_storm(6000, 1) if "torch.OutOfMemoryError" in ln)  # with the Ray-prefixed ones
    generic = next(f for f in folded["findings"] if f["rule"] == "serving.engine-cuda-oom")
    assert generic["first"]["line"] == 7 and generic["evidence"][0]["text"] == engine_storm(6000, 1)[6]


def test_a_trainer_oom_storm_with_near_and_not_near_windows_gives_one_report(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    run = write(tmp_path / "run", trainer_storm(5000, 2), "train.log")
    folded = report(run, monkeypatch, True)
    assert folded == report(run, monkeypatch, False)
    assert folded == report(run, monkeypatch, True, native=False)
    rules = {f["rule"] for f in folded["findings"]}
    assert {"trainer.oom-backward", "trainer.oom-weight-sync", "trainer.cuda-oom"} <= rules


def test_a_storm_whose_first_chunk_goes_to_the_python_path_gives_one_report(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A `\r` redraw sends its chunk through the line-for-line reader, which folds no run of identical lines."""
    storm = engine_storm(6000, 7)
    storm.insert(50, "Loading safetensors 10%\rLoading safetensors 50%\rLoading safetensors 100%")
    run = write(tmp_path / "run", storm)
    assert report(run, monkeypatch, True) == report(run, monkeypatch, False)


def test_a_compressed_storm_gives_one_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = write(tmp_path / "run", engine_storm(4000, 3), "sglang-engine-0.log.gz")
    assert report(run, monkeypatch, True) == report(run, monkeypatch, False)


def test_a_users_rule_with_a_window_around_a_storm_gives_one_report(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pats = tmp_path / "pats"
    pats.mkdir()
    (pats / "mine.yaml").write_text(
        "rules:\n"
        "  - id: serving.my-oom-in-capture\n"
        "    category: serving-oom-retraction\n    severity: error\n    priority: 95\n"
        "    title: OOM in a graph capture\n    knobs: [inference.sglang_mem_fraction_static]\n"
        "    explain: An OOM after a capture frame.\n"
        "    anchor: [CUDA out of memory]\n"
        "    match: ['CUDA out of memory\\. Tried to allocate (?P<tried>[\\d.]+ GiB)']\n"
        "    near: 'cuda_graph_runner'\n    within: [100, 0]\n"
        "    examples:\n"
        "      match: ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0']\n"
        "      no_match: ['Decode batch']\n")
    run = write(tmp_path / "run", engine_storm(3000, 4))
    folded = report(run, monkeypatch, True, patterns=[pats])
    assert folded == report(run, monkeypatch, False, patterns=[pats])
    assert any(f["rule"] == "serving.my-oom-in-capture" for f in folded["findings"])


def fixture_runs() -> list[Path]:
    return sorted(p for p in (FIXTURES / "real").glob("*/input")) + sorted((FIXTURES / "real-extra").glob("*/input"))


@pytest.mark.parametrize("run", fixture_runs(), ids=lambda p: p.parent.name)
def test_the_fixtures_give_one_report_both_ways(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert report(run, monkeypatch, True) == report(run, monkeypatch, False)


# -- cost ----------------------------------------------------------------------------------------------------------

def test_a_storm_of_near_identical_claims_keeps_a_windows_worth_of_claims(tmp_path: Path) -> None:
    n = 20_000
    rnd = random.Random(6)
    log = list(HEAD) + TRACEBACK + [oom(rnd) for _ in range(n)]
    run = write(tmp_path / "run", log)
    files, _ = discover([str(run)])
    scanner = Scanner(LIB)
    res = scanner.scan(files[0])
    hits = [h for h in res.hits if h.rule == "serving.engine-cuda-oom"]
    assert sum(h.line.repeat for h in hits) == n
    # the head's lines (60: the widest window before a line), the tail's (80: after), the folded line and the last
    # middle one; not 20,000
    assert len(hits) == sum(scanner.reach) + 2
    folded = max(hits, key=lambda h: h.line.repeat)
    assert (folded.line.lineno, folded.line.text) == (len(HEAD) + len(TRACEBACK) + 1 + 60, log[len(HEAD) + 3 + 60])
    assert hits[-1].line.lineno == len(log) and hits[-1].line.text == log[-1]


def test_a_run_of_identical_lines_after_a_held_line_folds_before_the_rule_search(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Stats rows break a run of identical lines: the line after one is held by its group, and the run folds into it
    (origins.Runs) instead of each line going through the rule search."""
    run = write(tmp_path / "run", lines(20_000, False, 1))
    files, _ = discover([str(run)])
    scanner = Scanner(LIB)
    seen: list[int] = []
    handle = Scanner.line
    monkeypatch.setattr(Scanner, "line", lambda self, fs, lineno, *a: (seen.append(lineno), handle(self, fs, lineno, *a)))
    res = scanner.scan(files[0])
    assert sum(h.line.repeat for h in res.hits if h.rule == "serving.engine-cuda-oom") == 20_000
    assert len(seen) < 100  # the first line after each stats row (and the rows themselves), not 20,000
