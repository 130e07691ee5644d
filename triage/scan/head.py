"""What a file's head says about reading it in two stages (parallel.Staged): how many of its lines would reach Python.

Two stages cost more than one where the parser must see most lines one by one: a storm of one line family, which
one process counts natively (origins.Families.native needs the line the parser kept last; a reading stage ahead of
the parser cannot know it). Lines of a numeric shape are another matter: once the head's first lines have taught
their shapes (scan/columns.py), both stages hand them over as columns, as one process does. So the head is scanned
once to learn its shapes and once more with them, and only the candidate lines left are counted: a long trainer
log's metric dicts and Timer lines (thousands of candidate lines per MiB, all of them rows) are then read by one
process while another parses, like a driver log.
"""

from __future__ import annotations

from typing import Any

from triage.model import LogFile
from triage.parsers.engine_stats import KEEP_PRESSURE_LINES, ROW_GAP
from triage.scan.native import K_CAND, PAIR_SAMPLE, _linescan
from triage.scan.prefiltered import shapes_for


def candidates_per_mib(scanner: Any, lf: LogFile) -> float:
    """Candidate lines per MiB in the file's head (its first PAIR_SAMPLE bytes) that are not rows of a numeric shape
    the head teaches; 0 when it cannot be read."""
    try:
        with open(lf.path, "rb") as f:
            head = f.read(PAIR_SAMPLE)
    except OSError:
        return 0.0
    head = head[:head.rfind(b"\n") + 1]
    if not head:
        return 0.0
    matcher = scanner.needles.matcher(head)
    hits = _linescan.scan(matcher, head, 0, 0, False, ROW_GAP, KEEP_PRESSURE_LINES)[4]
    shapes = shapes_for(scanner, lf)
    if shapes is not None:
        shapes.learn(memoryview(head), hits)
        if shapes.armed is not None:  # the head again, its lines of those shapes as rows
            hits = _linescan.scan(matcher, head, 0, 0, False, ROW_GAP, KEEP_PRESSURE_LINES, 0, -1.0, -1, None, None,
                                  shapes.armed)[4]
    return sum(1 for h in hits if h[0] == K_CAND) * (1 << 20) / len(head)
