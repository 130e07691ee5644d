"""Open a log file the safe way and read it as a stream of (decompressed) bytes, one small reader per
compression kind.

Guards, each for something run directories really contain:
- `safe_open` opens read-only, non-blocking and without a controlling terminal, then checks the opened
  descriptor is a regular file: a path swapped for a FIFO between discovery and reading cannot hang the run.
  It asks the kernel not to update the access time (`O_NOATIME`, where permitted): reading a tree never
  writes into it, not even its metadata.
- `UpTo` stops at the size the file had when opened: a log still being written (a live run) cannot keep the
  reader busy forever. A note says the file grew. A file that shrinks while it is read (copytruncate rotation
  mid-scan) ends where its data ends, and a `Cut` note says how far it was read.
- `Tolerant` returns what a damaged compressed stream holds up to the damage: a gzip or xz log cut by a crash
  mid-write still yields its last complete lines (often the interesting ones). A `Cut` note says where it stopped.
- Lines a terminal hard-wrapped at its width (a paste copied out of a terminal) are joined again when the head of
  the stream shows that width (unwrap.py); every other line keeps its number and byte offset.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
from collections.abc import Callable
from typing import Any, BinaryIO

from triage.input.unwrap import HEAD, unwrap, wraps
from triage.safe_load import special_kind

Note = Callable[[str], None]


class Cut(str):
    """A note saying the stream ended before the file's end (truncated while read, damaged compressed data): the
    file's coverage is partial (LogFile.stopped), not read."""

PIECE = 1 << 16  # bytes asked of a decompressor per step: bounds memory whatever the compression ratio

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOATIME = getattr(os, "O_NOATIME", 0)


MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bz2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}


def compression_of(head: bytes) -> str:
    for magic, kind in MAGIC.items():
        if head.startswith(magic):
            return kind
    return ""


def _quiet(_: str) -> None:
    return None


def safe_open(path: str) -> BinaryIO:
    """The file opened read-only; OSError when it is not a regular file (never blocks on a FIFO)."""
    return os.fdopen(safe_fd(path), "rb", buffering=0)


def safe_fd(path: str) -> int:
    """safe_open's file descriptor, without a file object around it (the caller closes it)."""
    return _regular(path)[0]


def _regular(path: str) -> tuple[int, int]:
    """(safe_fd's descriptor, the file's size as its fstat gave it)."""
    try:
        fd = os.open(path, _FLAGS | _NOATIME)
    except PermissionError:  # O_NOATIME needs ownership; retry without it
        if not _NOATIME:
            raise
        fd = os.open(path, _FLAGS)
    except OSError as e:
        if not _NOATIME or e.errno not in (1, 22):  # EPERM, EINVAL (filesystem without O_NOATIME)
            raise
        fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{special_kind(st.st_mode)}: not opened")
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


class UpTo(io.RawIOBase):
    """The first `limit` bytes of a raw file: the size it had when it was opened."""

    def __init__(self, raw: BinaryIO, note: Note = _quiet, path: str = "", limit: int | None = None):
        super().__init__()
        self.raw = raw
        self.path = path
        self.limit = os.fstat(raw.fileno()).st_size if limit is None else limit  # (limit: the size of raw's fstat)
        self.pos = 0
        self.note = note
        self.grew = False
        self.cut = False
        self.checked = False  # the size was looked at again once the limit was reached

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self.limit - self.pos)
        if want <= 0:
            if not self.checked:  # once: a reader asks again at its end (a buffered reader's fill, then the read)
                self.checked = True
                self._check_growth()
            return 0
        with memoryview(buffer) as view:
            n = self.raw.readinto(view.cast("B")[:want]) or 0  # type: ignore[attr-defined]
        self.pos += n
        if n == 0 and not self.cut:  # end of data short of the size at opening: cut under us (copytruncate)
            self.cut = True
            self.note(Cut(f"truncated while being read (copytruncate?): read to byte {self.pos} of {self.limit}"))
        return n

    def _check_growth(self) -> None:
        try:
            now = os.fstat(self.raw.fileno()).st_size
        except OSError:
            return
        if now > self.limit and not self.grew:
            self.grew = True
            self.note(f"file grew while being read: read the {self.limit} bytes present when it was opened")

    def close(self) -> None:
        try:
            self.raw.close()
        finally:
            super().close()


class Tolerant(io.RawIOBase):
    """A decompressing stream that ends, instead of raising, where the compressed data is cut or damaged."""

    def __init__(self, stream: Any, name: str, note: Note = _quiet, raw: Any = None):
        super().__init__()
        self.stream = stream
        self.raw = raw  # gzip/bz2/lzma do not close a file object they were given
        self.name = name
        self.note = note
        self.done = False
        self.produced = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.done:
            return 0
        try:
            data = self.stream.read1(min(len(buffer), PIECE))
        except EOFError:
            self._stop("is truncated (no end-of-stream marker, e.g. cut mid-write)")
            return 0
        except Exception as e:  # noqa: BLE001 - zlib.error, lzma.LZMAError, OSError, zstd.ZstdError
            self._stop(f"is damaged ({e})")
            return 0
        if not data:
            self.done = True
            if self.name == "zstd" and isinstance(self.raw, io.BufferedReader) and isinstance(self.raw.raw, UpTo):
                up = self.raw.raw
                cut = zstd_cut_at(up.path, up.limit) if up.path else None
                if cut is not None:
                    self.done = False
                    self._stop("is truncated (a frame cut short, e.g. cut mid-write)")
            return 0
        n = len(data)
        buffer[:n] = data
        self.produced += n
        return n

    def _stop(self, what: str) -> None:
        self.done = True
        where = ""
        if isinstance(self.raw, io.BufferedReader) and isinstance(self.raw.raw, UpTo):
            where = f" at or before compressed byte {self.raw.raw.pos} of {self.raw.raw.limit}"
        self.note(Cut(f"{self.name} stream {what}{where}: read the {self.produced} bytes before it"))

    def close(self) -> None:
        try:
            self.stream.close()
            if self.raw is not None:
                self.raw.close()
        finally:
            super().close()


