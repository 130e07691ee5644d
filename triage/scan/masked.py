"""Whether a rule's regex answers alike on every line of one shape (template.shape), without running it on each.

The C prefilter counts error-like lines per shape (scan/errfold.py); a line holding a rule's anchor may be counted
only when that rule cannot claim any line of its shape. Lines of one shape differ only where the shape masks: digit
values, the digits and letters of hex tokens (ids, digests, handles), the case of a `0x` handle's letters, and the
length of a number standing alone (with or without its fraction, `1.5` and `15`). Two ways to know a regex's answer
for the whole shape from one line:
- `impossible(regex, text)`: a literal the regex needs is not in the line, and the literal is one those masks never
  touch (no digit, no `.`/`-`, every word in it holds a letter outside a-f, or a non-word character bounds it), so
  no line of the shape holds it either;
- `blind(regex)`: the regex reads none of what the masks change: no digit, no `\\d`, no bounded repeat or `?` of a
  class, no range but `A-Z` (the C side's key keeps a `0x` handle's upper-case letters apart, and a number's fraction:
  it is finer than the shape there), no literal word a hex token could hold (all its letters a-f, x), no back
  reference. Then the line's own answer is every line's of its key.
The sources are the stdlib's regex parser (re._parser, Python 3.11+); a regex it cannot parse
(syntax of the `regex` module only) is neither.
"""

from __future__ import annotations

import re

# Python 3.11+ (pyproject requires it) names the stdlib regex parser re._parser.
import re._parser as sre  # type: ignore[import-not-found]
from functools import lru_cache
from re._constants import (  # type: ignore[import-not-found]
    ASSERT,
    ASSERT_NOT,
    AT,
    BRANCH,
    IN,
    LITERAL,
    MAX_REPEAT,
    MIN_REPEAT,
    SUBPATTERN,
)
from typing import Any

SAFE_LETTERS = set("ghijklmnopqrstuvwyzGHIJKLMNOPQRSTUVWYZ_")  # never in a hex token (nor `x`, which `0x` holds)
UNSAFE_CHARS = set("0123456789.-")
BLIND_BAD = re.compile(r"\\d|[0-9]|\{|\\x|\\u|\\[1-9]|\(\?P=|[a-fA-F0-9]-[a-fA-F0-9]")


def _safe_pieces(lit: str) -> list[str]:
    """The parts of a literal the masks never touch (see the module note)."""
    out, cur = [], ""
    for word in re.split(r"(\W)", lit):
        ok = word != "" and (not (word[0].isalnum() or word[0] == "_") and word not in UNSAFE_CHARS
                             or any(c in SAFE_LETTERS for c in word) and not any(c.isdigit() for c in word))
        if ok:
            cur += word
        else:
            if cur:
                out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def _need(items: Any, fold: bool) -> Any:
    """What a parsed sequence needs: ("all", [literal, ...], [need of each required group]) with literals lowered
    when `fold` (IGNORECASE); ("any", [need, ...]) for a branch."""
    lits: list[str] = []
    subs: list[Any] = []
    run = ""
    for op, av in list(items) + [(None, None)]:
        if op is LITERAL:
            run += chr(av)
            continue
        if run:
            lits += _safe_pieces(run.lower() if fold else run)
            run = ""
        if op is SUBPATTERN:
            if av[1] or av[2]:  # a group's own flags (`(?i:...)`): its literals are not compared as they stand
                continue
            subs.append(_need(av[-1], fold))
        elif op is BRANCH:
            subs.append(("any", [_need(b, fold) for b in av[1]]))
        elif op in (MAX_REPEAT, MIN_REPEAT) and av[0] >= 1:
            subs.append(_need(av[2], fold))
    return ("all", lits, subs)


def _possible(need: Any, text: str) -> bool:
    if need[0] == "any":
        return any(_possible(n, text) for n in need[1])
    _, lits, subs = need
    return all(lit in text for lit in lits) and all(_possible(s, text) for s in subs)


@lru_cache(maxsize=4096)
def _parsed(source: str) -> Any:
    try:
        p = sre.parse(source)
    except Exception:  # noqa: BLE001 - syntax of the regex module only: not analysed
        return None
    fold = bool(p.state.flags & re.IGNORECASE)
    return _need(p, fold), fold


def impossible(source: str, text: str) -> bool:
    """No line of `text`'s shape can match the regex (a literal it needs is missing, and masks never make it)."""
    got = _parsed(source)
    if got is None:
        return False
    need, fold = got
    return not _possible(need, text.lower() if fold else text)


def lacks(items: Any, fold: bool, text: str, needs: dict[tuple[int, bool], Any] | None = None) -> bool:
    """A parsed part of a regex (one branch's alternative) needs a literal `text` lacks that the masks never make
    (`fold`: IGNORECASE in force there): no line of text's shape can match that part. `needs`: what the parts of
    one parsed regex need, kept while it lives (by id: the caller keeps the parsed regex)."""
    if needs is None:
        need = _need(items, fold)
    else:
        need = needs.get((id(items), fold))
        if need is None:
            need = needs[(id(items), fold)] = _need(items, fold)
    return not _possible(need, text.lower() if fold else text)


@lru_cache(maxsize=4096)
def blind(source: str) -> bool:
    """The regex reads nothing the shape masks (see the module note): its answer on one line is its shape's."""
    if BLIND_BAD.search(source):
        return False
    got = _parsed(source)
    if got is None:
        return False
    return _classes_blind(sre.parse(source))


def _safe_words(branches: Any) -> bool:
    """Every alternative is a literal word holding a letter no hex token holds (`(?:rror|xception)` after `E`)."""
    for b in branches:
        word = "".join(chr(av) if op is LITERAL else "\0" for op, av in b)
        if not re.fullmatch(r"\w+", word) or not any(c in SAFE_LETTERS for c in word):
            return False
    return True


def _classes_blind(items: Any) -> bool:
    run = "".join(chr(av) if op is LITERAL else "g" if op is BRANCH and _safe_words(av[1]) else "\0" for op, av in items)
    for word in re.findall(r"\w+", run):  # a literal word the masks may write: it may lie in one line's token
        if not any(c in SAFE_LETTERS for c in word):
            return False
    for op, av in items:
        if op is IN:
            for cop, cav in av:
                if cop is sre.RANGE and (cav[0], cav[1]) != (ord("A"), ord("Z")):
                    return False
        elif op is SUBPATTERN:
            if not _classes_blind(av[-1]):
                return False
        elif op is BRANCH:
            if not all(_classes_blind(b) for b in av[1]):
                return False
        elif op in (MAX_REPEAT, MIN_REPEAT):
            if av[0] > 1 or (av[1] != sre.MAXREPEAT and av[1] != 1) or not _classes_blind(av[2]):
                return False
            if av[1] == 1 and len(av[2]) == 1 and av[2][0][0] in (IN, sre.ANY, sre.NOT_LITERAL, sre.CATEGORY):
                return False  # `\w?` tells a number of one digit from a longer one
        elif op in (ASSERT, ASSERT_NOT):
            if not _classes_blind(av[1]):
                return False
        elif op not in (LITERAL, AT, sre.ANY, sre.NOT_LITERAL, sre.CATEGORY):
            return False
    return True
