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

A log written by rich's logging handler wraps differently: inside the message column of a table padded to the
console's width (RICH_HEAD below); its rows are joined by the same rule of a greedy wrap, in the same way (the
pieces become one line, then empty lines, so numbers and offsets stay).
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Any, BinaryIO

from triage import fastbytes
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
    last = len(lens) - 1
    if len(twice) == 1:  # the usual case (the widest line's length): its lines found by the list's own search
        (w,) = twice
        at: list[int] = []
        i = lens.index(w) if w in lens else last
        while i < last:
            at.append(i)
            try:
                i = lens.index(w, i + 1)
            except ValueError:
                break
    else:
        at = [i for i, n in enumerate(lens[:-1]) if n in twice]
    for i in at:
        a, b = lines[i], lines[i + 1]
        # _continues' first tests, here: most pairs (records of one format, one after another) fail them
        if not 0 < lens[i + 1] <= lens[i] or a[:8].translate(DIGITS_0) == b[:8].translate(DIGITS_0):
            continue
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


class _Joined(io.RawIOBase):
    """A stream of `inner` whose lines _fill() rewrites a piece at a time into `out`."""

    def __init__(self, inner: BinaryIO):
        super().__init__()
        self.inner = inner
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
        raise NotImplementedError

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            super().close()


class Unwrapped(_Joined):
    """The stream with its hard-wrapped lines joined (same length in bytes, same line count)."""

    def __init__(self, inner: BinaryIO, width: int):
        super().__init__(inner)
        self.width = width
        self.carry = b""  # a line not ended yet, or a run that may go on in the next piece

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


# -- rich's logging handler ------------------------------------------------------------------------------------------
# rich.logging.RichHandler (Textualize/rich, rich/_log_render.py LogRender, rich 10-14) prints each record as a table
# row: the time (`[12/05/25 10:31:55]`, blank when it repeats the previous record's), the level padded to 8, the
# message, the source `file.py:123` at the right; every row padded with blanks to the console's width (80 when the
# output is a file). The message wraps inside its column, at a blank (the blank dropped) or, for a word longer than the
# column (a traceback frame's path), folded at the column's width; each piece on a row of its own, at the message's
# column. A logged traceback comes out cut in its frames (`  File` / `"/usr/.../sglang/srt/model_exe` /
# `cutor/model_runner.py", line 2, in load_model`) and in its exception line, so neither a frame nor the message a
# rule reads is whole. rich wraps greedily, so a row was wrapped exactly when the next row's first word would not
# have fitted after it: those rows are joined again, with the blank the wrap dropped (none after a folded row: a
# chunk of one word, as wide as the column).
RICH_HEAD = lazy_bytes(rb"(?:\[[^\]\n]{4,40}\]| {8,40}) (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) {1,5}(?=\S)")
RICH_LEVELS = (b" INFO     ", b" ERROR    ", b" WARNING  ", b" DEBUG    ")  # a level padded to its column: a cheap gate
RICH_PATH = lazy_bytes(rb" (\S+:\d+) *$")  # the source column of a record's first row


def rich_layout(head: bytes) -> tuple[int, int]:
    """(message column, row width) of a RichHandler log: a record's first row followed by rows of its message at that
    column, as wide, and two more rows of that layout (another record's first row or more of its message); (0, 0)
    when the head shows none."""
    rows: Counter[tuple[int, int]] = Counter()
    lines = head.split(b"\n")[:-1]
    layout: tuple[int, int] | None = None
    for a in lines:
        m = RICH_HEAD.match(a)
        if m is not None:
            layout = (m.end(), len(a))
            rows[layout] += 1
        elif layout is not None and len(a) == layout[1] and a[:layout[0]].isspace() and a[layout[0]:layout[0] + 1] != b" ":
            rows[layout] += 2  # a row of a message at its column: the layout's own mark
        else:
            layout = None if not (layout and len(a) == layout[1] and a[:layout[0]].isspace()) else layout
    best = max(rows.items(), key=lambda kv: kv[1], default=((0, 0), 0))
    return best[0] if best[1] >= 5 else (0, 0)


