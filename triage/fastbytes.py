"""Literal tests on a file's head that the C helper (triage/scan/_linescan.c) answers faster than Python's search,
which runs at ~0.5 GB/s on log text (~15-40 us a test of a small file's 8 KB head, most of what a run of many small
files cost a file in discovery and unwrap). A leaf below every stage: the scan stage, which holds the C helper,
installs its functions here when it is built (scan/native.py); until then, and for head_gate under
TRIAGE_NO_NATIVE=1, the Python answers are the same."""

from __future__ import annotations

import os
from typing import Any

_c: dict[str, Any] = {}  # name -> the C helper's function (install)


def install(**functions: Any) -> None:
    """Make the C helper's functions answer (scan/native.py, once the helper is imported)."""
    _c.update(functions)


def contains_any(data: bytes | memoryview, needles: tuple[bytes, ...]) -> bool:
    """Whether one of the needles is in data (Python's `in` of each)."""
    found = _c.get("contains_any")
    if found is not None:
        return bool(found(data, needles))
    data = bytes(data)
    return any(n in data for n in needles)


def head_gate(head: bytes, min_width: int, levels: tuple[bytes, ...]) -> tuple[bool, bool] | None:
    """(may the head be hard-wrapped, is one of the levels in it) as _linescan.head_gate rules them out, or None when
    the C helper is not built or switched off (unwrap then asks its own tests)."""
    gate = _c.get("head_gate")
    if gate is None or os.environ.get("TRIAGE_NO_NATIVE"):
        return None
    return gate(head, min_width, levels)
