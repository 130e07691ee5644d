"""s17b: the error-storm path's per-line costs moved, results unchanged.

- _linescan.errfold_lookup answers for a chunk's hits what errfold_find answers for each (errfold.ErrFold.learn and
  known call it once a chunk, not once a line);
- err_key keys a number standing alone first (the commonest masked word of an error line): the keys stay those of the
  cascade it jumps (0x handle, UUID, hex token, address, fraction, a gate's digits beside a slash);
- errfold_commit swaps a key's lines with the call's instead of copying them: first, the one before the last and the
  last stay those of the lines counted, over chunks that count one line or many.

s18a: err_key finds the words it may mask at once (the bit after each one's end, by a carry through the words'
bytes) and each one's start back from its end; err_apart reads the class table (each byte beside a number as template._APART has it); a key's whole-line check
(err_slot_whole) finds the stable needles in its text by the text's pairs in the matcher's table, each occurrence once,
not each needle in turn; the table of texts holds each key's hash, length and bytes beside its slot.

s19a: on a CPU with AVX-512 VBMI2, a line of up to 127 bytes is keyed without err_key's loop when its words are of the
kinds the fast path takes (err_fast512): its keys are the loop's (the scalar path's), line for line.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from test_errfold import LIB, error_lines, hits_of, kept_states, report

from triage import template
from triage.scan import errfold, native
from triage.scan import prefiltered as fastscan
from triage.scan.native import K_ERRS, _linescan
from triage.scan.scanner import Scanner

pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")


# -- the key: a number standing alone first -------------------------------------------------------------------------

# (line, its key): each word a mark could take beside a number, as the cascade keyed them before the fast path
KEYS = [
    (b"ERROR took 12345 s", b"ERROR took 1 s"),
    (b"ERROR took 1234567 s", b"ERROR took 1 s"),
    (b"ERROR id 12345678 done", b"ERROR id 11111111 done"),  # 8 digits: a hex token, not a number
    (b"ERROR id 123456789012 done", b"ERROR id 111111111111 done"),
    (b"ERROR x=123.45, y=(7)", b"ERROR x=1.1, y=(1)"),  # a fraction stays apart
    (b"ERROR at 10.0.0.1 down", b"ERROR at \x01 down"),  # an address is one mark
    (b"ERROR at 10.0.0.1:8080 down", b"ERROR at \x01 down"),
    (b"ERROR n 12-34 k", b"ERROR n 11-11 k"),  # `-` after it: not standing alone
    (b"ERROR v1.2 k 3", b"ERROR v1.1 k 1"),
    (b"ERROR [42] {7} <9> |5| *3* &2& %1% #8# !6! ?4?", b"ERROR [1] {1} <1> |1| *1* &1& %1% #1# !1! ?1?"),
    (b"ERROR 12345678-1234-1234-1234-123456789012 x", b"ERROR 11111111-1111-1111-1111-111111111111 x"),
    (b"ERROR 7/8 done", b"ERROR 1/1 done"),
    (b"ERROR 42", b"ERROR 1"),
    (b"7 ERROR", b"1 ERROR"),
    (b"ERROR 0x1f and 0", b"ERROR \x00xaa and 1"),
]


@pytest.mark.parametrize("line,key", KEYS)
def test_a_number_standing_alone_keys_as_the_cascade_did(line: bytes, key: bytes) -> None:
    assert _linescan.errfold_key(line) == key


@pytest.mark.parametrize("line", [b"ERROR 1//0 here", b"ERROR 11//0 here", b"ERROR x 1//07 y"])
def test_a_number_beside_the_slash_gate_has_no_key(line: bytes) -> None:
    assert _linescan.errfold_key(line) is None


def test_a_gated_key_keeps_each_digit_of_a_number() -> None:
    assert _linescan.errfold_key(b"ERROR took 12345 s", True) == b"ERROR took 11111 s"


# every byte that is no word byte and no quote, beside a number on both sides: standing alone (one `1`) exactly where
# template._APART allows it, else its digits kept apart
BESIDE = [chr(c) for c in range(0x20, 0x7f) if not (chr(c).isalnum() or chr(c) in "_'\"")]


@pytest.mark.parametrize("c", BESIDE)
def test_a_byte_beside_a_number_stands_it_apart_as_the_template_says(c: str) -> None:
    apart = re.fullmatch(f"[{template._APART}]", c) is not None
    line = f"ERROR n {c}42{c} k".encode()
    want = f"ERROR n {c}1{c} k" if apart else f"ERROR n {c}11{c} k"
    assert _linescan.errfold_key(line) == want.encode()
    assert apart == (c in " ()[]{}=,;/#<>!?|*&%")  # the class table's bytes (_linescan.c err_cls_init)


# the part of a line after a word of letters and a blank keys as it does alone, wherever the 64-byte words of bits cut
# it: words that may be masked across two words of bits, ending on one's last bit or on the line's last byte, marks
# that take several words (a UUID, an address, a fraction) before or after others, words longer than 64 bytes
RESTS = ["42 deadbeef12 7a02420b e8e52171-fb97-cf6a-e6f4-4f65d4c32911 10.0.0.1:80 7.5 end 9",
         "12345678-1234-1234-1234-123456789abc 1.2.3.4 0xDEADbeef12 part-7a02420b.bin (7) x=3, y=[4]",
         "shard_01242 ar12 Rr8 x9 a1 r2 " + "9" * 70 + " " + "b1" * 40 + " " + "f" * 64 + " 0x1f 77",
         "v1.2 k 3 10.0.0.1 99999.1 1.2.3.4.5 12-34 7/8 abc 123456789012 abcdefabcdef 1a2b3c4d5e6f",
         "1", "12345678", "e8e52171-fb97-cf6a-e6f4-4f65d4c32911", "10.0.0.1:8080", "7.5", "_9_ 8_"]


@pytest.mark.parametrize("path", ["", *getattr(_linescan, "PATHS", ())])
@pytest.mark.parametrize("gated", [False, True])
def test_a_key_is_the_same_wherever_the_words_of_bits_cut_the_line(path: str, gated: bool) -> None:
    default = _linescan.SIMD
    try:
        _linescan.set_simd(path)
        for rest in RESTS:
            alone = _linescan.errfold_key(rest.encode(), gated)
            assert alone is not None, rest
            for k in range(1, 140):
                head = ("E" * k + " ").encode()
                assert _linescan.errfold_key(head + rest.encode(), gated) == head + alone, (k, rest)
    finally:
        _linescan.set_simd(default)


# -- s19a: err_fast512, a short line's key without a branch a word ---------------------------------------------------

# the pieces a line of up to 127 bytes is made of: each kind the fast path keys (numbers standing alone, hex tokens,
# other words holding a digit, UUIDs, addresses and their ports, fractions, `0x` handles) and each it leaves to the
# loop (gates, `//`, a UUID's first word where an address's port ends, many marks), beside every kind of byte
FAST_PIECES = ["0", "1", "12", "1234567", "12345678", "123456789012", "ab", "deadbeef", "deadbeefcafe", "b1", "fb97",
               "e8e52171", "7a4e862a0ad59000", "shard_01242", "Z", "q", "G", "x", "X", "A1", "12x", "c0ffee00", "_",
               " ", "(", ")", "[", "]", "=", ",", ";", "#", "<", ">", "!", "?", "|", "*", "&", "%", "+", "@", "~",
               "$", "^", "`", "\\", "-", ":", ".", "/", "1234-5678", "e8e52171-fb97-cf6a-e6f4-4f65d4c32911",
               "12345678-1234-1234-1234-123456789012", "abcdefab-abcd-abcd-abcd-abcdefabcdef", "e8e52171-fb97",
               "e8e52171-fb97-cf6a-e6f4-4f65d4c3291", "E8E52171-FB97-CF6A-E6F4-4F65D4C32911", "deadbeef-", "1.5",
               "10.0.0.1", "10.0.0.1:8080", "78.67", "1.2.3", "1.2.3.4.5", "999.1.1.1", "1.22222222", ".5", "5.",
               "1234567.1", "12345678.1", "0.0.0.0:1x", "1.2.3.4:", "1.2.3.4:12345678-1234-1234-1234-123456789012",
               "0x1f", "0xAB", "0x", "0xa1b2", "0xZZ", "0x1g", "0X1f", "00x1", "0x06389bccbd2c", "0xdeadBEEF",
               "ya29", "r8_", "gr1348941", "1//0", "//", "a2", "R1", "ERROR", "failed"]


@pytest.mark.parametrize("seed", range(4))
def test_a_short_line_keys_as_the_loop_keys_it(seed: int) -> None:
    """Lines of every length up to past 128 bytes made of FAST_PIECES: the key (plain and gated) of the SIMD path,
    which takes lines of up to 127 bytes without its loop where it can, is the scalar path's, which never does."""
    rnd = random.Random(seed)
    default = _linescan.SIMD
    lines = []
    for _ in range(5000):
        line = "".join(rnd.choice(FAST_PIECES) for _ in range(rnd.randint(1, 24)))
        lines.append(line[: rnd.choice([16, 63, 64, 65, 100, 127, 128, 160])].encode())
    try:
        got = [(_linescan.errfold_key(b), _linescan.errfold_key(b, True)) for b in lines]
        _linescan.set_simd("")
        want = [(_linescan.errfold_key(b), _linescan.errfold_key(b, True)) for b in lines]
    finally:
        _linescan.set_simd(default)
    assert [b for b, g, w in zip(lines, got, want) if g != w] == []


