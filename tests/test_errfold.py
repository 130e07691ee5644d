"""Error-like lines no rule can claim are counted per key by the C prefilter (scan/errfold.py, _linescan.c Errs): the
report must be the one each line reaching Python gives (TRIAGE_NO_ERRFOLD=1), and Python must get a bounded number of
lines however many such lines a log holds."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import FIXTURES

from bench.gen import EngineWriter
from triage.analyze import Settings, analyze
from triage.input.discover import discover
from triage.library.rules import load_library
from triage.redact import redact
from triage.report import RenderOptions, render
from triage.scan import errfold, native
from triage.scan import prefiltered as fastscan
from triage.scan.masked import blind, impossible
from triage.scan.native import K_CAND, K_ERRS, K_KNOWN, _linescan
from triage.scan.origins import split_ray
from triage.scan.scanner import Scanner
from triage.template import shape, template

pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")

LIB = load_library()


def error_lines(n: int, seed: int) -> list[str]:
    """n error-like lines of the bench's `errors` profile (300 messages, values drawn afresh)."""
    w = EngineWriter(random.Random(seed), " DP0 TP0", "errors")
    out: list[str] = []
    while len(out) < n:
        w.clock.advance(300)
        out.append(w._error())
    return out


def report(run: Path, monkeypatch: pytest.MonkeyPatch, fold: bool) -> dict:
    monkeypatch.setattr(errfold, "ERRFOLD_FROM", 0)
    monkeypatch.setattr(fastscan, "ERRFOLD_FROM", 0)
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    if fold:
        monkeypatch.delenv("TRIAGE_NO_ERRFOLD", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_ERRFOLD", "1")
    return json.loads(render("json", analyze(Settings(paths=[str(run)]), LIB), RenderOptions()))


def hits_of(path: Path, monkeypatch: pytest.MonkeyPatch) -> list:
    monkeypatch.setattr(fastscan, "ERRFOLD_FROM", 0)
    monkeypatch.delenv("TRIAGE_NO_ERRFOLD", raising=False)
    scanner = Scanner(LIB)
    files, _ = discover([str(path)])
    with open(files[0].path, "rb") as stream:
        return [h for item in fastscan.read_chunks(scanner.needles, files[0], stream)
                if isinstance(item, fastscan.Chunk) for h in item.hits]


# -- the key ------------------------------------------------------------------------------------------------------

ODD = ["ERROR x: peer 10.0.0.1:8080 refused", "ERROR x: value 0.5 of 12 failed", "ERROR x: 0xDEADbeef12 failed",
       "ERROR x: ids 123456789012 abcdefabcdef 1a2b3c4d5e6f failed", "ERROR x: part-abcdef12.bin failed (7)",
       "ERROR job_7: request_id=abc123 failed at step=12, 3/4", "Error in worker: 1.2.3.4.5 and 99999.1 failed",
       "ERROR tokenizer: token 12 and 123 failed", "ERROR x: ya29 failed", "ERROR y: 1//0 failed", "ERROR z: r8_q"]


@pytest.mark.parametrize("gated", [False, True])
def test_lines_of_one_key_are_lines_of_one_template(gated: bool) -> None:
    lines = error_lines(3000, 7) + ODD + [o.replace("12", "98765") for o in ODD]
    keys: dict[bytes, set[str]] = defaultdict(set)
    for text in lines:
        key = _linescan.errfold_key(text.encode(), gated)
        if key is not None and (errfold.shape_kind(text) is gated or not gated):
            msg = split_ray(text)[0]
            keys[key].add(template(redact(msg)))
            if "." not in text and "0x" not in text and errfold.shape_kind(text) is gated:  # no fraction, address,
                assert key == shape(text)[1:]  # upper-case handle: the shape itself
    assert len(keys) > (100 if gated else 300) and all(len(t) == 1 for t in keys.values())


def test_lines_the_c_side_may_not_key() -> None:
    for text in ('ERROR x: "quoted" failed', "ERROR x: it's failed", "ERROR ya29.abc failed", "ERROR 1//0 failed",
                 "ERROR R8_abc failed", "ERROR gr1348941xyz failed", "ERROR caf\u00e9 failed", "ERROR\tfailed"):
        assert _linescan.errfold_key(text.encode()) is None, text


@pytest.mark.parametrize("path", getattr(_linescan, "PATHS", ()))
def test_the_key_is_the_same_whichever_loop_reads_the_classes_of_the_bytes(path: str) -> None:
    # err_key reads its bytes' classes (word, digit, [0-9a-f], a gate's letter) as bits made 32 bytes a step on SIMD
    # CPUs (else one by one); words across two words of bits, the last bytes of a line, gates beside digits
    words = ["ERROR", "x:", "0xDEADbeef12", "deadbeefcafe", "abcdef12", "1a2b3c4d", "12345678-1234-1234-1234-123456789abc",
             "10.0.0.1:8080", "1.5", "ya29", "r8_q", "gr1348941", "ar12", "Rr8", "1//0", "/0", "1/", "part-7a02420b.bin",
             "failed", "_", "(7)", "a" * 70, "9" * 70, "b1" * 40, "'", "caf\u00e9", "\t"]
    rng = random.Random(11)
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(3000)]
    lines += [("x" * k + " 12ab " + "7" * k)[:m] for k in (30, 31, 32, 33, 63, 64, 65) for m in (31, 32, 33, 64, 65, 99)]
    default = _linescan.SIMD
    try:
        _linescan.set_simd("")
        want = [(_linescan.errfold_key(t.encode(), False), _linescan.errfold_key(t.encode(), True)) for t in lines]
        _linescan.set_simd(path)
        got = [(_linescan.errfold_key(t.encode(), False), _linescan.errfold_key(t.encode(), True)) for t in lines]
    finally:
        _linescan.set_simd(default)
    assert got == want
    assert sum(k is not None for k, _ in want) > 200 and sum(k is None for k, _ in want) > 200