def zstd_cut_at(path: str, size: int) -> int | None:
    """Where the zstd data of the file's first `size` bytes stops being whole frames, or None when it ends on a
    frame's end. The zstandard reader ends quietly at a frame cut short; this walks the frame and block headers
    (RFC 8878 §3.1: frame header, then blocks of 3-byte headers with Last_Block, Block_Type and Block_Size, then
    an optional 4-byte checksum; skippable frames 0x184D2A5? with a 4-byte size) without decompressing."""
    try:
        with safe_open(path) as fh:
            pos = 0
            while pos < size:
                fh.seek(pos)
                head = fh.read(18)
                if len(head) < 4:
                    return pos
                magic = int.from_bytes(head[:4], "little")
                if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
                    if len(head) < 8:
                        return pos
                    pos += 8 + int.from_bytes(head[4:8], "little")
                    continue
                if magic != 0xFD2FB528 or len(head) < 5:
                    return pos
                fhd = head[4]
                single = fhd >> 5 & 1
                fcs = (1 if single else 0, 2, 4, 8)[fhd >> 6]
                pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + fcs
                while True:
                    fh.seek(pos)
                    bh = fh.read(3)
                    if len(bh) < 3:
                        return pos
                    word = int.from_bytes(bh, "little")
                    kind, bsize = word >> 1 & 3, word >> 3
                    pos += 3 + (1 if kind == 1 else bsize)  # an RLE block holds one byte
                    if pos > size:
                        return size
                    if word & 1:
                        break
                pos += 4 if fhd & 4 else 0
            return None if pos == size else size
    except OSError:
        return None


def _decompressor(raw: Any, compression: str) -> Any:
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "bz2":
        return bz2.BZ2File(raw, mode="rb")
    if compression == "xz":
        return lzma.LZMAFile(raw, mode="rb")
    if compression == "zstd":
        try:
            import zstandard
        except ImportError:
            raise OSError("zstd-compressed; install the 'zstandard' package to read it") from None
        return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
    raise ValueError(f"unknown compression {compression!r}")


def read_small(path: str, size: int, note: Note = _quiet) -> bytes | None:
    """The bytes of a plain file of `size` bytes, read whole: what open_log's stream would give, without its layers of
    file objects (~15 us a file, most of the cost of opening a 3 KB log of a run of 200 k small files). A file cut
    short while read (copytruncate) gives the bytes read before the cut, and `note` says how far, as UpTo does.
    None, having read nothing the caller needs, when that stream would be another: the file's size is not `size`
    (it grew or shrank since discovery: open_log's stream reads it as it is then), it grew while read, or its head
    shows hard-wrapped lines (unwrap). Raises OSError as open_log does."""
    fd, now = _regular(path)
    try:
        if now != size:
            return None
        data = os.read(fd, size + 1)  # a read of a file returns less than asked only at the end of its data ...
        got = len(data)
        if got < size:  # ... or when a signal interrupts it: read on to the end to tell which
            parts = [data]
            while got <= size and (part := os.read(fd, size + 1 - got)):
                parts.append(part)
                got += len(part)
            data = b"".join(parts)
        if got < size:
            note(Cut(f"truncated while being read (copytruncate?): read to byte {got} of {size}"))
        elif got > size or os.fstat(fd).st_size != size:
            return None
    finally:
        os.close(fd)
    return None if wraps(data[:HEAD]) else data


def open_log(path: str, compression: str = "", note: Note = _quiet) -> BinaryIO:
    """A read-only byte stream of the file's content as of opening, decompressed when `compression` says so."""
    fd, size = _regular(path)  # its fstat gives UpTo its limit (a small file's scan made three fstat calls)
    try:
        opened = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    raw: Any = UpTo(opened, note, path, size)
    if not compression:
        return unwrap(io.BufferedReader(raw, buffer_size=PIECE))
    buffered = io.BufferedReader(raw, buffer_size=PIECE)
    try:
        inner = _decompressor(buffered, compression)
    except BaseException:
        buffered.close()
        raise
    return unwrap(io.BufferedReader(Tolerant(inner, compression, note, buffered), buffer_size=PIECE))


def wrap_stdin(stream: Any, note: Note = _quiet) -> BinaryIO:
    """Standard input, decompressed when its first bytes are a known compression magic."""
    buffered = stream if hasattr(stream, "peek") else io.BufferedReader(stream)
    compression = compression_of(buffered.peek(8)[:8])
    if not compression:
        return unwrap(buffered)
    return unwrap(io.BufferedReader(Tolerant(_decompressor(buffered, compression), compression, note)))
