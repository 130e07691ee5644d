"""A log line's template: the line with its numbers, ids, times, paths, hosts and free-text quotes masked, so
the same message from another request, rank or step reads the same. Findings group unexplained lines by it
and take fingerprints from it; checks group verifier error messages by it."""

from __future__ import annotations

import re
from typing import Any

from triage.lazyre import lazy
from triage.prefixes import RAY_ACTOR
from triage.redact import PATTERNS


def _long_quote(m: re.Match[str]) -> str:
    """A quoted string that is free text (it holds a space, or is long: model output, a message, a prompt) is
    masked; a short quoted name (`KeyError: 'shard_17'`) stays, its digits masked later."""
    body = m.group()[1:-1]
    return "<str>" if len(body) >= 24 or " " in body.strip() else m.group()


MASKS: list[tuple[re.Pattern[str], Any]] = [
    (lazy("^" + RAY_ACTOR + " ?"), ""),
    (lazy(r"\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z_]+\d+)*\] ?"), ""),
    (lazy(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (lazy(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
    (lazy(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>()\[\]{}]+"), "<url>"),
    # quoted free text: double quotes (escaped ones inside kept), then single quotes that are not apostrophes
    (lazy(r'"(?:[^"\\\n]|\\.)*"'), _long_quote),
    (lazy(r"(?<![\w'])'(?:[^'\\\n]|\\.)*'(?!\w)"), _long_quote),
    (lazy(r"(?<![/\w.@+-])(?:[\w.@+-]+/){2,}[\w.@+-]+"), "<path>"),  # relative: outputs/run_1/ckpt
    (lazy(r"(?:/[\w.@+-]+){2,}/?"), "<path>"),
    (lazy(r"\b[A-Za-z]:\\(?:[^\\\s]+\\)*[^\\\s]*"), "<path>"),
    (lazy(r"(?i)\b((?:request|req|trace|span|task|job|actor|worker|node|call)[ _-]?id)(\s*[:=]\s*|\s+)"
                r"['\"]?[\w.:-]*\d[\w.:-]*"), r"\1\2<id>"),
    (lazy(r"\b(?:chatcmpl|cmpl|req|call|raysubmit|run)[-_][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*"), "<id>"),
    (lazy(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (lazy(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (lazy(r"\b(?:[a-zA-Z0-9-]+\.)+(?:com|net|org|io|ai|dev|cloud|internal|local|svc|cn|edu)\b(?::\d+)?"),
     "<host>"),
    (lazy(r"\b[0-9a-f]{12,}\b"), "<id>"),
    (lazy(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b"), "<id>"),
    (lazy(r"\b(?=(?:[A-Za-z]*\d){3})(?=(?:\d*[A-Za-z]){3})[A-Za-z0-9]{16,}\b"), "<id>"),
    (lazy(r"\d+(?:\.\d+)?"), "<n>"),
]


def template(text: str) -> str:
    for rx, repl in MASKS:
        text = rx.sub(repl, text)
    return " ".join(text.split())


# -- shapes: a cheap key that implies the template ------------------------------------------------------------------
# Templating a line costs ~20 regex passes; a storm of error-like lines of a few hundred messages (numbers, ids and
# hex changing) needs a key that is cheap to take and that two lines share only when their templates (of their
# redacted text) are the same: then a line family is templated once. shape() maps characters whose exact value
# the masks never look at to one representative: every digit to `1`; a token the template masks whole whatever
# its value (`0x` + hex digits, a UUID, lower-case hex of 12+ characters or of 8+ with a digit and a letter, each
# standing alone as a word) to `a`s of its length, the first a `1` when it holds a digit (the masks that may take
# such a token first, a `request_id=...` or `req-...` id, ask only whether their span holds a digit). Every other
# mask and secret pattern tests these characters by their class only (\d, [0-9a-f], \w, ...), so two lines of
# one shape take the same masks at the same places, and what the masks leave of them is the same text. The
# patterns that name a particular digit or compare two parts of a line (`1//0`, `ya29.`, `r8_`, `GR1348941`, a
# PEM block's BEGIN/END pair) gate on literals; a line holding one of
# SHAPE_EXACT is its own shape (tests/test_many_files.py checks the gates against redact.PATTERNS).
# A number's length matters to some masks (an IP's parts, a 12-digit id, a quote of 24 characters, a bearer token
# of 8) but not where it stands alone: between spaces, brackets, `=`, `,`, `/` and the like, with no quote in the
# line and no secret pattern's gate (redact.PATTERNS), a number (`12`, `0.75`) of up to 11 digits a part can only
# ever be `<n>`: there it shapes as `1`, whatever its length.
SHAPE_EXACT = ("1//0", "ya29", "r8_", "gr1348941", "-----begin")
FAMILY_TEXT = 4000  # characters of a line its family is taken from (findings.unclassified: twice MAX_TEXT)
_WHOLE = lazy(
    r"\b(?:0x[0-9a-fA-F]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{12,}"
    r"|(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,11})\b"
)
_APART = r"\s()\[\]{}=,;/#<>!?|*&%"  # what may stand beside a number standing alone
_NUMBER = lazy(rf"(?<![^{_APART}])\d{{1,11}}(?:\.\d{{1,11}})?(?![^{_APART}])")
_GATES = re.compile("|".join(sorted(map(re.escape, {g for gate, _, _ in PATTERNS for g in gate.split("|")} | {"akia", "asia"}))))
_ONE = str.maketrans("0123456789abcdefABCDEF", "1111111111aaaaaaAAAAAA")
_DIGITS_ONE = bytes.maketrans(b"0123456789", b"1111111111")  # over the UTF-8 bytes: digits are never part of a
# longer character's bytes, and bytes.translate is ten times faster than str.translate


def _whole(m: re.Match[str]) -> str:
    tok = m.group()
    if tok.startswith("0x"):
        return "\x00x" + "a" * (len(tok) - 2)  # `0x` kept apart from a `1x` the digits make
    hexes = tok.translate(_ONE)
    if "a" not in hexes:
        return hexes
    return ("1" if "1" in hexes else "a") + hexes[1:].replace("1", "a")


def shape(text: str) -> bytes:
    """The shape of a line's first FAMILY_TEXT characters: lines of one shape have one template (see above). Not a
    template itself: only a key."""
    text = text[:FAMILY_TEXT]
    low = text.lower()
    if any(g in low for g in SHAPE_EXACT) or "\x00" in text:  # (read.py drops NULs: the `0x` mark is free)
        return b"=" + text.encode()
    text = _WHOLE.sub(_whole, text)
    if "'" not in text and '"' not in text and _GATES.search(low) is None:
        text = _NUMBER.sub("1", text)
    return b"~" + text.encode().translate(_DIGITS_ONE)