def test_an_address_is_one_mark_and_a_fraction_stays_apart() -> None:
    a, b = (_linescan.errfold_key(t.encode()) for t in ("ERROR peer 10.0.0.1:80 down", "ERROR peer 192.168.10.200 down"))
    assert a == b
    assert _linescan.errfold_key(b"ERROR took 1.5 s") != _linescan.errfold_key(b"ERROR took 15 s")
    assert _linescan.errfold_key(b"ERROR took 1 s") == _linescan.errfold_key(b"ERROR took 12345 s")


def test_which_regexes_answer_alike_on_a_whole_key() -> None:
    reward = r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b(?:\([^)]*\))?:"
    assert blind(reward)
    for rx in (r"exit code [1-9]\d*", r"\d+ attempts", r"took \w{3} s", r"[a-f]+ failed", r"dead failed", r"x\w?y"):
        assert not blind(rx), rx
    assert impossible("Job '(?P<job>[^']+)' failed", "ERROR job failed")
    assert impossible("(?:exited with (?:code|status)|exit status) (?P<code>[1-9]\\d*)", "ERROR failed")
    assert not impossible("(?:exited with (?:code|status)|exit status) (?P<code>[1-9]\\d*)", "it exit status 3")
    assert not impossible("dead(beef)", "ERROR deadbeef")  # a hex word: another line of its key may hold it


# -- both ways give one report ------------------------------------------------------------------------------------

INJECTED = {
    900: ["[2026-05-24 01:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
          '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2620, in run',
          "    scheduler.event_loop_overlap()",
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
          "79.11 GiB of which 1.50 GiB is free."],
    2400: ["[2026-05-24 01:10:00] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: "
           "0.2100 -> 0.4433"],
    2405: ["[2026-05-24 01:10:01] Job 'rollout-7' failed"],
    3000: ["[2026-05-24 01:20:00] ERROR scheduler: \"quoted\" failed", "ValueError: bad value 7"],
    5200: ["[2026-05-24 01:30:00] Received sigterm, shutting down (SIGTERM)"],
}


