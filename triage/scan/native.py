"""The C prefilter's interface (_linescan.c): whether it is built, the needle list it files under byte pairs, and
what its results mean (needle kinds, line kinds, flags). A leaf: it knows nothing of scanners or files; prefiltered.py
drives it, Scanner gives it its anchors."""

from __future__ import annotations

import os
import re
from array import array
from typing import Any

from triage import fastbytes

try:
    from triage.scan import _linescan  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the Python path does everything
    _linescan = None
else:  # the head tests of the stages below the scan (discovery, unwrap) answer in C too
    fastbytes.install(head_gate=_linescan.head_gate, contains_any=_linescan.contains_any)

K_CAND, K_STATS, K_USAGE = 0, 1, 2  # needle kinds; the kinds of scan()'s lines: candidate, sampled row (K_STATS),
K_FOLD, K_SAMPLED, K_BATCH, K_FAMILY = 2, 3, 4, 5  # a record of folded rows, a folded row sampled for the
# timeline, a batch of closed pressure episodes (_linescan.c, Batch), lines counted into Python's last line (Family)
K_COLS = 6  # rows of registered numeric line shapes, as columns (_linescan.c, Columns; scan/columns.py)
K_ERRS = 7  # error-like lines counted per key (_linescan.c, Errs; scan/errfold.py): one record of a file's counts
K_KNOWN = 8  # a candidate line of a key errfold registered, returned for its neighbours' sake: Python knows what it is
F_CR, F_ESC, F_NUL, F_RAY, F_MANY = 1, 2, 4, 8, 16
STATS_MARKERS = ("Decode batch", "Prefill batch")
EXTRA = ("RayTaskError",)  # needles that are no anchor: a line holding one reads its neighbours (signals.chains: a
# chain's header), so the C side counts no error-like line near it (errfold); it holds `Error` anyway
PAIR_SAMPLE = 1 << 20  # bytes of a file's head used to pick each needle's rarest byte pair
SMALL_HEAD = 64 << 10  # bytes: a head this small says little about pair counts, and its file takes no time to scan
# whichever pairs are picked: such files share one matcher (the pairs only set the speed, never the result)
ORIGIN_SAMPLE = 256 << 10  # bytes of it that tell whether the file holds several engines' stats rows (thousands of
# lines; a file that shows only one there switches to per-origin counting when its sampled rows show more)


def available() -> bool:
    """The C helper is built and not switched off (TRIAGE_NO_NATIVE=1 forces the Python path)."""
    return _linescan is not None and not os.environ.get("TRIAGE_NO_NATIVE")


def columns() -> bool:
    """Lines of repeated numeric shapes go to Python as columns (TRIAGE_NO_COLUMNS=1: as lines, for comparison)."""
    return not os.environ.get("TRIAGE_NO_COLUMNS")


class TooManyNeedles(ValueError):
    """A library whose anchors the C matcher cannot file (more than _linescan.MAX_NEEDLES needles)."""


class Needles:
    """The needle list for one Scanner; `matcher(head)` files each needle under its rarest pair."""

    def __init__(self, anchors: set[str], rule_anchors: set[str]):
        self.items: list[tuple[bytes, int]] = []
        self.anchor_of: list[str | None] = []  # needle index -> the anchor it stands for
        self._shared: Any = None  # the matcher of small files
        self.errs: Any = None  # what the C side needs to count error-like lines (errfold.ErrRules), set by the scanner
        for a in sorted(anchors):
            kind = K_STATS if a in STATS_MARKERS and a not in rule_anchors else K_CAND  # a rule must see every row
            self._add(a.encode(), kind, a)
        for a in EXTRA:  # after the anchors: an anchor's index does not depend on them
            if a not in anchors:
                self._add(a.encode(), K_CAND, a)
        self._add(b"usage: ", K_USAGE, None)
        for byte, flag in ((b"\r", F_CR), (b"\x1b", F_ESC), (b"\x00", F_NUL)):
            self._add(byte, flag, None)
        if _linescan is not None and len(self.items) > _linescan.MAX_NEEDLES:
            raise TooManyNeedles(f"{len(anchors)} anchors are more than the C prefilter holds "
                             f"({_linescan.MAX_NEEDLES} needles): every file is read by the Python scanner")

    def _add(self, needle: bytes, kind: int, anchor: str | None) -> None:
        if len(needle) == 2:  # the C side files needles under two adjacent pairs: pad to 3 bytes
            raise ValueError(f"anchor {needle!r}: anchors need at least 3 characters")
        self.items.append((needle, kind))
        self.anchor_of.append(anchor)

    def matcher(self, head: bytes | memoryview) -> Any:
        if len(head) < SMALL_HEAD:
            if self._shared is None:
                self._shared = self._compile(b"")
            return self._shared
        return self._compile(head)

    def share(self, sample: bytes) -> None:
        """Pick the pairs of the matcher small files share from a sample of their text (batches.sample). Picked from
        no text, every needle is filed under its first pair, common in any text: a 6 KB trainer log scanned in
        115 us instead of 30, a 2 KB verifier log in 25 instead of 4."""
        self._shared = self._compile(sample)

    def _filing(self, head: bytes | memoryview) -> list[tuple[int, int]]:
        """Each needle's (offset, checks): the two adjacent byte pairs at offset are the needle's rarest in head,
        and checks is how often they occur there (each occurrence is a place the matcher compares the needle)."""
        counts = array("I")
        counts.frombytes(_linescan.pair_counts(head))
        out = []
        for needle, _kind in self.items:
            if len(needle) == 1:
                out.append((0, 0))
                continue
            out.append(min(((i, counts[needle[i] | needle[i + 1] << 8] + counts[needle[i + 1] | needle[i + 2] << 8])
                            for i in range(len(needle) - 2)), key=lambda oc: oc[1]))
        return out

    def checks(self, head: bytes | memoryview) -> dict[str, int]:
        """anchor -> the comparisons its needle costs on text like head (bench and tests: what an anchor costs)."""
        return {a: c for a, (_, c) in zip(self.anchor_of, self._filing(head)) if a is not None}

    def _compile(self, head: bytes | memoryview) -> Any:
        spec = [(needle, off, kind) for (needle, kind), (off, _) in zip(self.items, self._filing(head))]
        return _linescan.compile(spec)


# At line starts, matched in b"\n" + head: a pattern that starts with a literal lets `re` skip ahead to it.
RAY_PREFIXES = re.compile(rb"\n(\([\w.:-]+(?: pid=\d+)?(?:, ip=[0-9a-fA-F.:]+)?\))")  # Ray actor prefixes
DP_TAGS = re.compile(rb"\n(?:\([^)\n]*\) ?)?\[[^\]\n]* (DP\d+)")  # DP-attention rank tags


def several_origins(head: bytes | memoryview) -> bool:
    """Whether a file's head shows stats rows of several engines (a Ray driver log, DP-attention groups)."""
    if bytes(head[:1]) != b"(" and not fastbytes.contains_any(head, (b"\n(", b" DP")):  # what every match of either holds
        return False
    lines = b"\n" + head
    return len(set(RAY_PREFIXES.findall(lines))) > 1 or len(set(DP_TAGS.findall(lines))) > 1


