"""What a batch of small files sends back (issue 13): its lines, events and hits pickled attribute by attribute, a timer
reading printed again as the index of its first tape entry, and the per-file costs cut from the scan and the sniff,
each giving what it gave before."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from triage import redact as redact_mod
from triage.input import discover
from triage.model import Event, Hit, Line, LogFile
from triage.parsers import metrics
from triage.parsers.metrics import TimerStore
from triage.scan import batches, parallel


def test_lines_events_and_hits_travel_with_every_slot_and_the_lines_they_share() -> None:
    assert parallel.LINE_SLOTS == Line.__slots__  # _line sends each slot by name: a new slot must be added there
    cut = Line("ranks/a.log", 7, "(TaskRunner pid=12) [2026-05-24 00:51:18] boom", "boom", "TaskRunner", "12", 3, 9)
    own = Line("ranks/a.log", 8, "Error: x\r", "Error: x (kept apart)")  # a message that is not the text's end
    ev = Event("timer", cut, {"name": "actor_train", "phase": "end", "seconds": 41.5})
    hit = Hit("trainer.cuda-oom", cut, {"gib": 2.0}, "trainer", [own])
    back_ev, back_hit = pickle.loads(pickle.dumps((ev, hit)))
    assert back_ev == ev and back_hit == hit
    assert back_hit.line is back_ev.line  # one line in both, as sent (evidence compares lines by identity)
    assert (back_ev.line.msg, back_ev.line.actor, back_ev.line.pid, back_ev.line.repeat, back_ev.line.until) == (
        "boom", "TaskRunner", "12", 3, 9)
    assert back_hit.extra[0].msg == "Error: x (kept apart)" and back_hit.extra[0].text == "Error: x\r"


def timer(lineno: int, name: str, phase: str, seconds: float | None = None) -> Event:
    fields: dict[str, Any] = {"name": name, "phase": phase}
    if seconds is not None:
        fields["seconds"] = seconds
    return Event("timer", Line("ranks/a.log", lineno, f"Timer {name} {phase} {seconds}", f"Timer {name} {phase}"), fields)


def stored(store: TimerStore) -> tuple[list[tuple[Any, int, int]], int]:
    """(each reading kept: its key, the line of the event kept, its count; the store's last line)."""
    assert store.last is not None
    return [(key, ev.line.lineno, n) for key, (ev, n) in store.kept.items()], store.last.lineno


READINGS = [("actor_train", "end", 41.5), ("train_wait", "start", None), ("actor_train", "end", 41.5),
            ("update", "end", 123.45), ("update", "end", 123.45), ("train_wait", "start", None),
            ("actor_train", "end", 41.5)]


@pytest.mark.parametrize("bound", [metrics.TIMER_READINGS, 1])  # 1: every new reading's seconds are rounded
def test_a_timer_reading_printed_again_travels_as_an_index_and_plays_as_its_events_would(
        bound: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "TIMER_READINGS", bound)
    events = [timer(i + 1, *r) for i, r in enumerate(READINGS)]
    tape = batches.Tape()
    for ev in events:
        tape.timers.add(ev)
    entries = pickle.loads(pickle.dumps(tape.done()))
    # 41.5 s and the start again as indices; 123.45 s (rounding makes it 123) in full; the tape's last in full
    assert [what for what, _ in entries] == [batches.TIMER, batches.TIMER, batches.TIMER_AGAIN, batches.TIMER,
                                             batches.TIMER, batches.TIMER_AGAIN, batches.TIMER]
    assert entries[2][1] == 0 and entries[5][1] == 1
    direct, played = TimerStore([]), TimerStore([])
    for ev in events:
        direct.add(ev)

    class Series:  # the run's stores as play() sees them
        store = None
        timers = played

    batches.play(entries, Series)  # type: ignore[arg-type]
    assert stored(played) == stored(direct)
    assert stored(direct)[1] == 7


def test_a_file_that_ends_with_its_newline_is_not_handed_to_the_line_reader(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.library.rules import load_library
    from triage.scan import prefiltered
    from triage.scan.scanner import Scanner

    scanner = Scanner(load_library())
    if scanner.needles is None:
        pytest.skip("no C prefilter")
    line = "[2026-05-24 00:51:18] train.py:12 - RuntimeError: CUDA error: an illegal memory access was encountered"
    ended = tmp_path / "ended.log"
    ended.write_text("starting\n" + line + "\nstep 1\n")
    open_end = tmp_path / "open-end.log"
    open_end.write_text("starting\n" + line + "\nstep 1")  # the last line has no newline yet
    handed: list[int] = []
    real = prefiltered._python_rest
    monkeypatch.setattr(prefiltered, "_python_rest", lambda *a: handed.append(1) or real(*a))
    for path in (ended, open_end):
        lf = LogFile(path=str(path), rel=path.name, kind="trainer", size=path.stat().st_size)
        res = scanner.scan(lf)
        assert (lf.lines, lf.status) == (3, "read")
        assert [(h.rule, h.line.lineno) for h in res.hits] == [("other.cuda-error", 2)]
    assert not handed


def test_the_sniff_reads_a_small_file_for_its_size_and_a_file_of_no_size_for_a_head(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    real_read = discover._read_head

    def spy(path: str, want: int) -> bytes:
        asked.append(want)
        got = real_read(path, want)
        assert len(got) == min(want, os.path.getsize(path))  # read to the size asked or the file's end
        return got

    monkeypatch.setattr(discover, "_read_head", spy)
    engine = tmp_path / "server.out"
    engine.write_text("".join(f"[2026-05-24 00:5{i}:00] Decode batch. #running-req: 3, #token: 100, token usage: 0.10\n"
                              for i in range(4)))
    found = {lf.rel: lf for lf in discover.discover([str(tmp_path)])[0]}
    assert asked == [engine.stat().st_size + 1] and found["server.out"].kind == "sglang"
    lf = LogFile(path=str(engine), rel="server.out", size=0)  # a size stat() could not tell (a /proc-like file)
    discover.sniff(lf)
    assert asked[-1] == discover.SNIFF and lf.kind == "sglang"


def test_a_text_holding_no_gate_literal_is_left_as_it_is_and_every_gate_is_looked_for() -> None:
    name = "ranks/train-rank-00001.log"
    assert redact_mod.redact(name) is name
    for gate, _, _ in redact_mod._GATED:
        for literal in gate:
            assert redact_mod._ANY_GATE.search(literal), literal
    assert redact_mod.redact("export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456") != (
        "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456")