def errors_log(n: int, seed: int, tail: list[str] | None = None) -> list[str]:
    lines = error_lines(n, seed)
    out: list[str] = []
    for i, ln in enumerate(lines):
        out += INJECTED.get(i, [])
        out.append(ln)
    return out + (tail or [])


@pytest.mark.parametrize("tail", [None, ['  File "/x/y.py", line 3, in f', "    f()"]])
def test_an_error_storm_with_claims_tracebacks_and_a_shutdown_gives_one_report(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch,
                                                                               tail: list[str] | None) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "sglang-engine-0.log").write_text("\n".join(errors_log(7000, 3, tail)) + "\n")
    (run / "sglang-engine-1.log").write_text("\n".join(error_lines(4000, 4)) + "\n")
    folded = report(run, monkeypatch, True)
    assert folded == report(run, monkeypatch, False)
    counted = sum(r[1] for h in hits_of(run / "sglang-engine-0.log", monkeypatch) if h[0] == K_ERRS for r in h[4])
    assert counted > 3500  # most of the storm before the shutdown (line 5200) was counted in C, not handed over
    first, second = folded["findings"][:2]  # the OOM's exception line; the exception line no rule explains
    assert (first["rule"], first["evidence"][0]["line"]) == ("serving.engine-oom-graph-capture", 904)
    assert (second["rule"], second["evidence"][0]["line"], second["count"]) == ("unclassified", 3008, 1)
    assert sum(f["count"] for f in folded["findings"] if f["rule"] == "unclassified") > 600


def fixture_runs() -> list[Path]:
    return sorted(p for p in (FIXTURES / "real").glob("*/input")) + sorted((FIXTURES / "real-extra").glob("*/input"))


@pytest.mark.parametrize("run", fixture_runs(), ids=lambda p: p.parent.name)
def test_the_fixtures_give_one_report_both_ways(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert report(run, monkeypatch, True) == report(run, monkeypatch, False)


def test_fixture_lines_among_an_error_storm_give_one_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fixture log's lines, spread through a storm of error lines: claims, windows and tracebacks among lines
    the C side counts."""
    storm = error_lines(20000, 9)
    for i, log in enumerate(sorted((FIXTURES / "real").glob("*/input/*.log"))[:12]):
        own = log.read_text(errors="replace").splitlines()[:400]
        mixed: list[str] = []
        step = max(1, len(storm) // max(1, len(own)))
        for k, ln in enumerate(own):
            mixed += storm[k * step % len(storm):k * step % len(storm) + step // 3]
            mixed.append(ln)
        run = tmp_path / f"r{i}"
        run.mkdir()
        (run / log.name).write_text("\n".join(mixed) + "\n")
        assert report(run, monkeypatch, True) == report(run, monkeypatch, False), log


# -- cost --------------------------------------------------------------------------------------------------------

def test_a_storm_of_error_lines_reaches_python_as_a_bounded_number_of_lines(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(error_lines(100_000, 5)) + "\n")
    hits = hits_of(log, monkeypatch)
    lines = sum(1 for h in hits if h[0] in (K_CAND, K_KNOWN))
    records = [r for h in hits if h[0] == K_ERRS for r in h[4]]
    counted = sum(r[1] for r in records)
    assert lines + counted == 100_000
    assert lines < 12_000  # the first of each key, the lines near a chunk's end: not a line each
    assert sum(1 for h in hits if h[0] == K_CAND) < 2_000  # and most of those of a known key: no rule tried on them
    assert len(records) < 2_000  # a record per key, per file


def test_the_counts_survive_the_trip_from_a_reading_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stages (parallel.Staged: a worker reads, this process parses): the record of counts is a chunk of no
    bytes, packed and sent as the others are."""
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(errors_log(6000, 11)) + "\n")
    monkeypatch.setattr(fastscan, "ERRFOLD_FROM", 0)
    monkeypatch.delenv("TRIAGE_NO_ERRFOLD", raising=False)
    scanner = Scanner(LIB)
    lf = discover([str(log)])[0][0]
    with open(lf.path, "rb") as stream:
        items = [i.packed() if isinstance(i, fastscan.Chunk) else i
                 for i in fastscan.read_chunks(scanner.needles, lf, stream)]
    assert any(h[0] == K_ERRS and h[4] for i in items if isinstance(i, fastscan.Chunk) for h in i.hits)

    class Staged:
        def items(self, note):  # type: ignore[no-untyped-def]
            return iter(items)

        def reopen(self, rest):  # type: ignore[no-untyped-def]
            raise AssertionError("no line longer than a chunk here")

    staged = scanner.scan(lf, staged=Staged())
    assert not staged.errors
    one = Scanner(LIB).scan(discover([str(log)])[0][0])

    def view(res):  # type: ignore[no-untyped-def]
        return ([(ln.lineno, ln.text) for ln in res.unclaimed],
                sorted((f.first.lineno, f.last.lineno, f.count) for f in res.folded), [h.line.lineno for h in res.hits])

    assert view(staged) == view(one)
    assert sum(f.count for f in one.folded) > 3000


