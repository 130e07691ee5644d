"""Claims of one line family, folded: a storm of near-identical lines that rules with `near` / `not_near` windows
claim (100 k `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate X GiB ...` lines, their numbers
changing) costs a window's worth of claims, not one claim, one context line and one window test a line.

A group is a run of consecutive context lines (stats rows and other lines that are not context may come between)
of one process (Ray actor and pid), whose messages are the same but for their digit runs (`key`), and that the same
rules matched (the rule search runs on every line, its answers cached per key: Scanner._cached_search). Its lines split in three:
- the head, the lines less than `reach[0]` lines after the group's first: claims as any other line (their windows
  may reach lines before the group);
- the tail, the lines within `reach[1]` lines of the group's last: claims as any other line (their windows may reach
  the lines after the group), held back until the group ends, so the context stays in line order;
- the middle: every window around such a line (a rule's `within`, the side lookup's) holds only lines of the group.
  They fold into one claim line, the first of them, that counts them (`repeat`) up to the one before the last
  (`until`); the last stays a line of its own, so a finding's last evidence is the line it was.
Each middle line would have been judged alike, and the folded line is judged as each of them: its window holds only
lines of the group too, and every test a window runs answers alike on all of them (`answers_alike`). A group starts
only when that holds for its first line's message, when no rule it matched reads its numbers after the scan (`when`,
`reveals`, a `retracted` group, `follow`'s attached line) or is a user's rule (budgeted per line), and when one of its
rules is sure to claim a middle line (no window, no threshold, its side the middle's): a folded line is never an
unexplained one. A run of identical lines folds into a held line as `origins.Runs` folds it into a context line.
"""

from __future__ import annotations

import os
from collections import deque
from typing import TYPE_CHECKING, Any

from triage.model import Line
from triage.parsers import signals
from triage.parsers.signals import TRACEBACK
from triage.scan.digitkey import answers_alike, key
from triage.scan.origins import Runs

if TYPE_CHECKING:
    from triage.scan.filescan import FileScan


def enabled() -> bool:
    """Claim lines fold into their groups (TRIAGE_NO_NEARFOLD=1: each stays a claim, for comparison)."""
    return not os.environ.get("TRIAGE_NO_NEARFOLD")


class Group:
    __slots__ = ("first", "actor", "pid", "key", "matched", "folded", "last", "tail")

    def __init__(self, line: Line, key: str, matched: list[Any]) -> None:
        self.first = line.lineno
        self.actor, self.pid, self.key, self.matched = line.actor, line.pid, key, matched
        self.folded: Line | None = None  # the first middle line, counting the middle ones before `last`
        self.last: Line | None = None  # the newest middle line
        self.tail: deque[Line] = deque()  # lines past the head not yet known to be middle ones


class NearFold:
    """One file's open group (see the module note); the scanner hands it each claim line (`take`) and ends it before
    any other context line (`end`)."""

    __slots__ = ("reach", "group", "_starts")

    def __init__(self, reach: tuple[int, int], starts: Any) -> None:
        self.reach = reach
        self.group: Group | None = None
        self._starts = starts  # (fs, line, key, matched) -> whether a group may start at this line (Scanner.may_group)

    def take(self, fs: FileScan, line: Line, matched: list[Any], k: str | None = None) -> bool:
        """Whether the group took this claim line (it is counted or held); False: the scanner keeps it as usual
        (a line of the head, or of no group: a group may start at it). `k`: its message's key, when known."""
        g = self.group
        msg = line.msg
        if k is None:
            k = key(msg)
        # the claims are one (rule, None) a rule (Scanner._claims): equal lists hold the same rules
        if g is not None and k == g.key and line.actor == g.actor and line.pid == g.pid and matched == g.matched:
            if line.lineno < g.first + self.reach[0]:
                return False
            self._hold(fs, g, line)
            return True
        self.end(fs)
        if self._starts(fs, line, k, matched):
            self.group = Group(line, k, matched)
        return False

    def _hold(self, fs: FileScan, g: Group, line: Line) -> None:
        tail = g.tail
        tail.append(line)
        after = self.reach[1]
        while (tail[0].until or tail[0].lineno) + after <= line.lineno:
            ln = tail.popleft()
            if g.folded is None:
                g.folded = ln
                _keep(fs, ln, g.matched)
            elif g.last is None:
                g.last = ln
            else:
                g.folded.repeat += g.last.repeat
                g.folded.until = g.last.until or g.last.lineno
                g.last = ln

    def runs_after(self, runs: Runs, lineno: int, text: str) -> None:
        """The line just handled was held: a run of identical lines folds into it, as origins.Runs folds a run into
        the context line it would have been."""
        g = self.group
        if runs.line is None and g is not None and g.tail and g.tail[-1].lineno == lineno:
            ln = g.tail[-1]
            runs.line, runs.text, runs.own = ln, text, ln.repeat

    def end(self, fs: FileScan) -> None:
        """The group is over (another context line comes, or the file ends): its held lines become claims."""
        g = self.group
        if g is None:
            return
        self.group = None
        if g.last is not None:
            _keep(fs, g.last, g.matched)
        for ln in g.tail:
            _keep(fs, ln, g.matched)


def _keep(fs: FileScan, line: Line, matched: list[Any]) -> None:
    """A claim line as Scanner.line keeps one that no family took."""
    fs.pending.append((line, matched))
    fs.ctx.add(line)


def may_start(msg: str, markers: Any) -> bool:
    """A group's first message is not one a traceback's reading singles out, and the side lookup answers alike on
    every message of its key (the verifier-call test, each side's markers)."""
    if TRACEBACK in msg or "RayTaskError" in msg or 'File "' in msg:
        return False
    return all(answers_alike(p, msg) for p in (signals.CALL_ERROR.pattern, signals.VERIFIER_URL.pattern,
                                                *(m.pattern for m in markers)))
