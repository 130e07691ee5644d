"""Baselines: known findings that stay visible but do not gate.

A baseline is a JSON file of entries sorted by fingerprint, without line numbers or timestamps, so it only
changes when the findings do:

    {"triage_baseline": 1,
     "entries": [{"fingerprint": "…", "rule": "trainer.cuda-oom", "file": "train.log", "title": "…",
                  "reason": "", "ticket": "", "expires": ""}]}

`reason`, `ticket` and `expires` (YYYY-MM-DD, last day the entry hides its finding) are for people to fill
in; rewriting a baseline keeps what they wrote. An expired entry stops hiding and says so in the report.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from triage.errors import TriageError
from triage.model import Finding, Report
from triage.report.outputs import special, what_is

FORMAT_KEY = "triage_baseline"
FORMAT_VERSION = 1
HUMAN_FIELDS = ("reason", "ticket", "expires")


class BaselineError(TriageError):
    """A baseline file that cannot be read or is not a triage baseline; exit code 2."""


def _expires(entry: dict[str, Any], where: str) -> dt.date | None:
    value = entry.get("expires") or ""
    if not value:
        return None
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise BaselineError(f"{where}: expires must be a date like 2026-01-31, not {value!r}") from None


def refuse_special(path: Path) -> None:
    """A baseline is a regular file: a FIFO would block a read or a write forever, /dev/zero never ends."""
    what = special(path)
    if what:
        raise BaselineError(f"{path}: is {what}; a baseline is a regular JSON file")


def _read(path: Path) -> bytes:
    """The file's bytes; opened without blocking (a FIFO would wait for a writer) and checked to be a regular
    file before reading (a device would never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise BaselineError(f"{path}: cannot read baseline: {e.strerror or e}") from None
    try:
        what = what_is(os.fstat(fd).st_mode)
        if what:
            raise BaselineError(f"{path}: is {what}; a baseline is a regular JSON file")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    except OSError as e:
        raise BaselineError(f"{path}: cannot read baseline: {e.strerror or e}") from None
    finally:
        os.close(fd)


def load(path: Path) -> dict[str, dict[str, Any]]:
    """fingerprint -> entry. Raises BaselineError naming the file and entry for anything malformed."""
    try:
        data = json.loads(_read(path).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise BaselineError(f"{path}: not a triage baseline (invalid JSON: {e})") from None
    if not isinstance(data, dict) or data.get(FORMAT_KEY) != FORMAT_VERSION or not isinstance(data.get("entries"), list):
        raise BaselineError(f"{path}: not a triage baseline (expected {{\"{FORMAT_KEY}\": {FORMAT_VERSION}, "
                            f"\"entries\": [...]}}; write one with --write-baseline)")
    out: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(data["entries"]):
        where = f"{path}: entry {i + 1}"
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str) or not entry["fingerprint"]:
            raise BaselineError(f"{where}: needs a non-empty string 'fingerprint'")
        _expires(entry, where)
        out[entry["fingerprint"]] = entry
    return out


def apply(report: Report, entries: dict[str, dict[str, Any]], today: dt.date) -> None:
    """Mark findings a live entry holds as known; note expired entries (they no longer hide anything)."""
    for f in report.findings:
        entry = entries.get(f.fingerprint)
        if entry is None:
            continue
        expires = _expires(entry, f"baseline entry {f.fingerprint}")
        if expires is not None and expires < today:
            report.errors.append(f"baseline entry {f.fingerprint} ({f.rule}) expired on {expires}: "
                                 "the finding gates again")
            continue
        f.known = True
        f.baseline = {k: entry.get(k, "") for k in HUMAN_FIELDS}


def _entry(f: Finding, old: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"fingerprint": f.fingerprint, "rule": f.rule,
                             "file": f.evidence[0].file if f.evidence else "", "title": f.title}
    for k in HUMAN_FIELDS:
        entry[k] = (old or {}).get(k, "")
    return entry


def dumps(findings: list[Finding], previous: dict[str, dict[str, Any]] | None = None) -> str:
    previous = previous or {}
    entries = sorted((_entry(f, previous.get(f.fingerprint)) for f in findings), key=lambda e: e["fingerprint"])
    return json.dumps({FORMAT_KEY: FORMAT_VERSION, "entries": entries}, indent=2, ensure_ascii=False) + "\n"
