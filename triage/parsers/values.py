"""A printed setting's value as Python: quoted strings unquoted, None/True/False, ints, floats, else the text."""

from __future__ import annotations

import re
from typing import Any

INT = re.compile(r"-?\d+")


def literal(text: str) -> Any:
    v = text.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        v = v[1:-1]
    if v in ("None", ""):
        return None
    if v in ("True", "False"):
        return v == "True"
    try:
        return int(v) if INT.fullmatch(v) else float(v)
    except ValueError:
        return v
