"""Where rendered reports go: the main output (stdout or --output), extra outputs (--sarif FILE, ...) and,
inside GitHub Actions, the Markdown job summary. One analysis feeds all of them.

Every file is written whole or not at all: into a temporary file of the same directory (created exclusively,
with an unpredictable name), flushed to disk, then renamed over the target (rename(2) replaces a name
atomically within one file system). A full disk or a failed write leaves the previous file as it was: a
baseline people annotated is never truncated. Standard output that is closed, a broken pipe or a full device
is one line and exit 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from triage.errors import TriageError
from triage.model import Report
from triage.report import RenderOptions, render, render_pieces


class OutputError(TriageError):
    """An output that cannot be written; exit code 2."""


@dataclass
class Target:
    fmt: str
    path: Path | None = None  # None: standard output


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _mode(target: Path) -> int:
    """The permissions of the file being replaced, or what a new file gets (0666 less the umask)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def what_is(mode: int) -> str:
    """'' for a regular file; else what it is, worded for a message ('a FIFO', 'a device', ...)."""
    for test, what in ((stat.S_ISREG, ""), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def special(path: Path) -> str:
    """'' for a regular file or a name not yet taken; else what it is (see what_is)."""
    try:
        return what_is(os.stat(path).st_mode)
    except OSError:
        return ""


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed over `path` when the block ends without error, removed
    otherwise. A symbolic link is written through (its target replaced, the link kept)."""
    target = Path(os.path.realpath(path))
    what = special(target)
    if what == "a directory":
        raise OutputError(f"{path}: cannot write: Is a directory")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {_why(e)}") from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _mode(target))
        os.replace(tmp, target)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {_why(e)} (the previous file, if any, is unchanged)") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_all(fd: int, data: bytes) -> None:
    """os.write until all of data is written (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


PIECE = 1 << 20  # characters of a report encoded and written at a time: not a second copy of it whole (the JSON
# report of 200 k files is ~25 MB)


def _pieces(text: str | Iterable[str]) -> Iterator[str]:
    """text, or the text the parts of an iterable make (render_pieces), a PIECE at most at a time."""
    for part in (text,) if isinstance(text, str) else text:
        for i in range(0, len(part), PIECE):
            yield part[i:i + PIECE]


def _write_encoded(fd: int, text: str | Iterable[str]) -> None:
    """text as UTF-8 (an unpaired surrogate as its escape), a PIECE at a time."""
    for piece in _pieces(text):
        write_all(fd, piece.encode("utf-8", "backslashreplace"))


def write_text(path: Path, text: str | Iterable[str], append: bool = False) -> None:
    """Write (or append) text as UTF-8. A file or a new name is replaced atomically; a FIFO or a device the
    user named (`--output /dev/stdout`) is written directly, as a shell redirection would."""
    what = special(path)
    if append or what not in ("", "a directory"):
        try:
            fd = os.open(path, os.O_WRONLY | (os.O_APPEND | os.O_CREAT if append else 0), 0o666)
            try:
                _write_encoded(fd, text)
            finally:
                os.close(fd)
        except OSError as e:
            raise OutputError(f"{path}: cannot write: {_why(e)}") from None
        return
    with replacing(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC)
        try:
            _write_encoded(fd, text)
            os.fsync(fd)  # on disk before the rename makes it the file: a crash leaves the old one or the new one
        finally:
            os.close(fd)


def write_stdout(text: str | Iterable[str]) -> None:
    """The report on standard output, flushed now, so a closed pipe or a full device is an OutputError here."""
    stream = sys.stdout
    if stream is None:
        raise OutputError("standard output is closed: cannot write the report (use --output FILE)")
    try:
        for piece in _pieces(text):
            stream.write(piece)
        stream.flush()
    except (OSError, ValueError) as e:  # ValueError: the stream object itself was closed
        why = _why(e) if isinstance(e, OSError) else "it is closed"
        raise OutputError(f"standard output: cannot write the report: {why}") from None


def fence(text: str, env: Mapping[str, str]) -> str:
    """Inside GitHub Actions, text between `::stop-commands::TOKEN` and `::TOKEN::` is never read as workflow
    commands (docs.github.com, "Workflow commands for GitHub Actions": stopping and starting workflow commands):
    a log line quoted in the report cannot become `::error::` or `::add-mask::`. Elsewhere, text as it is."""
    if env.get("GITHUB_ACTIONS") != "true" or not text:
        return text
    token = secrets.token_hex(16)  # unguessable, so the report's own text cannot end the fence
    return f"::stop-commands::{token}\n{text}{'' if text.endswith(chr(10)) else chr(10)}::{token}::\n"


def emit(report: Report, targets: list[Target], options: RenderOptions, env: Mapping[str, str]) -> list[str]:
    """Render and write every target; returns warnings (e.g. a job summary that could not be appended)."""
    warnings = []
    for t in targets:
        if t.path is None and t.fmt == "text":
            write_stdout(fence(render(t.fmt, report, options), env))
            continue
        text = render_pieces(t.fmt, report, options)  # written as it is made: not held whole (json's files list)
        if t.path is None:
            write_stdout(text)
        else:
            write_text(t.path, text)
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary and any(t.fmt == "github" for t in targets):
        try:
            write_text(Path(summary), render("markdown", report, options) + "\n", append=True)
        except OutputError as e:
            warnings.append(f"job summary not written: {e}")
    return warnings
