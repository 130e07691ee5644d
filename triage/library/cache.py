"""The rule library's parsed YAML, cached as JSON, so that a run need not import and run the YAML parser.

Importing PyYAML and parsing the library's files is most of what loading the library costs before any log is
read (about 25 ms of a 0.15 s start). The parsed data of each file is kept in the user's cache directory
($XDG_CACHE_HOME/triage, else ~/.cache/triage) under the file's absolute path, size and CRC-32: reading and
checksumming the library takes well under a millisecond, and a time stamp could miss an edit of the same
size made within its granularity. A file whose bytes changed is parsed again. Data that JSON cannot hold
exactly (a YAML date, a number as a mapping key) is not cached. A cache that cannot be read or written only
means the YAML is parsed: never an error, never a message. TRIAGE_NO_CACHE=1 turns it off.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triage.safe_load import read_regular

FORMAT = 2


def cache_file() -> Path | None:
    """Where the cache lives, or None: turned off, or no absolute cache folder to put it in (never a folder
    relative to where triage runs, which may be the very logs it reads)."""
    if os.environ.get("TRIAGE_NO_CACHE"):
        return None
    root = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(root):  # unset, or relative: the XDG spec says to ignore it
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        root = os.path.join(home, ".cache")
    return Path(root) / "triage" / "library.json"


class YamlCache:
    def __init__(self, where: Path | None = None) -> None:
        self.where = where if where is not None else cache_file()
        self.old: dict[str, Any] = {}
        self.used: dict[str, Any] = {}  # the entries of the files read this time: what is saved
        self.changed = False
        if self.where is not None:
            try:
                doc = json.loads(self.where.read_text(encoding="utf-8"))
                if isinstance(doc, dict) and doc.get("format") == FORMAT and isinstance(doc.get("files"), dict):
                    self.old = doc["files"]
            except (OSError, ValueError):
                pass

    def read(self, path: Path, parse: Callable[[Path], Any]) -> Any:
        """parse(path), or the data it gave last time if the file is unchanged."""
        key = str(path.resolve())
        try:
            stamp = [len(raw := read_regular(path)), zlib.crc32(raw)]  # a FIFO or device refused, not waited on
        except (OSError, ValueError):
            return parse(path)  # let the parser report it
        entry = self.old.get(key)
        if isinstance(entry, dict) and entry.get("stamp") == stamp and "data" in entry:
            self.used[key] = entry
            return entry["data"]
        data = parse(path)
        try:
            copy = json.loads(json.dumps(data))  # a copy: the caller may change what it gets
        except (TypeError, ValueError):
            copy = None
        if copy is not None and copy == data:
            self.used[key] = {"stamp": stamp, "data": copy}
            self.changed = True
        return data

    def save(self) -> None:
        if self.where is None or not (self.changed or self.used.keys() != self.old.keys()):
            return
        tmp = self.where.with_name(f"{self.where.name}.{os.getpid()}.tmp")
        try:
            self.where.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"format": FORMAT, "files": self.used}), encoding="utf-8")
            os.replace(tmp, self.where)  # readers see the old file or the new one, never half of one
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass
