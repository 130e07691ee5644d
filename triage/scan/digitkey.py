"""Messages of one key: the same but for their digit runs (`key`), and whether a regex finds a match on all of
them or on none (`runs_alike`). A storm's lines differ in their numbers; what is proved of one of its messages holds
for every other, so answers are kept per key (Scanner._cached_search, origins.KeyMemo), and a group's window tests
judge its folded claim as each of its lines (`answers_alike`, nearfold.py)."""

from __future__ import annotations

import os
import re

# Python 3.11+ (pyproject requires it) names the stdlib regex parser re._parser.
import re._parser as sre  # type: ignore[import-not-found]
from functools import lru_cache
from re._constants import (  # type: ignore[import-not-found]
    ANY,
    ASSERT,
    ASSERT_NOT,
    AT,
    BRANCH,
    CATEGORY,
    IN,
    LITERAL,
    MAX_REPEAT,
    MIN_REPEAT,
    NEGATE,
    NOT_LITERAL,
    RANGE,
    SUBPATTERN,
)
from typing import Any

from triage.lazyre import lazy
from triage.scan.masked import impossible, lacks

DIGIT_RUN = lazy(r"[0-9]+")
# classes that never hold a digit (re._parser's names)
NO_DIGIT = {sre.CATEGORY_SPACE, sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_NOT_WORD, sre.CATEGORY_LINEBREAK}


def linecache_enabled() -> bool:
    """Answers are kept per key (Scanner's rule search, the side lookup's; TRIAGE_NO_LINECACHE=1: each message is
    searched, for comparison)."""
    return not os.environ.get("TRIAGE_NO_LINECACHE")


def key(msg: str) -> str:
    """Two messages of one key differ only in their digit runs (their values and lengths)."""
    return DIGIT_RUN.sub("1", msg)


DIGITS = "0123456789"
# what each class answers on an ASCII digit (re._parser's names; the regex module's \d, \w, \s read ASCII digits alike)
DIGIT_CATEGORY = {sre.CATEGORY_DIGIT: True, sre.CATEGORY_NOT_DIGIT: False, sre.CATEGORY_SPACE: False,
                  sre.CATEGORY_NOT_SPACE: True, sre.CATEGORY_WORD: True, sre.CATEGORY_NOT_WORD: False,
                  sre.CATEGORY_LINEBREAK: False, sre.CATEGORY_NOT_LINEBREAK: True}
ATOMS = (LITERAL, NOT_LITERAL, ANY, IN, CATEGORY)
NEVER = "never"  # a part that can match no message of the key
# POSIX classes `[[:digit:]]`, fuzzy `{e<=1}`: the regex module's syntax that the stdlib parser reads as literal text
REGEX_ONLY = lazy(r"\[:|\{(?![\d,]*\})")


def _reads(op: Any, av: Any, ch: str) -> bool | None:
    """Whether a one-character item matches the digit `ch` (None: a class this analysis does not know)."""
    c = ord(ch)
    if op is LITERAL:
        return av == c
    if op is NOT_LITERAL:
        return av != c
    if op is ANY:
        return True
    if op is CATEGORY:
        return DIGIT_CATEGORY.get(av)
    negate, hit = False, False
    for cop, cav in av:
        if cop is NEGATE:
            negate = True
        elif cop is LITERAL:
            hit = hit or cav == c
        elif cop is RANGE:
            hit = hit or cav[0] <= c <= cav[1]
        elif cop is CATEGORY:
            known = DIGIT_CATEGORY.get(cav)
            if known is None:
                return None
            hit = hit or known
        else:
            return None
    return hit != negate


def _digits_read(op: Any, av: Any) -> int | None:
    """How many of the ten ASCII digits a one-character item matches."""
    n = 0
    for ch in DIGITS:
        r = _reads(op, av, ch)
        if r is None:
            return None
        n += r
    return n


def _part(op: Any, av: Any, text: str | None, fold: bool, needs: dict[Any, Any]) -> Any:
    """(nullable, may start with a digit, may end with a digit, holds an assertion) of one parsed item; NEVER; None
    when the item may read a digit run other than whole (see runs_alike)."""
    if op in ATOMS:
        n = _digits_read(op, av)
        return (False, False, False, False) if n == 0 else None
    if op is AT:
        return True, False, False, True
    if op is SUBPATTERN:
        add, off = av[1], av[2]
        return _seq(av[-1], text, (fold or bool(add & re.IGNORECASE)) and not off & re.IGNORECASE, needs)
    if op is BRANCH:
        parts = [p for p in (_seq(b, text, fold, needs) for b in av[1]) if p is not NEVER]
        if not parts:
            return NEVER
        if any(p is None for p in parts):
            return None
        return tuple(any(p[i] for p in parts) for i in range(4))
    if op in (MAX_REPEAT, MIN_REPEAT):
        lo, hi, body = av
        if len(body) == 1 and body[0][0] in ATOMS:
            n = _digits_read(*body[0])
            if n == 0:
                return lo == 0, False, False, False
            if n == len(DIGITS) and hi == sre.MAXREPEAT and lo <= 1:  # eats a digit run whole, whatever its length
                return lo == 0, True, True, False
            return None
        got = _seq(body, text, fold, needs)
        if got is NEVER:
            return (True, False, False, False) if lo == 0 else NEVER
        if got is None or hi > 1 and got[1] and got[2]:  # one repeat's digit next to the next one's
            return None
        return lo == 0 or got[0], got[1], got[2], got[3]
    if op in (ASSERT, ASSERT_NOT):
        got = _seq(av[1], text, fold, needs)
        if got is NEVER:
            return NEVER if op is ASSERT else (True, False, False, False)
        if got is None or got[3] and (got[1] or got[2]):
            return None
        return True, False, False, True
    return None  # back references, conditionals, atomic groups, possessive repeats: not analysed


