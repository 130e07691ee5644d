"""Arbitrary bytes through the readers, the sniffer, the scanner, the parsers and redaction never raise."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage.input.decompress import Tolerant, _decompressor
from triage.input.discover import sniff
from triage.input.read import MAX_LINE, TRUNCATED, iter_chunks, normalise, read_text
from triage.library.rules import load_library
from triage.model import Line, LogFile
from triage.parsers import PARSERS
from triage.redact import redact
from triage.scan.scanner import Scanner

LIB = load_library()
SCANNER = Scanner(LIB)
# bytes with a fair share of the characters the readers treat specially
SPECIAL = st.sampled_from([b"\n", b"\r", b"\r\n", b"\x00", b"\x1b[31m", b"\x1b[0m", b"\xff", b"\xc3", b"\xed\xa0\x80",
                           b"Error", b"Traceback", b"Decode batch. #running-req: 1, ", b"(TrainRayActor pid=1) ",
                           b"CUDA out of memory", b"[repeated 3x across cluster]", b"File \"x\", line 1"])
LOGGY = st.lists(st.one_of(st.binary(max_size=40), SPECIAL), max_size=60).map(b"".join)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(LOGGY, st.integers(min_value=1, max_value=64))
def test_chunks_are_clean_text_whatever_the_bytes(data: bytes, chunk: int) -> None:
    text = "".join(iter_chunks(io.BytesIO(data), chunk_size=chunk))
    assert "\x00" not in text and "\x1b[" not in text
    assert text.count("\n") >= data.count(b"\n") - data.count(b"\x1b")  # no line boundary is lost


@FAST
@given(LOGGY)
def test_chunk_size_does_not_change_the_text(data: bytes) -> None:
    assert "".join(iter_chunks(io.BytesIO(data), chunk_size=7)) == "".join(iter_chunks(io.BytesIO(data)))


@FAST
@given(LOGGY)
def test_scanner_never_raises_and_line_numbers_stay_in_the_file(data: bytes) -> None:
    res = SCANNER.scan(LogFile(path="<p>", rel="p.log", kind="text"), read_text(data))
    lines = data.count(b"\n") + 1
    for ln in [h.line for h in res.hits] + res.unclaimed:
        assert 1 <= ln.lineno <= lines
        assert len(ln.text) <= MAX_LINE + len(TRUNCATED)


@FAST
@given(st.text(max_size=300))
def test_every_parser_takes_any_line(text: str) -> None:
    msg = normalise(text)
    for parser in PARSERS:
        parser.parse(Line("p.log", 1, msg, msg))


@FAST
@given(st.text(max_size=300))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@FAST
@given(LOGGY, st.sampled_from(["gzip", "bz2", "xz"]), st.integers(min_value=0, max_value=200))
def test_a_cut_or_damaged_compressed_stream_reads_without_raising(data: bytes, kind: str, cut: int) -> None:
    packed = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](data)
    damaged = packed[: max(len(packed) - cut, 6)] + bytes(cut % 7)
    notes: list[str] = []
    stream = Tolerant(_decompressor(io.BytesIO(damaged), kind), kind, notes.append)
    got = io.BufferedReader(stream).read()
    assert data.startswith(got) or notes  # what comes out is the start of the data, or a note says why not


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2000), st.sampled_from(["x.log", "x.log.1", "x.jsonl", "x.yaml", "x.safetensors",
                                                   "engine.log.gz"]))
def test_sniffing_any_content_decides_a_kind_and_never_raises(tmp_path: Path, data: bytes, name: str) -> None:
    p = tmp_path / name
    p.write_bytes(data)
    lf = LogFile(path=str(p), rel=name)
    sniff(lf)
    assert lf.status in ("read", "skipped", "unreadable")
    assert lf.kind
