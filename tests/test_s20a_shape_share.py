"""findings.unclassified takes a fold's shape from the fold (the shape its lines were folded under) instead of
template.shape again, and asks whether lines were warned only while every line before was: the findings must be
the ones it gives when every shape is taken again (s20 speed round, errors profile: 2,904 shapes -> 579)."""

from __future__ import annotations

import pytest

from triage.checks import load_checked_library
from triage.findings import unclassified
from triage.model import Line
from triage.scan.unexplained import Fold, Unexplained
from triage.template import shape


def _line(no: int, msg: str, level: str = "ERROR") -> Line:
    text = f"[2026-05-24 00:57:{no % 60:02d} DP0 TP0] {level} {msg}"
    return Line("sglang-engine-0.log", no, text, f"{level} {msg}")


MSGS = [
    "model_runner: request 88edd6c2-804c-a4a1-3bb1-{n:012x} failed after {n} attempts (283 ms)",
    "cuda_graph_runner: lease 65ef9457{n:08x} expired 10.{n} s ago; reacquiring",
    "weight_loader: handle 0x9136{n:08x} is stale (generation {n}, expected 74)",
    "lora_manager: could not reach 10.0.{n}.7:30000 after {n} tries",
]


def _folded(warned_from: int | None = None) -> tuple[list[Line], list[Fold]]:
    u = Unexplained()
    for no in range(1, 200):
        level = "WARNING" if warned_from is not None and no >= warned_from else "ERROR"
        u.add(_line(no, MSGS[no % len(MSGS)].format(n=no * 7919), level))
    return u.close()


def _strip(folds: list[Fold]) -> list[Fold]:
    out = []
    for f in folds:
        g = Fold(f.first)
        g.last, g.count = f.last, f.count
        out.append(g)
    return out


def _view(findings: list) -> list:
    return [(f.title, f.count, f.severity, [(e.file, e.line, e.text) for e in f.evidence], f.numbers)
            for f in findings]


@pytest.mark.parametrize("warned_from", [None, 1, 100])
def test_shared_shapes_give_the_findings_taking_them_again_gives(warned_from: int | None) -> None:
    lib = load_checked_library()
    lines, folds = _folded(warned_from)
    assert folds and all(f.shape == shape(f.first.msg) for f in folds)  # folded here: the shape of every line
    shared = unclassified(lib, lines, True, folds)
    again = unclassified(lib, lines, True, _strip(folds))
    assert _view(shared) == _view(again)
    assert sum(f.count for f in shared) == 199
    # warned only when every line of the group was a warning (the level is part of the message here)
    assert all((f.severity == "info") == ("WARNING" in f.title) for f in shared)
    assert any(f.severity == "info" for f in shared) == (warned_from is not None)


def test_a_fold_of_records_carries_the_shape_it_was_merged_under() -> None:
    u = Unexplained()
    first, prev, last = _line(1, MSGS[0].format(n=1)), _line(5, MSGS[0].format(n=5)), _line(9, MSGS[0].format(n=9))
    key = shape(first.msg)
    u.natives([(key, 3, first, prev, last)])
    u.add(_line(10, "an unrelated message"))  # the record's last line is folded once a newer line comes
    _, folds = u.close()
    assert [(f.shape, f.count, f.first.lineno, f.last.lineno) for f in folds] == [(key, 3, 1, 9)]
