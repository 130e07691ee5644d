"""Placing a line by the whole run, once every file is scanned.

A file's scan places each claimed line on a side by what that file shows (SideFinder: an actor prefix, a marker in
the traceback around it, the file's kind); a line nothing places is `unknown`, and the rules read `unknown` as their
default (a bare CUDA OOM is the trainer's: trainer-oom's rules have `not_side: [engine]`). Some runs say more than a
file does: an engine's launcher reports that the engine never started (sides.yaml `start_failures`), the OOM that
killed it was pasted or logged elsewhere without its prefix, and nothing anywhere is the trainer's. Then the engine
is the run's one failing process, and an unplaced line a rule of the engine's side also explains is given to that
rule (real-extra 1410). A line placed by its own file (the trainer's, or any side) is never moved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from triage.library.rules import Library, Rule
from triage.model import Event, Hit
from triage.scan.filescan import FileResult
from triage.scan.scanner import numbers_of, thresholds_hold

ENGINE, TRAINER, UNKNOWN = "engine", "trainer", "unknown"
TRAINING = ("metrics", "metric_series")  # events only a training loop writes (its step records)


def place_by_run(lib: Library, results: list[FileResult], events: Iterable[Event] = ()) -> int:
    """Give the run's unplaced lines to the engine when an engine's start failed and nothing is the trainer's.
    Returns how many hits moved."""
    if not lib.start_failures:
        return 0
    hits = [h for r in results for h in r.hits]
    if not any(h.rule in lib.start_failures for h in hits) or _trainer_seen(results, hits, events):
        return 0
    engine_rules = sorted((r for r in lib.rules if ENGINE in r.side and r.near is None and r.not_near is None
                           and not r.check), key=lambda r: -r.priority)
    moved = 0
    for r in results:
        for i, h in enumerate(r.hits):
            if h.side != UNKNOWN:
                continue
            rule = lib.rule(h.rule)
            if rule is None or ENGINE not in rule.not_side:  # only a rule that defers to the engine's gives way
                continue
            found = _engine_rule(engine_rules, h)
            if found is not None:
                alt, numbers = found
                r.hits[i] = Hit(alt.id, h.line, numbers, ENGINE, h.extra)
                moved += 1
    return moved


def _trainer_seen(results: list[FileResult], hits: list[Hit], events: Iterable[Event]) -> bool:
    """Anything of the trainer's in the run: a trainer log, a line placed on the trainer, a training step record."""
    return (any(r.file.side == TRAINER for r in results) or any(h.side == TRAINER for h in hits)
            or any(e.kind in TRAINING for e in events))


def _engine_rule(rules: list[Rule], hit: Hit) -> tuple[Rule, dict[str, Any]] | None:
    """The first engine-side rule (by priority) that matches the hit's line and whose thresholds hold."""
    for rule in rules:
        mo = rule.search(hit.line.msg)
        if not mo:
            continue
        numbers = numbers_of(mo)
        if rule.when and not thresholds_hold(rule.when, numbers):
            continue
        return rule, numbers
    return None
