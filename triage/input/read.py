"""Open a log file read-only (decompressing as a stream) and yield normalised text in chunks.

A chunk always ends on a line boundary, so a line never straddles two chunks. Normalisation,
done once here: invalid UTF-8 replaced, NUL bytes dropped, ANSI colour codes stripped (Ray colours
its prefixes), and a line with no newline for more than MAX_LINE characters cut with a marker (the
scanner also cuts the lines it keeps to MAX_LINE). `\\r` progress redraws stay in the
text; the scanner treats `\\r` as a fragment separator that keeps the physical line number.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Iterator
from typing import BinaryIO

from triage.input.decompress import Note, open_log

CHUNK = 4 << 20  # bytes read at a time
MAX_LINE = 64 << 10  # characters kept of one physical line
TRUNCATED = " …[line truncated by triage]"

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]")

def open_stream(path: str, compression: str, note: Note | None = None) -> BinaryIO:
    """A binary stream of the file's (decompressed) bytes as of opening; read-only, never blocks (decompress.py)."""
    return open_log(path, compression, note or (lambda _: None))


def normalise(text: str) -> str:
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def iter_chunks(stream: BinaryIO, chunk_size: int = CHUNK) -> Iterator[str]:
    """Decoded, normalised text ending on line boundaries (the last chunk may lack a final newline).

    Memory stays bounded by chunk_size + MAX_LINE even for a file that is one huge line.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    carry = ""
    skipping = False  # inside an over-long line whose tail we drop
    while True:
        data = stream.read(chunk_size)
        final = not data
        text = decoder.decode(data, final=final)
        if "\x00" in text:  # dropped before lines are measured: the NUL hole copytruncate leaves in front of a
            text = text.replace("\x00", "")  # writer's next line is no part of that line, however long it is
        if skipping:
            nl = text.find("\n")
            if nl < 0:
                if final:
                    break
                continue
            text = text[nl + 1 :]
            skipping = False
        text = carry + text
        cut = text.rfind("\n") + 1
        if final:
            cut = len(text)
        body, carry = text[:cut], text[cut:]
        if len(carry) > MAX_LINE:  # a line without newline that keeps growing: keep its head only
            body += carry[:MAX_LINE] + TRUNCATED + "\n"
            carry = ""
            skipping = True
        if body:
            yield normalise(body)
        if final:
            break


def read_text(data: bytes) -> Iterator[str]:
    """Chunks of an in-memory byte string (standard input, tests)."""
    return iter_chunks(io.BytesIO(data))
