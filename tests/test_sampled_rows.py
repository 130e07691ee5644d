"""Sampled SGLang stats rows reach the timelines with the values the C prefilter read (_linescan.c, sample_vals), not
parsed again in Python: every array, count and pressure judgement must be what the line-for-line path gives, and a
row holding a key Python's parse reads otherwise (`preempted`, a bare `usage`, `t`, a boolean throughput) or an
origin the C side does not name (vLLM's `Engine NNN:`) must still be parsed in Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from triage.input.discover import discover
from triage.library.rules import load_library
from triage.scan import native
from triage.scan import prefiltered as fastscan
from triage.scan.scanner import Scanner

pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")

LIB = load_library()

# SGLang scheduler rows (managers/scheduler_metrics_mixin.py): plain, hybrid mamba, PD decode, DP-attention tags
PLAIN = [
    "[2026-05-24 00:53:01 DP0 TP0] Decode batch, #running-req: 40, #token: 200000, token usage: 0.93, "
    "cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: 12",
    "[2026-05-24 00:53:02 DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: 0.41, "
    "#running-req: 3, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 312.40",
    "[2026-05-24 00:53:03 DP0 TP0] Decode batch, #running-req: 2, #token: 900, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 61.02, #queue-req: 0",
    "[2026-05-24 00:53:04 DP0 TP0] Decode batch, #running-req: 12, #full token: 120000, full token usage: 0.97, "
    "mamba num: 12, mamba usage: 0.25, cuda graph: True, gen throughput (token/s): 880.10, #queue-req: 4",
    "[2026-05-24 00:53:05 DP0 TP0] Decode batch, #running-req: 30, #token: 190000, token usage: 0.99, "
    "#prealloc-req: 3, #retracted-req: 1, cuda graph: True, gen throughput (token/s): 1500.00, #queue-req: 0",
]
# rows Python must parse itself: keys its parse reads otherwise, a boolean where a number is stored, vLLM's tag
ODD = [
    "[2026-05-24 00:53:06 DP0 TP0] Decode batch, #running-req: 40, token usage: 0.95, preempted: 2, #queue-req: 5",
    "[2026-05-24 00:53:07 DP0 TP0] Decode batch, #running-req: 40, usage: 0.96, #queue-req: 5",
    "[2026-05-24 00:53:08 DP0 TP0] Decode batch, #running-req: 40, token usage: 0.50, t: 7, #queue-req: 1",
    "[2026-05-24 00:53:09 DP0 TP0] Decode batch, #running-req: 40, token usage: 0.97, "
    "gen throughput (token/s): True, #queue-req: 6",
    "[2026-05-24 00:53:10 DP0 TP0] Engine 000: Decode batch, #running-req: 40, token usage: 0.97, #queue-req: 6",
]


def scan(path: Path, native_path: bool = True) -> Any:
    scanner = Scanner(LIB)
    if not native_path:
        scanner.needles = None
    files, _ = discover([str(path)])
    return scanner.scan(files[0])


def view(es: Any) -> dict[str, Any]:
    eps = es.pressure_episodes
    return {"arrays": [list(a) for a in (es.lineno, es.decode, es.usage, es.running, es.queue, es.throughput,
                                          es.mamba_usage, es.time)],
            "total": es.total, "engine": es.engine, "preempted": es.preempted,
            "preempt_rows": [ln.lineno if ln else None for ln in es.preempt_rows],
            "first": es.first_line.text if es.first_line else None,
            "pressure": [(ln.lineno, ln.text, u, q) for ln, u, q in es.pressure],
            "last": (es.last_pressure[0].text, es.last_pressure[1:]) if es.last_pressure else None,
            "episodes": [(e.first.text, e.last.text, e.rows, e.peak_usage, e.peak_queue, e.t0, e.t1)
                         for e in eps.items],
            "lone": [(e.first.lineno, e.last.lineno, e.rows) for e in es.lone_episodes.items]}


def test_sampled_rows_give_what_python_parses_and_odd_rows_stay_pythons(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    sampled: list[Any] = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (r := real(*a), sampled.extend(
        h for h in r[4] if h[0] in (fastscan.K_STATS, fastscan.K_SAMPLED)))[0])
    log = tmp_path / "sglang-engine-0.log"
    lines = (PLAIN + ODD) * 3 + PLAIN[:2]
    log.write_text("\n".join(lines) + "\n")
    fast, slow = scan(log), scan(log, native_path=False)
    assert sorted(fast.engines) == sorted(slow.engines)
    for key in slow.engines:
        assert view(fast.engines[key]) == view(slow.engines[key])
    assert {lines[rel] for _, rel, _, _, vals in sampled if vals is not None} == set(PLAIN)  # no odd one
    es = fast.engines[f"{log.name} DP0"]
    assert es.preempted == 6  # `preempted: 2` three times, from the rows Python parsed
    assert list(es.mamba_usage)[3] == pytest.approx(0.25)
    assert list(es.queue)[4] == 4.0  # PD decode: the pre-allocated and retracted requests wait too
