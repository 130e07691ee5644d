"""The rule library's parsed YAML, cached as JSON, so that a run need not import and run the YAML parser.

Importing PyYAML and parsing the library's files is most of what loading the library costs before any log is
read (about 25 ms of a 0.15 s start). The parsed data of each file is kept in the user's cache directory
($XDG_CACHE_HOME/triage, else ~/.cache/triage) and used only when it is provably the data of the bytes on disk
now, as this program would parse them:
- each entry is keyed to the SHA-256 of the file's contents (never its size or time stamps: a same-size edit
  within a stamp's granularity, or a file whose stamps were put back, is still noticed) and to the program's
  version (a newer triage may read the same YAML differently);
- each entry carries a digest over that key and its data, so an entry whose data was edited after it was
  written (a severity demoted, a rule removed) is ignored;
- what comes out of the cache goes through the same validation as freshly parsed YAML (the loader's job), and
  a library that fails to load from cached data is loaded again from the source (`load_library`).
A digest without a secret is no signature: whoever can write the cache as this user can also forge it (and
edit the built-in files). What it guarantees is that stale, damaged or hand-edited data is never trusted over
the source. Data that JSON cannot hold exactly (a YAML date, a number as a mapping key) is not cached. A
cache that cannot be read or written only means the YAML is parsed: never an error, never a message.
It is written to a temporary file with an unpredictable name, created exclusively in the cache folder (so a
symlink planted at a predictable name is never followed), then renamed over the old one. TRIAGE_NO_CACHE=1
turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triage import __version__
from triage.safe_load import read_regular

FORMAT = 3
KEEP_OTHERS = 256  # entries of files not read this time (another checkout, venv or --patterns folder) kept


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


def _digest(source: str, text: str) -> str:
    """What an entry's JSON text must hash to: this program's version, the source file's hash and the text."""
    return hashlib.sha256(f"{FORMAT}\0{__version__}\0{source}\0{text}".encode()).hexdigest()


def _well_formed(entry: Any) -> bool:
    return isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("sha256", "digest", "json"))


class YamlCache:
    def __init__(self, where: Path | None = None, trust: bool = True) -> None:
        """The cache at `where` (default: `cache_file()`); with trust=False nothing is read from it, only written."""
        self.where = where if where is not None else cache_file()
        self.old: dict[str, Any] = {}
        self.used: dict[str, Any] = {}  # the entries of the files read this time
        self.changed = False
        self.hits = 0  # files whose data came from the cache (a load that fails on them is retried without it)
        if self.where is not None and trust:
            try:
                doc = json.loads(self.where.read_text(encoding="utf-8"))
                if (isinstance(doc, dict) and doc.get("format") == FORMAT and doc.get("version") == __version__
                        and isinstance(doc.get("files"), dict)):
                    self.old = doc["files"]
            except (OSError, ValueError, RecursionError):
                pass

    def _trusted(self, key: str, source: str) -> Any:
        """The cached entry of key when it is the data of these bytes, written by this program; else None."""
        entry = self.old.get(key)
        if not (isinstance(entry, dict) and entry.get("sha256") == source and isinstance(entry.get("json"), str)):
            return None
        return entry if entry.get("digest") == _digest(source, entry["json"]) else None

    def read(self, path: Path, parse: Callable[[Path], Any]) -> Any:
        """parse(path), or the data it gave last time if the file's bytes are the same."""
        key = str(path.resolve())
        try:
            source = hashlib.sha256(read_regular(path)).hexdigest()  # a FIFO or device refused, not waited on
        except (OSError, ValueError):
            return parse(path)  # let the parser report it
        entry = self._trusted(key, source)
        if entry is not None:
            try:
                data = json.loads(entry["json"])  # a fresh copy each time: the loader pops keys from what it gets
            except (ValueError, RecursionError):
                data = None
            else:
                self.used[key] = entry
                self.hits += 1
                return data
        data = parse(path)
        try:
            text = json.dumps(data)
            same = json.loads(text) == data
        except (TypeError, ValueError, RecursionError):
            same = False
        if same:
            self.used[key] = {"sha256": source, "digest": _digest(source, text), "json": text}
            self.changed = True
        return data

    def save(self) -> None:
        if self.where is None or not self.changed:
            return
        # Entries of files other runs read stay (up to KEEP_OTHERS, newest first): two installs of triage, or
        # two rule folders, would otherwise evict each other's entries on every run. Keys are contents hashes,
        # so an old entry is never trusted for bytes it was not made from.
        others = [(k, v) for k, v in reversed(list(self.old.items()))
                  if k not in self.used and _well_formed(v)][:KEEP_OTHERS]
        files = dict(reversed(others)) | self.used  # insertion order: oldest first, this run's last
        folder = self.where.parent
        tmp = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # mkstemp: a random name opened with O_CREAT | O_EXCL (and mode 0600), so nothing planted is followed
            fd, tmp = tempfile.mkstemp(prefix=f".{self.where.name}.", suffix=".tmp", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"format": FORMAT, "version": __version__, "files": files}, out)
            os.replace(tmp, self.where)  # readers see the old file or the new one, never half of one
        except OSError:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
