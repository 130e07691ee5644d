"""`--format json`: the contract other tools read (findings in rank order, files with their status, run figures
and compact timelines). `triage diff` reads it back."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring_ascii
from typing import Any

from triage.model import Finding, LogFile, Report
from triage.report import RenderOptions
from triage.report.common import safe_report, verdict


def _finding(f: Finding) -> dict[str, Any]:
    return f.to_dict() | {"known": f.known, "baseline": f.baseline}


def _file(f: LogFile) -> dict[str, Any]:
    return {"path": f.rel, "kind": f.kind, "status": f.status, "reason": f.reason, "lines": f.lines,
            "size": f.size} | ({"node": f.node} if f.node else {})


def as_dict(report: Report, files: Callable[[list[LogFile]], Any] | None = None) -> dict[str, object]:
    """The report as JSON data. Nothing is redacted here: a report is redacted once, when it is built
    (analyze, merge), and formats only render it. `files`: what the files entry is made of them (by default a
    list of dicts)."""
    return {
        "version": report.version,
        "root": report.root,
        "verdict": verdict(report),
        "findings": [_finding(f) for f in report.findings],
        "files": [_file(f) for f in report.files] if files is None else files(report.files),
        "config": report.config,
        "errors": report.errors,
        "figures": report.figures,
        "timelines": [t.to_dict() for t in report.timelines],
    }


def _flat(value: Any) -> bool:
    """A value written on one line: a scalar, or an array of scalars (a timeline's points)."""
    if isinstance(value, (list, tuple)):
        return all(not isinstance(v, (dict, list, tuple)) for v in value)
    return not isinstance(value, dict) or not value


_encode = json.JSONEncoder(default=str, ensure_ascii=True).encode  # json.dumps(v, default=str) makes an encoder
# a call: a run of 200 k files asks it 1.4 M times


class _Written(str):
    """JSON text already written: dumps puts it as it is."""


def _value(v: Any, level: int) -> str:
    """One value of a dict: a string or a whole number (every value of a file's entry: path, kind, status, reason,
    lines, size; a run of 200 k files has 1.2 M of them) written straight, the rest by dumps."""
    t = type(v)
    if t is str:
        return encode_basestring_ascii(v)
    if t is int:
        return int.__repr__(v)
    if t is _Written:
        return v
    return dumps(v, level)


FILES_LEVEL = 1  # the files list's indent level in the report (a value of the top-level dict)
FILES_BLOCK = 4096  # file entries joined at a time


def _files_blocks(files: list[LogFile]) -> Iterator[str]:
    """The files list as dumps writes it at FILES_LEVEL, FILES_BLOCK entries at a time: a run of 200 k files held a
    dict per file (and a copy of each file) for its whole report, ~150 MB, where the text alone is ~25 MB."""
    if not files:
        yield dumps([], FILES_LEVEL)
        return
    inner = ",\n" + "  " * (FILES_LEVEL + 1)
    for i in range(0, len(files), FILES_BLOCK):  # not 200 k entries held at once: a block's at most
        block = "".join([inner + dumps(_file(f), FILES_LEVEL + 1) for f in files[i:i + FILES_BLOCK]])
        yield "[\n" + block[2:] if i == 0 else block
    yield "\n" + "  " * FILES_LEVEL + "]"


def _files_written(files: list[LogFile]) -> _Written:
    return _Written("".join(_files_blocks(files)))


_HOLE = _Written("\x00files\x00")  # where the files list goes in the report's text: JSON text never holds a NUL


def dumps(value: Any, level: int = 0, tail: str = "") -> str:
    """JSON indented by two spaces, except that arrays of scalars stay on one line: a timeline's thousand
    points read as one row, and they are encoded by json's C encoder (an indented dump is pure Python).
    `tail`: text after it (written in the same join: a report's text is not copied once more to end it)."""
    if _flat(value):
        return _encode(value) + tail
    pad, inner = "  " * level, "  " * (level + 1)
    parts: list[str] = []
    if isinstance(value, dict):  # a value's text is a part of its own, not copied into its key's (a report's files)
        for k, v in value.items():
            parts += (",\n", inner, encode_basestring_ascii(k if isinstance(k, str) else json.dumps(k)), ": ",
                      _value(v, level + 1))
        parts[0] = "{\n"
        parts.append(f"\n{pad}}}{tail}")
    else:
        for v in value:
            parts += (",\n", inner, dumps(v, level + 1))
        parts[0] = "[\n"
        parts.append(f"\n{pad}]{tail}")
    return "".join(parts)


def pieces(report: Report, options: RenderOptions) -> Iterator[str]:
    """The report's text in pieces, "".join of them being render's: the files list a block at a time, written as
    it is made (a run of 257 k files: its ~45 MB of text were held two or three times over at the end of the run,
    blocks, joined list, whole report)."""
    safe = safe_report(report)
    head, hole, tail = dumps(as_dict(safe, lambda files: _HOLE), tail="\n").partition(_HOLE)
    assert hole, "the files list has its place in the report"
    yield head
    yield from _files_blocks(safe.files)
    yield tail


def render(report: Report, options: RenderOptions) -> str:
    return dumps(as_dict(safe_report(report), _files_written), tail="\n")
