"""Lines a terminal or a tracker hard-wrapped at a fixed width, joined again.

A log copied out of a terminal (or a tracker that renders it at a fixed width) comes with every long line cut
into pieces of exactly the terminal's width, mid-word: `... (1) The process is killed by SIGKILL ... (2) ra` /
`y stop --force is called.` A rule reading the first piece misses what the second holds, and the second piece reads
as a line of its own (`killed by SIGKILL by OOM killer ... SIGSEGV` without the `Worker exit type` before it).

A width is taken as the wrap width when, in the head of the file, at least two lines are exactly that long (80
columns or more) and are each followed by a line that continues them (below). Then every line of that length
followed by a continuation is joined with it, at the byte level, in the stream both scan paths read: the pieces
become one line at the first piece's line number, followed by as many empty lines as newlines were taken out, so
every later line keeps its number and its byte offset (evidence `file:line` stays the physical line).

A continuation is a line no longer than the width that goes on where the wrapped one was cut: at a blank (one ends
or the other starts with one), or within a word or number (a letter or digit, then a lower-case letter or a digit,
or upper case on both sides: `SYSTEM_ERRO` / `R`). It does not start like a line of its own: not indented by two or
more blanks, no escape, bracket, parenthesis or list mark, no launcher/logger prefix (prefixes.LINE_PREFIX), no
`Name: ` head, no `Traceback`, no list number, and not the same 8 bytes (digits aside) the wrapped line started with
(records of one format that happen to be as long as one another). A traceback frame (`File "..."`) goes on only with
the rest of its path (`...", line N`) or of its function's name, never with a code line that lost its indentation. A line that reaches the
width with two blanks or more at its end was padded by the terminal: it ends there. Lines holding `\\r` are left
alone. The width needs two distinct wrapped lines (a line printed twice is no evidence).
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Any, BinaryIO

from triage.lazyre import lazy_bytes
from triage.prefixes import LINE_PREFIX

MIN_WIDTH = 80  # narrower widths are ordinary short lines, not a terminal's
HEAD = 16 << 10  # bytes of the head the width is decided on (a paste shows its width in its first long lines)
PIECE = 1 << 16  # bytes read at a time
FRAME = lazy_bytes(rb'\s*File "')
FRAME_REST = lazy_bytes(rb'[^"\s]*", line \d+')  # the rest of a frame cut in its path
FUNC_REST = lazy_bytes(rb"\w+")  # the rest of a frame cut in its function's name
DIGITS_0 = bytes.maketrans(b"123456789", b"000000000")
NOT_CONTINUATION = lazy_bytes(
    rb"(?:\s\s|\t|\x1b|[\[({<#*=+|>-]|\d+[.)] |Traceback \(|During handling|The above exception|frame #"
    rb"|[A-Za-z_][\w.]*: |" + LINE_PREFIX.encode() + rb")"
)


def _continues(piece: bytes, nxt: bytes, width: int) -> bool:
    """Whether nxt goes on where piece (a line of the wrap width) was cut: within a word or a number, or at a blank.
    The byte tests come first: most pairs of a log fail them."""
    if not (0 < len(nxt) <= width) or b"\r" in nxt:
        return False
    last, first = piece[-1:], nxt[:1]
    if FRAME.match(piece):  # a frame cut in its path, or in its function's name; not a code line that lost its indent
        cut = FRAME_REST.match(nxt) is not None if b'", line ' not in piece else FUNC_REST.fullmatch(nxt) is not None
    elif first == b" " or last == b" ":
        cut = True
    else:
        cut = last.isalnum() and (first.islower() or first.isdigit() or (last.isupper() and first.isupper()))
    return (cut and nxt[:8].translate(DIGITS_0) != piece[:8].translate(DIGITS_0)  # records of one format
            and NOT_CONTINUATION.match(nxt) is None)


def _wrapped(line: bytes, width: int) -> bool:
    return len(line) == width and not line.endswith(b"  ") and b"\r" not in line


def wrap_width(head: bytes) -> int:
    """The width the head's lines were hard-wrapped at, 0 when they were not. Most heads stop at the first test:
    the widest line is plain and no other line is as long."""
    lines = head.split(b"\n")[:-1]  # the last piece may be cut short by the head's end
    lens = list(map(len, lines))
    top = max(lens, default=0)
    widest = lines[lens.index(top)] if lines else b""
    if widest.isascii() and b"\r" not in widest and b"\t" not in widest:
        # a terminal cuts every line wider than itself: a plain line (ASCII, no tab or \r) rules out every width
        # below its length, so only the widest line's length can be the width
        if top < MIN_WIDTH or lens.count(top) < 2:
            return 0
        twice = {top}
    else:
        long = [n for n in lens if n >= MIN_WIDTH]
        if len(set(long)) == len(long):
            return 0
        twice = {n for n, k in Counter(long).items() if k >= 2}
    seen: Counter[int] = Counter()
    done: set[tuple[bytes, bytes]] = set()  # distinct pairs: a line printed twice is no evidence of a width
    for i in [i for i, n in enumerate(lens[:-1]) if n in twice]:
        a, b = lines[i], lines[i + 1]
        if (a, b) not in done and _wrapped(a, lens[i]) and _continues(a, b, lens[i]):
            done.add((a, b))
            seen[lens[i]] += 1
    if not seen:
        return 0
    width, count = seen.most_common(1)[0]
    return width if count >= 2 else 0


def join(lines: list[bytes], width: int) -> list[bytes]:
    """The lines (no newlines) with each wrapped run joined, followed by the empty lines that keep the count."""
    out: list[bytes] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and _wrapped(lines[j], width) and _continues(lines[i], lines[j + 1], width):
            j += 1
        out.append(b"".join(lines[i:j + 1]))
        out.extend([b""] * (j - i))
        i = j + 1
    return out


class Unwrapped(io.RawIOBase):
    """The stream with its hard-wrapped lines joined (same length in bytes, same line count)."""

    def __init__(self, inner: BinaryIO, width: int):
        super().__init__()
        self.inner, self.width = inner, width
        self.carry = b""  # a line not ended yet, or a run that may go on in the next piece
        self.out = b""
        self.done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.out and not self.done:
            self._fill()
        n = min(len(buffer), len(self.out))
        with memoryview(buffer) as view:
            view.cast("B")[:n] = self.out[:n]
        self.out = self.out[n:]
        return n

    def _fill(self) -> None:
        data = self.inner.read(PIECE)
        if not data:
            self.done = True
            if self.carry:
                self.out, self.carry = b"\n".join(join(self.carry.split(b"\n"), self.width)), b""
            return
        lines = (self.carry + data).split(b"\n")
        keep = len(lines) - 1  # the last piece has no newline yet
        while keep > 0 and _wrapped(lines[keep - 1], self.width):  # a run that may go on past this piece
            keep -= 1
        if keep == 0:
            self.carry = self.carry + data
            if len(self.carry) > 4 * PIECE:  # no end in sight: let it through as it is
                self.out, self.carry = self.carry, b""
            return
        self.out = b"".join(x + b"\n" for x in join(lines[:keep], self.width))
        self.carry = b"\n".join(lines[keep:])

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            super().close()


def unwrap(stream: Any) -> Any:
    """The stream, or a stream of it with hard-wrapped lines joined when its head shows them. `stream` has peek()
    (an io.BufferedReader); nothing of it is consumed to decide."""
    head = stream.peek(HEAD)[:HEAD]
    width = wrap_width(head) if len(head) > MIN_WIDTH * 2 else 0
    if not width:
        return stream
    return io.BufferedReader(Unwrapped(stream, width), buffer_size=PIECE)