# each kind the fast path keys, alone in a short line (the keys the loop made before it)
FAST_KEYS = [
    (b"ERROR failed after 2818 attempts (61 ms)", b"ERROR failed after 1 attempts (1 ms)"),
    (b"ERROR request e8e52171-fb97-cf6a-e6f4-4f65d4c32911 failed", b"ERROR request 1aaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa failed"),
    (b"ERROR request 12345678-1234-1234-1234-123456789012 x", b"ERROR request 11111111-1111-1111-1111-111111111111 x"),
    (b"ERROR peer 10.50.128.73:15402 after 0 frames", b"ERROR peer \x01 after 1 frames"),
    (b"ERROR late by 78.67 s", b"ERROR late by 1.1 s"),
    (b"ERROR handle 0x91368e770350 is stale", b"ERROR handle \x00xaaaaaaaaaaaa is stale"),
    (b"ERROR handle 0xDEADbeef12 is stale", b"ERROR handle \x00xAAAAaaaaaa is stale"),
    (b"ERROR object 7a4e862a0ad59000 (273 bytes)", b"ERROR object 1aaaaaaaaaaaaaaa (1 bytes)"),
    (b"write to /mnt/ckpt/shard_03481/part-7355744e.bin failed", b"write to /mnt/ckpt/shard_11111/part-1aaaaaaa.bin failed"),
    (b"ERROR attempt 6/8 then 1//0", None),
    (b"ERROR token ya29.abc", None),
]


