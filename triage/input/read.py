"""Open a log file read-only (decompressing as a stream) and yield normalised text in chunks.

A chunk always ends on a line boundary, so a line never straddles two chunks. Normalisation,
done once here: invalid UTF-8 replaced, NUL bytes dropped, terminal control removed or made visible (below),
and a line with no newline for more than MAX_LINE characters cut with a marker (the scanner also cuts the
lines it keeps to MAX_LINE). `\\r` progress redraws stay in the text; the scanner treats `\\r` as a fragment
separator that keeps the physical line number.

Terminal control never reaches a line: whole escape sequences (ECMA-48: CSI `ESC [ … final`, the strings OSC,
DCS, SOS, PM, APC up to BEL or ST, two-character escapes) are removed (Ray's colour codes; an OSC 52 that
would write the reader's clipboard, a retitle, a screen clear); every other C0 control but tab (and the
newline and `\\r` that delimit lines), DEL and C1 is shown as its escape, `\\x07`. Evidence is taken from
these lines, so no output (terminal, file, annotation) can carry a control byte from a log.
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

# Whole escape sequences (ECMA-48 5th ed. §5.3-5.4, §8.3.89 OSC; xterm ends OSC with BEL too). A string left
# open runs to the end of its line. ASCII only: prefiltered.py compiles the same pattern over bytes.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x07\x1b\n\r]*(?:\x07|\x1b\\)?|[ -/]*[0-~])")
# The same colour codes as a syslog daemon writes them out: rsyslog escapes control characters on receipt by default
# ($EscapeControlCharactersOnReceive, '#' and three octal digits), so ESC [ 36 m arrives as "#033[36m" and hides a Ray
# prefix such as "(raylet)" (real-extra 1401). Only whole CSI sequences: "#033" alone stays text.
SYSLOG_ESC = "#033["
SYSLOG_ANSI = re.compile(r"#033\[[0-?]*[ -/]*[@-~]")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 but tab, LF, CR; DEL; C1
CONTROL_BYTES = bytes(range(0x09)) + bytes(range(0x0B, 0x0D)) + bytes(range(0x0E, 0x20)) + b"\x7f"
C1_LEAD = b"\xc2"  # UTF-8 encodes C1 (U+0080-U+009F) as C2 80-9F
C0_CHARS = tuple(map(chr, CONTROL_BYTES))
C1_CHARS = tuple(map(chr, range(0x80, 0xA0)))


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    return "" if c == "\x00" else f"\\x{ord(c):02x}"


def _clean(text: str) -> str:
    text = text.replace("\x00", "")  # first, as the native path drops a chunk's NULs before its escapes
    if "\x1b" in text:
        text = ANSI.sub("", text)
    return CONTROL.sub(_visible, text)


def _unescape_syslog(text: str) -> str:
    return SYSLOG_ANSI.sub("", text) if SYSLOG_ESC in text else text


def visible(text: str) -> str:
    """One field (a file name, a value from a report) with every control character, line breaks included,
    shown as its escape; for text that did not come through the line reader."""
    return text if text.isprintable() else re.sub(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]",
                                                  lambda m: f"\\x{ord(m.group()):02x}", text)


def open_stream(path: str, compression: str, note: Note | None = None) -> BinaryIO:
    """A binary stream of the file's (decompressed) bytes as of opening; read-only, never blocks (decompress.py)."""
    return open_log(path, compression, note or (lambda _: None))


def normalise(text: str) -> str:
    """Decoded text (lines and their newlines) with its terminal control removed or made visible. The test is
    one fast find per control character (1.3 ms for a clean 4 MiB chunk; translating it takes twice as long)."""
    text = _unescape_syslog(text)
    if any(c in text for c in C0_CHARS) or (not text.isascii() and any(c in text for c in C1_CHARS)):
        return _clean(text)
    return text


def line_text(raw: bytes | memoryview) -> str:
    """One line's bytes (no newline) decoded and normalised: what the native path hands the scanner, the same
    text the line reader gives for that line."""
    data = bytes(raw)
    text = str(data, "utf-8", "replace")
    if len(data.translate(None, CONTROL_BYTES)) == len(data) and (data.isascii() or C1_LEAD not in data):
        return _unescape_syslog(text)  # the common case, tested inline: this runs for every line the prefilter hands over
    return _clean(_unescape_syslog(text))


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
