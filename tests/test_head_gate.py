"""The C gate of unwrap's head tests (_linescan.head_gate) rules out only what wrap_width and the rich-log test rule
out themselves: over every input file of the fixtures and the shared corpus (real pastes, among them hard-wrapped
terminal copies and rich logs), and over heads made to sit on each of its edges, the layout unwrap picks is the
one the Python tests alone pick."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.input import unwrap
from triage.scan import native

ROOT = Path(__file__).resolve().parent.parent
needs_c = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")


def _python_layout(head: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    with monkeypatch.context() as m:
        m.setenv("TRIAGE_NO_NATIVE", "1")
        return unwrap.layout(head)


def _heads() -> list[tuple[str, bytes]]:
    found = []
    for base in (ROOT / "fixtures", ROOT.parent / "shared" / "corpus"):
        for p in sorted(base.glob("**/input/**/*")) if base.exists() else []:
            if p.is_file() and p.stat().st_size:
                with p.open("rb") as f:
                    found.append((str(p.relative_to(base.parent)), f.read(unwrap.HEAD)))
    return found


@needs_c
def test_the_gate_agrees_with_the_python_tests_on_every_real_input(monkeypatch: pytest.MonkeyPatch) -> None:
    heads = _heads()
    assert len(heads) > 1000
    wrapped = 0
    for name, head in heads:
        fast = unwrap.layout(head)
        assert fast == _python_layout(head, monkeypatch), name
        may_wrap, may_rich = native._linescan.head_gate(head, unwrap.MIN_WIDTH, unwrap.RICH_LEVELS)
        assert may_wrap or unwrap.wrap_width(head) == 0, name
        assert may_rich == any(w in head for w in unwrap.RICH_LEVELS), name
        wrapped += fast[0] > 0
    assert wrapped >= 5  # hard-wrapped pastes are among them: both sides of the gate are exercised


def _rich(width: int = 70) -> bytes:
    col = len(b"[12:00:01] INFO     ")
    first = b"[12:00:01] INFO     the engine started".ljust(width - 10) + b"cli.py:12 "
    rows = [first] + [(b" " * col + b"more of the message here %d" % i).ljust(width) for i in range(3)]
    return b"\n".join(rows * 3) + b"\n"


def _wrapped(width: int, pairs: int, lead: bytes = b"") -> bytes:
    piece = (b"RuntimeError: the engine process died while serving requests, killed by the OOM killer " * 3)[:width]
    return lead + b"".join(piece + b"\n" + b"continued here (%d)\n" % i for i in range(pairs))


@needs_c
@pytest.mark.parametrize("head", [
    _wrapped(90, 2),  # two wrapped lines continued: a width
    _wrapped(90, 1),  # one: none
    _wrapped(79, 3),  # narrower than a terminal: none
    _wrapped(90, 2)[:-1],  # the last line cut by the head's end is no line
    _wrapped(90, 2, "\u00e9t\u00e9 ".encode() + b"x" * 120 + b"\n"),  # widest not ASCII: the Python tests decide
    _wrapped(90, 2, b"\tx" + b"y" * 120 + b"\n"),  # widest with a tab
    b"[2026-05-24 00:52:58] step 1 loss 0.25 lr 1e-05 grad_norm 1.5 tokens 4096 throughput 812.4 mfu 0.41 x\n" * 40,
    b"[12:00:01] INFO     starting the run" + b" " * 40 + b"cli.py:12\n",  # a rich level, no rich layout
    _rich(),  # a rich log's rows at their column
    b"no newline at all " * 20,
    b"",
])
def test_the_gate_agrees_on_its_edges(head: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert unwrap.layout(head) == _python_layout(head, monkeypatch)
    may_wrap, may_rich = native._linescan.head_gate(head, unwrap.MIN_WIDTH, unwrap.RICH_LEVELS)
    assert may_wrap or unwrap.wrap_width(head) == 0
    assert may_rich == any(w in head for w in unwrap.RICH_LEVELS)


@needs_c
def test_records_of_one_format_and_length_are_ruled_out_in_c() -> None:
    # a per-rank metric log: every line as long as the widest, each followed by one of its own format
    head = b"".join(b"[2026-05-24 00:52:%02d] step %d loss 0.25 lr 1e-05 grad_norm 1.5 tokens 4096 mfu 0.41\n"
                    % (i % 60, i % 10) for i in range(60))
    assert native._linescan.head_gate(head, unwrap.MIN_WIDTH, unwrap.RICH_LEVELS) == (False, False)
    assert native._linescan.head_gate(_wrapped(90, 2), unwrap.MIN_WIDTH, unwrap.RICH_LEVELS)[0] is True
    assert unwrap.layout(_wrapped(90, 2)) == (90, 0, 0)
    assert unwrap.layout(_rich()) == (0, 20, 70)


@needs_c
def test_contains_any_is_python_in_on_every_shape_of_needle() -> None:
    import random
    rng = random.Random(7)
    alphabet = b" \n(DPab"
    for _ in range(3000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        needles = tuple(bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 5))) for _ in range(rng.randrange(1, 3)))
        assert native._linescan.contains_any(data, needles) == any(n in data for n in needles), (data, needles)
    # several_origins on its edges: a prefix on the first line, two actors, one actor twice, DP tags
    assert native.several_origins(b"(A pid=1) x\n(B pid=2) y\n")
    assert not native.several_origins(b"x\n(A pid=1) x\n(A pid=1) y\n")
    assert native.several_origins(b"[2026 TP0 DP0] Decode batch\n[2026 TP0 DP1] Decode batch\n")