class RichJoin:
    """Rows of a RichHandler log joined into the message lines they were wrapped from (see RICH_HEAD)."""

    def __init__(self, column: int, width: int):
        self.c, self.w = column, width
        self.m = width - column  # the message column's width, set by each record's first row

    def piece(self, row: bytes) -> bytes | None:
        """The message text of a row that goes on a record's message at its column (not indented further)."""
        if len(row) != self.w or not row[:self.c].isspace() or row[self.c:self.c + 1] in (b" ", b""):
            return None
        return row[self.c:].rstrip()

    def join(self, lines: list[bytes], final: bool) -> tuple[list[bytes], int]:
        """The lines with each wrapped run joined (followed by the empty lines that keep the count), and how many of
        `lines` were used: a run that may go on in lines not read yet stays, unless `final`."""
        out: list[bytes] = []
        i, c = 0, self.c
        while i < len(lines):
            row = lines[i]
            head = RICH_HEAD.match(row) if len(row) == self.w else None
            text = b""
            if head is not None and head.end() == c:
                p = RICH_PATH.search(row)
                path = len(p.group(1)) + 1 if p is not None and p.start() >= c else 0
                self.m = self.w - c - path
                text = row[c:self.w - path].rstrip()
            elif len(row) == self.w and row[:c].isspace():
                text = row[c:].rstrip()
            j, joined, last = i, [row[:c] + text] if text else [row], text
            while text and j + 1 < len(lines):
                nxt = self.piece(lines[j + 1])
                if nxt is None or len(last) + 1 + len(nxt.split(b" ", 1)[0]) <= self.m:
                    break
                joined.append(nxt if len(last) >= self.m and b" " not in last else b" " + nxt)  # folded: no blank
                last = nxt
                j += 1
            if text and j + 1 == len(lines) and not final:
                break  # the next row is not read yet
            whole = b"".join(joined)  # padded with the rows' own blanks: every later line keeps its byte offset
            out.append(whole + b" " * (sum(map(len, lines[i:j + 1])) - len(whole)) if j > i else row)
            out.extend([b""] * (j - i))
            i = j + 1
        return out, i


class RichUnwrapped(_Joined):
    """The stream with a RichHandler log's wrapped rows joined (same length in bytes, same line count)."""

    def __init__(self, inner: BinaryIO, column: int, width: int):
        super().__init__(inner)
        self.rows = RichJoin(column, width)
        self.carry: list[bytes] = []
        self.tail = b""  # a line not ended yet

    def _fill(self) -> None:
        data = self.inner.read(PIECE)
        if not data:
            self.done = True
            out, _ = self.rows.join(self.carry, True)
            self.out = b"".join(x + b"\n" for x in out) + self.tail
            self.carry, self.tail = [], b""
            return
        lines = (self.tail + data).split(b"\n")
        self.tail = lines.pop()
        self.carry.extend(lines)
        out, used = self.rows.join(self.carry, len(self.carry) > 4096)
        self.out = b"".join(x + b"\n" for x in out)
        self.carry = self.carry[used:]


def _gate(head: bytes) -> tuple[bool, bool]:
    """(may the head be hard-wrapped, may it be a rich log): the first tests of wrap_width and of the rich gate, in C
    when it is built (_linescan.head_gate: one pass instead of a split and a search a level, ~80 us a small file's
    head, a third of what a run of 200 k small files cost a file); wrap_width and rich_layout decide the rest."""
    gate = fastbytes.head_gate(head, MIN_WIDTH, RICH_LEVELS)
    return gate if gate is not None else (True, any(w in head for w in RICH_LEVELS))


def layout(head: bytes) -> tuple[int, int, int]:
    """(wrap width, rich message column, rich row width) of a stream whose first HEAD bytes are `head`; zeros when
    its lines are to be read as they are."""
    may_wrap, may_rich = _gate(head)
    width = wrap_width(head) if may_wrap and len(head) > MIN_WIDTH * 2 else 0
    if width:
        return width, 0, 0
    column, row = rich_layout(head) if may_rich else (0, 0)
    return 0, column, row


def wraps(head: bytes) -> bool:
    """Whether unwrap() would join the lines of a stream whose first HEAD bytes are `head` (a small file read whole:
    decompress.read_small)."""
    return layout(head) != (0, 0, 0)


def unwrap(stream: Any) -> Any:
    """The stream, or a stream of it with hard-wrapped lines joined when its head shows them. `stream` has peek()
    (an io.BufferedReader); nothing of it is consumed to decide."""
    width, column, row = layout(stream.peek(HEAD)[:HEAD])
    if width:
        return io.BufferedReader(Unwrapped(stream, width), buffer_size=PIECE)
    if column:
        return io.BufferedReader(RichUnwrapped(stream, column, row), buffer_size=PIECE)
    return stream
