"""read.py: decompression, decoding, normalisation, bounded lines."""

from __future__ import annotations

import gzip
import io

from triage.input.decompress import compression_of
from triage.input.read import MAX_LINE, TRUNCATED, iter_chunks, open_stream


def _text(data: bytes, chunk: int = 1 << 20) -> str:
    return "".join(iter_chunks(io.BytesIO(data), chunk))


def test_ansi_colour_codes_are_stripped() -> None:
    line = b"\x1b[2m\x1b[36m(SGLangEngine pid=4100)\x1b[0m Decode batch, #running-req: 1\n"
    assert _text(line) == "(SGLangEngine pid=4100) Decode batch, #running-req: 1\n"


def test_invalid_utf8_is_replaced_and_nul_dropped() -> None:
    assert _text(b"bad \xff\xfe byte\x00s\n") == "bad \ufffd\ufffd bytes\n"


def test_multibyte_character_split_across_reads_survives() -> None:
    data = "█ progress\n".encode() * 3
    assert _text(data, chunk=1) == "█ progress\n" * 3


def test_chunks_end_on_line_boundaries() -> None:
    data = b"".join(f"line {i}\n".encode() for i in range(1000))
    chunks = list(iter_chunks(io.BytesIO(data), 64))
    assert all(c.endswith("\n") for c in chunks)
    assert "".join(chunks).count("\n") == 1000


def test_file_without_final_newline_keeps_last_line() -> None:
    assert _text(b"a\nlast line cut mid-wri") == "a\nlast line cut mid-wri"


def test_a_huge_line_is_cut_and_the_next_line_keeps_its_number() -> None:
    data = b"x" * (MAX_LINE * 3) + b"\nafter\n"
    text = _text(data, chunk=4096)
    lines = text.split("\n")
    assert lines[0].endswith(TRUNCATED) and len(lines[0]) == MAX_LINE + len(TRUNCATED)
    assert lines[1] == "after"


def test_gzip_is_read_transparently(tmp_path) -> None:
    p = tmp_path / "engine.log.gz"
    p.write_bytes(gzip.compress(b"KV cache pool is full. Retract requests. #retracted_reqs: 2\n"))
    head = p.read_bytes()[:8]
    assert compression_of(head) == "gzip"
    with open_stream(str(p), "gzip") as s:
        assert "".join(iter_chunks(s)) == "KV cache pool is full. Retract requests. #retracted_reqs: 2\n"