def _seq(items: Any, text: str | None, fold: bool, needs: dict[Any, Any]) -> Any:
    if text is not None and lacks(items, fold, text, needs):
        return NEVER
    nullable, first, last, asserts = True, False, False, False
    for op, av in items:
        got = _part(op, av, text, fold, needs)
        if got is None or got is NEVER:
            return got
        n, f, la, a = got
        if last and f:  # two parts may share one digit run
            return None
        first = first or nullable and f
        last = la or n and last
        nullable = nullable and n
        asserts = asserts or a
    return nullable, first, last, asserts


NAMED = lazy(r"(?<!\\)\(\?P<\w+>")  # a named group (the regex module lets two share a name; the stdlib's not)


@lru_cache(maxsize=4096)
def _tree(source: str) -> tuple[Any, dict[Any, Any]] | None:
    """The parsed regex, and what its parts need (masked.lacks, filled as asked)."""
    if REGEX_ONLY.search(source) or "(?P=" in source:
        return None
    try:
        return sre.parse(NAMED.sub("(?:", source)), {}  # names change no match
    except Exception:  # noqa: BLE001 - syntax of the regex module only: not analysed
        return None


def runs_alike(source: str, msg: str | None) -> bool:
    """Whether the regex's search finds a match on every message of msg's key or on none: each part of it that may
    read a digit is an unbounded repeat (`\\d+`, `[\\d.]+`, `\\w*`, `.*?`) of a class holding every digit, and the
    parts next to it cannot read one, so a match takes each digit run whole, whatever its length and value, and
    the same match, its runs replaced, is one on any message of the key; a branch's alternative that needs a
    literal msg lacks (masked.lacks) matches none. A match may begin or end inside a run (a search's first or last
    part): then it holds no assertion (`\\b`, `^`, a lookaround), which could tell where it stands. msg None: on
    every key (no alternative left out)."""
    parsed = _tree(source)
    if parsed is None:
        return False
    tree, needs = parsed
    fold = bool(tree.state.flags & re.IGNORECASE)
    got = _seq(tree, msg, fold, needs)
    if got is NEVER:
        return True
    if got is None:
        return False
    nullable, first, last, asserts = got
    if tree and tree[0][0] is AT and tree[0][1] in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING):
        nullable = first = False  # it begins where the message does
    return not (asserts and (nullable or first or last))


@lru_cache(maxsize=4096)
def digit_blind(source: str) -> bool:
    """The regex cannot read a digit: no literal digit, range or class that holds one, no `.`, `\\w`, `\\S` or negated
    class, no back reference. Its matches lie between digit runs, and `\\b` beside a run sees a word character on
    every line of a key, so it answers alike on every message of one key."""
    try:
        parsed = sre.parse(source)
    except Exception:  # noqa: BLE001 - syntax of the regex module only: not analysed
        return False
    return _no_digit(parsed)


def _no_digit(items: Any) -> bool:
    for op, av in items:
        if op is LITERAL:
            if chr(av).isdigit():
                return False
        elif op is IN:
            for cop, cav in av:
                if cop is NEGATE or cop is LITERAL and chr(cav).isdigit():
                    return False
                if cop is RANGE and cav[0] <= ord("9") and cav[1] >= ord("0"):
                    return False
                if cop is CATEGORY and cav not in NO_DIGIT:
                    return False
        elif op is CATEGORY:
            if av not in NO_DIGIT:
                return False
        elif op is SUBPATTERN:
            if not _no_digit(av[-1]):
                return False
        elif op is BRANCH:
            if not all(_no_digit(b) for b in av[1]):
                return False
        elif op in (MAX_REPEAT, MIN_REPEAT):
            if not _no_digit(av[2]):
                return False
        elif op in (ASSERT, ASSERT_NOT):
            if not _no_digit(av[1]):
                return False
        elif op is not AT:
            return False
    return True


def answers_alike(source: str, msg: str) -> bool:
    """The regex's search answers alike on every message of msg's key: it reads no digit, or a literal it needs is
    missing from msg and holds no digit (masked.impossible: then no message of the key holds it)."""
    return digit_blind(source) or impossible(source, msg)
