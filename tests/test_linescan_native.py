"""The SIMD path of the C prefilter (`_linescan.scan`) must return exactly what its scalar loop returns.

`_linescan.scan_scalar` always runs the scalar loop (the reference); `scan` takes the loop that
`_linescan.set_simd` chose (by default the fastest of `_linescan.PATHS`, the SIMD paths this CPU runs;
`_linescan.SIMD` names it). Each test runs every path in PATHS against the scalar loop. Inputs: every text file under fixtures/, needles at every
offset around 16/32/64-byte block boundaries and at the ends of the buffer, odd lengths, \\r / ESC / NUL
lines, the empty buffer, and random buffers built from needle fragments (hypothesis), with the
library's needles and with small random needle sets that collide a lot.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.library.rules import load_library
from triage.scan import native
from triage.scan.scanner import Scanner

ls = native._linescan
pytestmark = pytest.mark.skipif(ls is None or not hasattr(ls, "scan_scalar"),
                                reason="the C prefilter (triage._linescan) is not built")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
COMPRESSED = (b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"\xfd7zXZ", b"BZh", b"PK\x03\x04")
STEPS = ((0, 0), (0, 1), (0, 97), (500, 4096), (1 << 40, 0))  # (next_sample, step)

DECODE = (b"[2026-05-24 00:50:00 DP0 TP0] Decode batch, #running-req: 38, #token: 237658, token usage: 0.32, "
          b"cuda graph: True, gen throughput (token/s): 5820.42, #queue-req: 0")
PREFILL = (b"[2026-05-24 00:50:06 DP0 TP0] Prefill batch, #new-seq: 5, #new-token: 3709, #cached-token: 750, "
           b"token usage: 0.96, #running-req: 60, #queue-req: 3, cuda graph: False, input throughput (token/s): 52657.29")
FILLER = b"[2026-05-24 00:50:00] INFO:     10.0.183.111:46537 - \"POST /generate HTTP/1.1\" 200 OK"


@pytest.fixture(scope="module")
def needles() -> native.Needles:
    return Scanner(load_library(None)).needles or native.Needles(set(), set())


@pytest.fixture(scope="module")
def texts(needles: native.Needles) -> list[bytes]:
    return [n for n, _ in needles.items if len(n) > 1]


PATHS = tuple(getattr(ls, "PATHS", ()))


@pytest.fixture(autouse=True, scope="module")
def restore_path():  # type: ignore[no-untyped-def]
    default = ls.SIMD
    yield
    ls.set_simd(default)


def same(matcher: object, buf: bytes, steps: tuple[tuple[int, int], ...] = STEPS) -> None:
    """Every SIMD path this CPU has gives what the scalar loop gives."""
    for next_sample, step in steps:
        for origins in (False, True):
            want = ls.scan_scalar(matcher, buf, next_sample, step, origins)
            for path in PATHS:
                ls.set_simd(path)
                got = ls.scan(matcher, buf, next_sample, step, origins)
                assert got == want, (path, buf[:200], next_sample, step, origins)


def matcher_for(needles: native.Needles, buf: bytes) -> object:
    return needles.matcher(buf[:native.PAIR_SAMPLE])


def test_the_module_says_which_path_scan_takes() -> None:
    assert set(PATHS) <= {"avx2", "avx512vbmi"}
    assert ls.SIMD in PATHS + ("",)
    old = ls.set_simd("")
    assert ls.SIMD == "" and ls.set_simd(old) == ""
    with pytest.raises(ValueError):
        ls.set_simd("sse9")


def test_more_single_bytes_than_the_compare_takes() -> None:
    """Up to 4 single-byte needles are compared in registers; with more, scan still agrees."""
    spec = [(b"Decode batch", 0, 1), (b"usage: ", 1, 2)] + [(bytes([c]), 0, 1 << k) for k, c in enumerate(b"\r\x1b\x00\x07\x08")]
    m = ls.compile(spec)
    for special in b"\r\x1b\x00\x07\x08":
        same(m, DECODE + b"\n" + FILLER + bytes([special]) + b"\n" + DECODE)


def test_empty_and_tiny_buffers(needles: native.Needles, texts: list[bytes]) -> None:
    m = matcher_for(needles, DECODE)
    for buf in (b"", b"\n", b"x", b"\r", b"\x00", b"\x1b", b"\n\n\n", b"ab", b"abc"):
        same(m, buf)
    for t in texts:
        same(m, t)
        same(m, t + b"\n")


def test_every_fixture_file(needles: native.Needles) -> None:
    files = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file()]
    checked = 0
    for path in files:
        data = path.read_bytes()
        if data.startswith(COMPRESSED):
            continue
        m = matcher_for(needles, data)
        same(m, data)
        cut = data.rfind(b"\n", 0, len(data) // 2) + 1  # a chunk of whole lines, as fastscan passes them
        same(m, data[:cut])
        same(m, data[cut:])
        checked += 1
    assert checked > 50


def test_each_needle_at_every_offset_around_block_boundaries(needles: native.Needles,
                                                             texts: list[bytes]) -> None:
    head = b"\n".join([DECODE, PREFILL, FILLER] * 20)
    m = matcher_for(needles, head)
    for t in texts:
        for off in range(0, 136):
            pad = (FILLER * 2)[:off]
            same(m, pad + t + b" tail\n" + DECODE + b"\n", steps=((0, 0), (0, 64)))
            same(m, pad + t, steps=((0, 0),))  # the needle ends the buffer (no newline)
            same(m, t + pad, steps=((0, 0),))  # the needle starts it


def test_needles_straddling_64_byte_blocks_in_long_buffers(needles: native.Needles, texts: list[bytes]) -> None:
    m = matcher_for(needles, DECODE)
    rnd = random.Random(7)
    for base in (16, 32, 64, 128, 4096, 4096 * 3):
        for delta in range(-20, 21):
            parts = []
            pos = 0
            while pos < base * 2 + 200:
                t = rnd.choice(texts)
                gap = max(0, base + delta - pos % base - len(t) // 2)
                parts.append(FILLER[:gap % len(FILLER)] + t + (b"\n" if rnd.random() < 0.3 else b" "))
                pos += len(parts[-1])
            buf = b"".join(parts)
            same(m, buf, steps=((0, 0), (0, 50)))
            same(m, buf[:-1], steps=((0, 0),))  # odd and even lengths
            same(m, buf[1:], steps=((0, 0),))


def test_stats_rows_in_bulk_with_samples_and_candidates(needles: native.Needles) -> None:
    rows = []
    for i in range(3000):
        r = DECODE if i % 3 else PREFILL
        if i % 97 == 0:
            r = r.replace(b"0.32", b"0.93")
        if i % 211 == 0:
            r = b"  " + r
        if i % 307 == 0:
            r = r + b" Traceback (most recent call last):"
        rows.append(r)
    buf = b"\n".join(rows) + b"\n"
    m = matcher_for(needles, buf)
    same(m, buf)
    same(m, buf[:-1])
    for step in (1, 1000, 20000, 1 << 20):
        same(m, buf, steps=((0, step), (12345, step)))


def test_lines_with_cr_esc_and_nul(needles: native.Needles) -> None:
    m = matcher_for(needles, DECODE)
    for special in (b"\r", b"\x1b[0m", b"\x00", b"\r\n"):
        for off in range(0, 70):
            line = FILLER[:off] + special + FILLER
            same(m, b"\n".join([DECODE, line, PREFILL]) + b"\n", steps=((0, 0),))
            same(m, line, steps=((0, 0),))
    same(m, (DECODE + b"\r") * 50)
    same(m, b"\x00" * 1000 + DECODE)
    same(m, b"(pid=123) " + DECODE + b"\n")  # a Ray actor prefix on a sampled row


def fragments(texts: list[bytes]) -> list[bytes]:
    out = [b"\n", b" ", b"\r", b"\x1b", b"\x00", b"(", b", ", b"0.95", b"0.3", b"1.0", b"[3]", b". ", b"(mixed #running-req: 4)",
           DECODE, PREFILL, FILLER[:40]]
    for t in texts:
        out += [t, t[:len(t) // 2], t[len(t) // 2:], t[1:], t[:-1]]
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_buffers_of_needle_fragments(needles: native.Needles, texts: list[bytes], data: st.DataObject) -> None:
    frags = fragments(texts)
    pieces = data.draw(st.lists(st.sampled_from(frags) | st.binary(max_size=8), max_size=60))
    buf = b"".join(pieces)
    m = matcher_for(needles, buf)
    step = data.draw(st.sampled_from([0, 1, 7, 100]))
    start = data.draw(st.integers(0, len(buf) + 1))
    same(m, buf, steps=((start, step),))


ALPHABET = b"ab\n ,.0(\r"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_needle_sets_over_a_small_alphabet(data: st.DataObject) -> None:
    """Needles and text from a few letters: many overlapping, repeated and newline-crossing matches."""
    word = st.binary(min_size=3, max_size=12).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b))
    spec = []
    for w in data.draw(st.lists(word, min_size=1, max_size=12)):
        off = data.draw(st.integers(0, len(w) - 3))
        spec.append((w, off, data.draw(st.sampled_from([0, 0, 1, 2]))))
    if data.draw(st.booleans()):
        spec += [(b"\r", 0, 1), (b"\x1b", 0, 2), (b"\x00", 0, 4)]
    m = ls.compile(spec)
    text = data.draw(st.binary(max_size=600).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b)))
    same(m, text, steps=((0, 0), (0, 5), (len(text) // 2, 9)))


def test_batched_episodes_and_counted_families_are_the_same_on_every_path(needles: native.Needles) -> None:
    import random
    import re

    rng = random.Random(11)
    rows = []
    for i in range(6000):
        r = rng.random()
        if r < 0.5:
            rows.append(b"[2026-05-24 00:53:%02d TP0] KV cache pool is full. Retract requests. #retracted_reqs: %d, "
                        b"#new_token_ratio: 0.%d -> 0.%d" % (i % 60, rng.randrange(1, 50), rng.randrange(10), 5))
        elif r < 0.51:
            rows.append(b"RuntimeError: CUDA error: out of memory")
        else:
            row = DECODE if rng.random() < 0.8 else PREFILL
            if rng.random() < 0.3:
                row = row.replace(b"0.32", b"0.9%d" % rng.randrange(10))
            rows.append(row)
    buf = b"\n".join(rows) + b"\n"
    m = matcher_for(needles, buf)
    head = next(r for r in rows if b"Retract" in r)
    (hit,) = [h for h in ls.scan_scalar(m, head + b"\n", 0, 0)[4] if h[0] == native.K_CAND]
    text = re.sub(rb"[0-9]+", b"", head)
    run = len(re.findall(rb"[0-9]+", head[:head.index(b"reqs: ") + 6]))
    for family in (None, (text, hit[4], -1, 64, run), (text, hit[4], -100, 64, -1)):
        for keep, bar in ((0, (-1.0, -1)), (256, (-1.0, -1)), (4, (0.0, 1)), (4, (5.0, 3))):
            args = (m, buf, 0, 1000, False, 500, 20, keep, *bar, family)
            want = ls.scan_scalar(*args)
            kinds = {h[0] for h in want[4]}
            assert (native.K_BATCH in kinds) == (keep > 0) and (native.K_FAMILY in kinds) == (family is not None)
            for path in PATHS:
                ls.set_simd(path)
                assert ls.scan(*args) == want, (path, family, keep, bar)


def test_rows_of_several_origins_fold_the_same_on_every_path(needles: native.Needles) -> None:
    """DP ranks and Ray actors interleaved, pressure flipping in some of them: the per-origin fold (records naming
    their origin, batches with each origin's bar) is the same on every path, with or without per-origin counts."""
    rng = random.Random(12)
    rows = []
    for _ in range(8000):
        rank, actor = rng.randrange(6), rng.randrange(3)
        row = (DECODE if rng.random() < 0.8 else PREFILL).replace(b"DP0 TP0", b"DP%d TP%d" % (rank, rank))
        if rng.random() < (0.7 if rank < 3 else 0.05):
            row = row.replace(b"usage: 0.32", b"usage: 0.9%d" % rng.randrange(10)).replace(b"#queue-req: 0",
                                                                                            b"#queue-req: 4")
        else:
            row = row.replace(b"usage: 0.96", b"usage: 0.41")
        if rank == 5:
            row = b"(SGLangEngine pid=%d, ip=10.0.0.%d) " % (4100 + actor, actor) + row
        rows.append(row)
        if rng.random() < 0.003:
            rows.append(b"RuntimeError: CUDA error: out of memory")
    buf = b"\n".join(rows) + b"\n"
    m = matcher_for(needles, buf)
    for origins in (False, True):
        for keep, bars in ((0, None), (256, None), (4, {b"DP1": (0.0, 1), b"pid=4101 DP5": (5.0, 3)})):
            args = (m, buf, 0, 1000, origins, 500, 20, keep, -1.0, -1, None, bars)
            want = ls.scan_scalar(*args)
            folded = {h[4][0] for h in want[4] if h[0] in (native.K_FOLD, native.K_BATCH)}
            if origins:
                assert {b"DP0", b"DP1", b"DP2", b"pid=4100 DP5"} <= folded
            else:  # one origin assumed: the second one says so
                assert want[1] & native.F_MANY
            for path in PATHS:
                ls.set_simd(path)
                assert ls.scan(*args) == want, (path, origins, keep)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**13 - 1), st.integers(1, 13), st.integers(1, 10**14),
                          st.integers(0, 4)), min_size=1, max_size=20))
def test_folded_values_are_the_floats_python_reads(needles: native.Needles, rows: list[tuple[int, int, int, int]]) -> None:
    """The fold reads usage and queue without strtod for most values: each must be the double Python's float() gives."""
    texts, lines = [], []
    for frac, width, queue, point in rows:
        usage = "0.9" + str(frac).zfill(width)[:width]  # 0.9 and up to 13 more digits (16 at most fold): pressed
        q = f"{queue // 10**point}.{queue % 10**point:0{point}d}" if point else str(queue)  # 12, 1.5, 0.0035
        texts.append((usage, q))
        lines.append(DECODE.replace(b"usage: 0.32", b"usage: " + usage.encode()).replace(b"#queue-req: 0",
                                                                                     b"#queue-req: " + q.encode()))
    buf = b"\n".join(lines) + b"\n"
    out = ls.scan_scalar(needles.matcher(buf), buf, 1 << 40, 0, False, 500, 20, 0)
    (rec,) = [h[4][1] for h in out[4] if h[0] == native.K_FOLD]
    assert [(r[2], r[3]) for r in rec[10]] == [(float(u), float(q)) for u, q in texts]
