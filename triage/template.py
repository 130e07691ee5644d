"""A log line's template: the line with its numbers, ids, times, paths, hosts and free-text quotes masked, so
the same message from another request, rank or step reads the same. Findings group unexplained lines by it
and take fingerprints from it; checks group verifier error messages by it."""

from __future__ import annotations

import re
from typing import Any

from triage.prefixes import RAY_ACTOR


def _long_quote(m: re.Match[str]) -> str:
    """A quoted string that is free text (it holds a space, or is long: model output, a message, a prompt) is
    masked; a short quoted name (`KeyError: 'shard_17'`) stays, its digits masked later."""
    body = m.group()[1:-1]
    return "<str>" if len(body) >= 24 or " " in body.strip() else m.group()


MASKS: list[tuple[re.Pattern[str], Any]] = [
    (re.compile("^" + RAY_ACTOR + " ?"), ""),
    (re.compile(r"\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z_]+\d+)*\] ?"), ""),
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>()\[\]{}]+"), "<url>"),
    # quoted free text: double quotes (escaped ones inside kept), then single quotes that are not apostrophes
    (re.compile(r'"(?:[^"\\\n]|\\.)*"'), _long_quote),
    (re.compile(r"(?<![\w'])'(?:[^'\\\n]|\\.)*'(?!\w)"), _long_quote),
    (re.compile(r"(?<![/\w.@+-])(?:[\w.@+-]+/){2,}[\w.@+-]+"), "<path>"),  # relative: outputs/run_1/ckpt
    (re.compile(r"(?:/[\w.@+-]+){2,}/?"), "<path>"),
    (re.compile(r"\b[A-Za-z]:\\(?:[^\\\s]+\\)*[^\\\s]*"), "<path>"),
    (re.compile(r"(?i)\b((?:request|req|trace|span|task|job|actor|worker|node|call)[ _-]?id)(\s*[:=]\s*|\s+)"
                r"['\"]?[\w.:-]*\d[\w.:-]*"), r"\1\2<id>"),
    (re.compile(r"\b(?:chatcmpl|cmpl|req|call|raysubmit|run)[-_][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*"), "<id>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b(?:[a-zA-Z0-9-]+\.)+(?:com|net|org|io|ai|dev|cloud|internal|local|svc|cn|edu)\b(?::\d+)?"),
     "<host>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<id>"),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b"), "<id>"),
    (re.compile(r"\b(?=(?:[A-Za-z]*\d){3})(?=(?:\d*[A-Za-z]){3})[A-Za-z0-9]{16,}\b"), "<id>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]


def template(text: str) -> str:
    for rx, repl in MASKS:
        text = rx.sub(repl, text)
    return " ".join(text.split())
