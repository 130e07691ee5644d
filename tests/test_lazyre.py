"""triage.lazyre: a module-level regex compiled on first use behaves as re.compile's pattern."""

import re

import pytest

from triage import lazyre
from triage.lazyre import lazy, lazy_bytes


def test_compiles_on_first_use_and_keeps_the_compiled_methods():
    rx = lazy(r"(?P<n>\d+) ms", re.IGNORECASE)
    assert "_rx" not in vars(rx)  # nothing compiled at import
    m = rx.search("took 12 MS")
    assert m is not None and m.group("n") == "12"
    assert vars(rx)["search"] == re.compile(r"(?P<n>\d+) ms", re.IGNORECASE).search  # the pattern's own method now
    assert rx.pattern == r"(?P<n>\d+) ms" and rx.flags & re.IGNORECASE and rx.groupindex == {"n": 1}
    assert rx.sub("#", "a 1 ms, b 2 ms") == "a #, b #"
    assert [m.group() for m in rx.finditer("1 ms 2 ms")] == ["1 ms", "2 ms"]


def test_bytes_and_compiled():
    rx = lazy_bytes(rb"\x1b\[[0-9;]*m")
    assert rx.sub(b"", b"\x1b[31mred\x1b[0m") == b"red"
    assert isinstance(rx.compiled(), re.Pattern)  # type: ignore[attr-defined]


def test_a_bad_regex_fails_at_first_use():
    rx = lazy(r"(unclosed")
    with pytest.raises(re.error):
        rx.match("x")


def test_every_module_level_lazy_regex_compiles():
    import gc

    import triage.analyze  # noqa: F401 - imports every parser and check

    made = [o for o in gc.get_objects() if isinstance(o, lazyre.LazyPattern)]
    assert len(made) > 100
    for rx in made:
        rx.compiled()
