"""Module-level regexes compiled when first used.

A run imports every parser and check, and their module-level `re.compile` calls took 30-40 ms of each run's
0.2 s start, most of it for regexes the run never uses (a run without Ray actors, tracebacks or secrets never
matches theirs). `lazy(pattern, flags)` stands for `re.compile(pattern, flags)`: the first attribute asked of it
(`.match`, `.search`, `.pattern`...) compiles the regex, and every attribute of the compiled pattern is then kept
on the object itself, so later calls are plain attribute look-ups of the compiled pattern's own methods (no
Python call in between: hot loops cost what they cost before). A bad regex still fails, at its first use; the
tests use every module's regexes.
"""

from __future__ import annotations

import re
from typing import Any, cast

_KEPT = ("match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split", "scanner", "pattern", "flags",
         "groups", "groupindex")


class LazyPattern:
    """A regex compiled on first use (see the module's docstring); `re` functions want `.compiled()`."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def compiled(self) -> re.Pattern[Any]:
        rx = self.__dict__.get("_rx")
        if rx is None:
            rx = re.compile(*self._source)
            for name in _KEPT:
                self.__dict__[name] = getattr(rx, name)
            self.__dict__["_rx"] = rx
        return cast("re.Pattern[Any]", rx)

    def __getattr__(self, name: str) -> Any:  # only for attributes not kept yet: the first use
        if name.startswith("__") or name in ("_source", "_rx"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r})"


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """re.compile(pattern, flags), compiled when first used (typed as the pattern it stands for)."""
    return cast("re.Pattern[str]", LazyPattern(pattern, flags))


def lazy_bytes(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]:
    """lazy() for a bytes pattern."""
    return cast("re.Pattern[bytes]", LazyPattern(pattern, flags))