@pytest.mark.parametrize("line,key", FAST_KEYS)
def test_each_kind_the_fast_path_keys_keys_as_before(line: bytes, key: bytes | None) -> None:
    assert _linescan.errfold_key(line) == key


# -- err_slot_whole: a key's needles found by its text's pairs ------------------------------------------------------

# error lines whose key texts hold needles where a pair walk could miss or count one twice: at the text's first and
# last bytes, overlapping, back to back, more than 64 times (never taken whole), a needle inside a word
NEEDLE_PLACES = ["failed ERROR at the start {n}", "ERROR {n} ends failed", "ERROR ERRORERROR failedfailed {n}",
                 "ERROR Failed: failed failed {n}", "ERROR {n}" + " failed" * 70, "ERRORfailed {n} now",
                 "CRITICAL failed to bind ERROR {n} times", "ERROR x{n}: FailedFailed Error"]


def test_lines_taken_whole_find_each_needle_of_their_key_as_the_search_does(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(18)
    lines = error_lines(20_000, 18)
    for i in range(0, len(lines), 3):
        lines[i] = f"[2026-05-24 01:00:{i % 60:02d} DP0 TP0] " + rng.choice(NEEDLE_PLACES).format(n=rng.randrange(999))
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(lines) + "\n")
    states = kept_states(monkeypatch)
    monkeypatch.setenv("TRIAGE_NO_ERRRUN", "1")
    searched = hits_of(log, monkeypatch)
    monkeypatch.delenv("TRIAGE_NO_ERRRUN")
    whole = hits_of(log, monkeypatch)
    assert whole == searched
    assert _linescan.errfold_whole(states[0]) == 0 and _linescan.errfold_whole(states[1]) > 10_000


