"""The C prefilter counts the lines of the family of Python's last kept line (_linescan.c, Family): a line counts
when its needles are the family's and its text is the family's text but for its digit runs. Which lines count, which
come back to Python, and the sum of the counts, on lines that differ from the family in one byte, in a digit run
too long to read, or in a control byte."""

from __future__ import annotations

import re

import pytest

from triage.library.rules import load_library
from triage.scan import native
from triage.scan.scanner import Scanner

ls = native._linescan
pytestmark = pytest.mark.skipif(ls is None or not hasattr(ls, "scan_scalar"),
                                reason="the C prefilter (triage._linescan) is not built")

RETRACT = (b"[2026-05-24 00:53:%02d TP0] KV cache pool is full. Retract requests. #retracted_reqs: %s, "
           b"#new_token_ratio: 0.4 -> 0.5")


def test_lines_of_the_family_are_counted_and_the_others_come_back() -> None:
    needles = Scanner(load_library(None)).needles
    assert needles is not None
    head = RETRACT % (0, b"3")
    lines = [
        RETRACT % (1, b"5"),  # 0: counted
        RETRACT.replace(b"requests.", b"requests!") % (2, b"7"),  # 1: another text: back to Python
        RETRACT % (3, b"2"),  # 2: the first of the family after another line: back (kept anew)
        RETRACT % (4, b"40"),  # 3: counted
        RETRACT % (5, b"1234567890123456789"),  # 4: a count of 19 digits: back
        RETRACT % (6, b"1"),  # 5: after another line: back
        RETRACT % (7, b"6"),  # 6: counted
        RETRACT.replace(b"pool is", b"pool\tis") % (8, b"9"),  # 7: a control byte: back
        RETRACT % (9, b"11") + b" " * 40 + b"x",  # 8: longer than the family's text: back
        RETRACT % (10, b"8"),  # 9: back (after another line)
        RETRACT % (11, b"2"),  # 10: counted
    ]
    buf = b"\n".join(lines) + b"\n"
    m = needles.matcher(buf[:native.PAIR_SAMPLE])
    (hit,) = [h for h in ls.scan_scalar(m, head + b"\n", 0, 0)[4] if h[0] == native.K_CAND]
    text = re.sub(rb"[0-9]+", b"", head)
    run = len(re.findall(rb"[0-9]+", head[:head.index(b"reqs: ") + 6]))
    family = (text, hit[4], -1, 64, run)
    for scan in (ls.scan_scalar, ls.scan):
        out = scan(m, buf, 0, 0, False, 0, 0, 0, -1.0, -1, family)[4]
        got = [(h[0], h[1], h[4] if h[0] == native.K_FAMILY else None) for h in out]
        assert got == [
            (native.K_FAMILY, 0, (1, 5)), (native.K_CAND, 1, None), (native.K_CAND, 2, None),
            (native.K_FAMILY, 3, (1, 40)), (native.K_CAND, 4, None), (native.K_CAND, 5, None),
            (native.K_FAMILY, 6, (1, 6)), (native.K_CAND, 7, None), (native.K_CAND, 8, None),
            (native.K_CAND, 9, None), (native.K_FAMILY, 10, (1, 2)),
        ]