def test_a_new_key_after_the_first_chunk_costs_one_line_unless_a_rule_may_claim_it(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A line of a rule's anchor (`failed`, `Segmentation fault`) whose key is new in a later chunk is taken for one
    that reads nothing while the chunk is scanned: when it folds, its neighbours stay counted (one line reaches Python,
    not the 2 * reach around it); when a rule may claim it, the chunk is scanned again and its neighbours are
    Python's, as they would be had each line come (the report is the same both ways)."""
    storm = error_lines(120_000, 21)  # chunks of 4 MiB: ~33 k lines
    rare = "[2026-05-24 09:00:00 DP0 TP0] ERROR router: write to /mnt/ckpt/part-abcdefab.bin failed, 7 retries left"
    claimed = "[2026-05-24 09:00:01 DP0 TP0] ERROR worker 3: Segmentation fault (core dumped) at step 12"
    lines = storm[:70_000] + [claimed] + storm[70_000:105_000] + [rare] + storm[105_000:]
    log = tmp_path / "run" / "sglang-engine-0.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(fastscan, "ERRFOLD_FROM", 0)
    monkeypatch.delenv("TRIAGE_NO_ERRFOLD", raising=False)
    scanner = Scanner(LIB)
    files, _ = discover([str(log)])
    with open(files[0].path, "rb") as stream:
        returned = sorted(item.base + h[1] + 1 for item in fastscan.read_chunks(scanner.needles, files[0], stream)
                          if isinstance(item, fastscan.Chunk) for h in item.hits if h[0] in (K_CAND, K_KNOWN))
    assert 70_001 in returned and 105_002 in returned
    near_rare = [n for n in returned if 0 < abs(n - 105_002) <= 61]
    near_claimed = [n for n in returned if 0 < abs(n - 70_001) <= 61]
    assert len(near_claimed) == 122  # every line within reach of the claimed line: Python's
    assert near_rare == []
    folded = report(log.parent, monkeypatch, True)
    assert folded == report(log.parent, monkeypatch, False)
    segv = [f for f in folded["findings"] if f["rule"] == "other.segfault"]
    assert [e["line"] for e in segv[0]["evidence"]][:1] == [70_001]


def returned_lines(log: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """(the line numbers of the lines a file's chunks returned to Python, the line each chunk starts after)."""
    monkeypatch.setattr(fastscan, "ERRFOLD_FROM", 0)
    monkeypatch.delenv("TRIAGE_NO_ERRFOLD", raising=False)
    lf = discover([str(log)])[0][0]
    returned, bases = [], []
    with open(lf.path, "rb") as stream:
        for item in fastscan.read_chunks(Scanner(LIB).needles, lf, stream):
            if isinstance(item, fastscan.Chunk) and item.data:
                bases.append(item.base)
                returned += [item.base + h[1] + 1 for h in item.hits if h[0] in (K_CAND, K_KNOWN)]
    return sorted(returned), bases


@pytest.mark.parametrize("after", [0, 1, 64, 65, 66])
def test_a_chunk_looks_ahead_before_it_hands_over_the_lines_near_its_end(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        after: int) -> None:
    """errfold.ErrFold.ahead: the error-like lines within reach of a chunk's end are counted when the lines that follow
    read nothing (before, a chunk's last `reach` lines all reached Python, whatever came next); a line a rule may
    claim just past the end (in the lines looked at, or just beyond) still has every line within reach before it
    returned, and the report is the one each line reaching Python gives."""
    storm = error_lines(80_000, 23)  # the first part, two chunks of 4 MiB, more
    log = tmp_path / "run" / "sglang-engine-0.log"
    log.parent.mkdir()
    log.write_text("\n".join(storm) + "\n")
    reach = Scanner(LIB).needles.errs.reach
    returned, bases = returned_lines(log, monkeypatch)
    end = bases[2]  # the line the first full chunk ends with
    assert len([n for n in returned if end - reach < n <= end]) <= 3  # (a key met the first time there)
    claimed = "[2026-05-24 09:00:01 DP0 TP0] ERROR worker 3: Segmentation fault (core dumped) at step 12"
    at = end + after  # 0-based: the line `after` lines past the chunk's end
    log.write_text("\n".join(storm[:at] + [claimed] + storm[at + 1:]) + "\n")
    returned, _ = returned_lines(log, monkeypatch)
    no = at + 1
    assert no in returned
    assert set(range(no - reach, no + reach + 1)) <= set(returned)
    folded = report(log.parent, monkeypatch, True)
    assert folded == report(log.parent, monkeypatch, False)
    assert [f["evidence"][0]["line"] for f in folded["findings"] if f["rule"] == "other.segfault"] == [no]


def test_a_kept_header_keys_lines_as_the_whole_line_does() -> None:
    """_linescan.c err_head: the key of a line's `[...] ` header is kept and reused for the next lines whose header
    differs only in its digits; the slots lines get (errfold_add, through it) group them as their whole keys do
    (errfold_key, without it), for headers it may keep and headers it may not (`0x`, a gate's letters, a slash)."""
    lines = error_lines(3000, 17)
    heads = ["[2026-05-24 00:50:01 DP0 TP0] ", "[2026-05-24 00:50:01 DP0 TP0 0x1f] ", "[ya29 12] ", "[r8_1] ",
             "[1//0] ", "[1/2] ", "[7] ", "[2026-05-24 00:50:01] ", ""]
    rng = random.Random(5)
    state = _linescan.errfold_new(b"\x00", 61)
    slot_of: dict[bytes, int] = {}
    for ln in lines:
        msg = split_ray(ln)[0].split("] ", 1)[-1]
        head = rng.choice(heads)
        head = "".join(str(rng.randrange(10)) if c.isdigit() else c for c in head)
        raw = (head + msg).encode()
        key = _linescan.errfold_key(raw)
        slot = _linescan.errfold_add(state, raw, (0,), False)
        if key is None:
            assert slot == -1, raw
            continue
        assert slot_of.setdefault(key, slot) == slot, raw
    assert len(set(slot_of.values())) == len(slot_of) > 100


# -- lines taken whole --------------------------------------------------------------------------------------------

def test_the_pieces_of_a_needle_are_what_every_line_of_a_key_holds_as_it_is() -> None:
    assert errfold.pieces("ERROR") is None and errfold.pieces("failed") is None  # stable: no digit, no hex word
    assert errfold.pieces("exceeded") is None and errfold.pieces("--max-tokens-per-gpu") is None
    assert errfold.pieces("exit code 1") == (b"exit code ",)
    assert errfold.pieces("EL0004") == (b"EL1111",)  # a word with a letter no hex token holds: its digits as `1`
    assert errfold.pieces("Bad Gateway") == (b" Gateway",)  # `Bad` may be part of a hex token
    assert errfold.pieces("Signal 9 (SIGKILL)") == (b"Signal ", b" (SIGKILL)")
    assert errfold.pieces("peer 10.0.0.1:80 x") == (b"peer ", b" ")  # an address's dots and colon: one mark
    assert errfold.pieces("0xdead") == () and errfold.pieces("x") == ()  # may be anywhere
    assert errfold.pieces(None) is None and errfold.pieces("\u2022 Avg") is None  # no keyed line holds these


ODD_NEEDLES = ["ERROR x: Error failed", "ERRORfailed now", "ERROR Failed: failed failed", "CRITICAL: Error code: 429 x",
               "ERROR EL0004 failed", "ERROR: Bad Gateway failed", "ERROR: deadbeefcafe1 Bad failed", "Failed ERROR 0xbad",
               "ERROR failed attempts: 504", "ERROR e2e_latency failed 12", "ERROR usage: 0.95 failed"]


def mixed_log(n: int, seed: int) -> list[str]:
    """An errors-profile log: error lines of the bench's messages, stats rows, claims, tracebacks, a shutdown, and lines
    whose needles lie close together or hold digits and hex words."""
    rng = random.Random(seed)
    out: list[str] = []
    inject = {k * n // 6000: v for k, v in INJECTED.items()}  # the shutdown (nothing counted after it) near the end
    for i, ln in enumerate(error_lines(n, seed)):
        out += inject.get(i, [])
        out.append(ln)
        if rng.random() < 0.05:
            out.append(f"[2026-05-24 01:00:{i % 60:02d} DP0 TP0] Decode batch, #running-req: {rng.randrange(300)}, "
                       f"#token: {rng.randrange(90000)}, token usage: 0.{rng.randrange(10, 99)}, cuda graph: True, "
                       f"gen throughput (token/s): {rng.uniform(100, 3000):.2f}, #queue-req: 0")
        if rng.random() < 0.01:
            odd = rng.choice(ODD_NEEDLES)
            out.append(f"[2026-05-24 01:00:{i % 60:02d} DP0 TP0] " + "".join(
                str(rng.randrange(10)) if c.isdigit() else c for c in odd))
    return out + ["[2026-05-24 02:00:00 DP0 TP0] CRITICAL: worker exited with exit code 1; ERROR failed"]


def kept_states(monkeypatch: pytest.MonkeyPatch) -> list:
    """The C states of every ErrFold the scan makes from now on, in order (to ask errfold_whole of them)."""
    states: list = []

    class Kept(errfold.ErrFold):
        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            states.append(self.state)

    monkeypatch.setattr(fastscan, "ErrFold", Kept)
    return states


@pytest.mark.parametrize("path", ["", *getattr(_linescan, "PATHS", ())])
def test_lines_taken_whole_are_what_the_search_makes_of_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             path: str) -> None:
    """_linescan.c err_run: the lines of keys whose needles follow from their text are not searched for needles; what
    the reading stage yields (every line returned, with its needles, every count) is what the search gives, on every
    loop of the C side."""
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(mixed_log(40_000, 3)) + "\n")
    states = kept_states(monkeypatch)
    default = _linescan.SIMD
    try:
        _linescan.set_simd(path)
        monkeypatch.setenv("TRIAGE_NO_ERRRUN", "1")
        searched = hits_of(log, monkeypatch)
        monkeypatch.delenv("TRIAGE_NO_ERRRUN")
        whole = hits_of(log, monkeypatch)
    finally:
        _linescan.set_simd(default)
    assert whole == searched
    assert _linescan.errfold_whole(states[0]) == 0 and _linescan.errfold_whole(states[1]) > 30_000
    assert sum(r[1] for h in whole if h[0] == K_ERRS for r in h[4]) > 20_000


def test_an_error_storm_gives_one_report_with_lines_taken_whole_or_searched(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "sglang-engine-0.log").write_text("\n".join(mixed_log(8_000, 8)) + "\n")
    whole = report(run, monkeypatch, True)
    monkeypatch.setenv("TRIAGE_NO_ERRRUN", "1")
    assert report(run, monkeypatch, True) == whole == report(run, monkeypatch, False)