# -- errfold_lookup: errfold_find for every hit at once -----------------------------------------------------------

def test_lookup_answers_for_each_hit_what_find_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys registered for half the messages; a chunk's hits looked up at once and one by one agree: the slot for a
    candidate line of error words of a registered key, -1 for one of no key, -2 for a line of another kind or with a
    needle that is not an error word."""
    lines = error_lines(4000, 31)
    log = tmp_path / "run" / "sglang-engine-0.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    scanner = Scanner(LIB)
    rules = scanner.needles.errs
    assert rules is not None
    fold = errfold.ErrFold(rules, scanner.needles.anchor_of)
    data = log.read_bytes()
    matcher = scanner.needles.matcher(data[:1 << 16])
    _, _, _, _, hits, _ = _linescan.scan(matcher, data, len(data) + 1, 0, False)
    assert len(hits) > 3000
    for _, _, start, end, ids in hits[::2]:  # register the keys of every other line
        _linescan.errfold_add(fold.state, data[start:end], ids, False)
    hits.append((1, 0, 0, 5, None))  # a row's hit: not a candidate line
    hits.append((0, 0, 0, 5, ()))  # no needle
    hits.append((0, 0, 0, 5, (len(rules.classes) + 7,)))  # a needle of no class
    got = _linescan.errfold_lookup(fold.state, data, hits)
    classes = rules.classes
    want = []
    for kind, _, start, end, ids in hits:
        words = kind == 0 and bool(ids) and all(i < len(classes) and classes[i] in (errfold.ALLOWED, errfold.RULED)
                                                for i in ids)
        want.append(_linescan.errfold_find(fold.state, data, start, end, ids) if words else -2)
    assert got == want
    assert got.count(-2) >= 3 and sum(s >= 0 for s in got) > 1000 and got.count(-1) > 20


def test_the_chunks_hand_python_the_lines_they_did_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """learn and known through errfold_lookup: of a storm of error lines with a few that a rule claims, the lines that
    reach Python and the counts per key are those the line-for-line reader gives (one report both ways)."""
    storm = error_lines(60_000, 41)
    rng = random.Random(3)
    for at in sorted(rng.sample(range(1000, 59_000), 5)):
        storm[at] = f"[2026-05-24 09:00:01 DP0 TP0] ERROR worker {at}: Segmentation fault (core dumped) at step 12"
    log = tmp_path / "run" / "sglang-engine-0.log"
    log.parent.mkdir()
    log.write_text("\n".join(storm) + "\n")
    hits = hits_of(log, monkeypatch)
    counted = [h for h in hits if h[0] == K_ERRS]
    assert counted and sum(rec[1] for h in counted for rec in h[4]) > 50_000  # counted in C, not handed over
    folded = report(log.parent, monkeypatch, True)
    assert folded == report(log.parent, monkeypatch, False)
    assert len([f for f in folded["findings"] if f["rule"] == "other.segfault"]) == 1


# -- errfold_commit: lines swapped, not copied ----------------------------------------------------------------------

@pytest.mark.parametrize("every", [1, 7, 400])
def test_first_before_last_and_last_over_chunks_of_one_line_and_of_many(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        every: int) -> None:
    """Chunks of 64 KiB that count one line of a key, a few, or many (a rare message every `every` lines among the
    storm's): the first and last line of each unexplained finding and its count are those of the line-for-line
    reader (errfold_commit swaps a key's lines with the call's: a line a call did not write is never shown)."""
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 16)
    storm = error_lines(30_000, 47)
    for at in range(0, len(storm), every * 50):
        storm[at] = f"[2026-05-24 09:00:01 DP0 TP0] ERROR rare_path: shard {at} of 64 failed to load"
    log = tmp_path / "run" / "sglang-engine-0.log"
    log.parent.mkdir()
    log.write_text("\n".join(storm) + "\n")
    counted = [h for h in hits_of(log, monkeypatch) if h[0] == K_ERRS]
    assert sum(rec[1] for h in counted for rec in h[4]) > 20_000
    folded = report(log.parent, monkeypatch, True)
    assert folded == report(log.parent, monkeypatch, False)
    assert sum(f["rule"] == "unclassified" for f in folded["findings"]) >= 10
