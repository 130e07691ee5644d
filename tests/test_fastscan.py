"""The native prefilter (fastscan.py + _linescan.c) must give what the line-for-line Python path gives."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from triage.analyze import Settings, analyze
from triage.input.discover import discover
from triage.library.rules import load_library
from triage.parsers.engine_stats import ROW_GAP
from triage.report import RenderOptions, render
from triage.scan import native
from triage.scan import prefiltered as fastscan
from triage.scan.scanner import Scanner

pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")

LIB = load_library()

DECODE = ("[2026-05-24 00:53:{s:02d} TP0] Decode batch, #running-req: 40, #token: 200000, token usage: {u}, "
          "cuda graph: True, gen throughput (token/s): 2210.45, #queue-req: {q}")
PREFILL = ("[2026-05-24 00:53:{s:02d}] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: {u}, "
           "#running-req: 0, #queue-req: {q}, #pending-token: 0, cuda graph: False, input throughput (token/s): 312.40")
OOM = [
    "[2026-05-24 00:54:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2620, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB "
    "of which 1.50 GiB is free.",
]


def stats_lines(n: int, usage: str = "0.42", queue: int = 0) -> list[str]:
    return [(DECODE if i % 3 else PREFILL).format(s=i % 60, u=usage, q=queue) for i in range(n)]


def scan(path: Path, native: bool = True):  # type: ignore[no-untyped-def]
    scanner = Scanner(LIB)
    if not native:
        scanner.needles = None
    files, _ = discover([str(path)])
    return scanner.scan(files[0])


def report_json(run: Path, monkeypatch: pytest.MonkeyPatch, native: bool) -> dict:
    if native:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    return json.loads(render("json", analyze(Settings(paths=[str(run)]), LIB), RenderOptions()))


def test_a_small_engine_log_gives_the_same_report_and_timeline_on_both_paths(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(stats_lines(300) + stats_lines(3, "1.00", 7) + OOM + stats_lines(50)) + "\n")
    assert report_json(tmp_path, monkeypatch, True) == report_json(tmp_path, monkeypatch, False)
    fast, slow = scan(log), scan(log, native=False)
    (es_fast,), (es_slow,) = fast.engines.values(), slow.engines.values()
    assert list(es_fast.lineno) == list(es_slow.lineno)
    assert list(es_fast.usage) == list(es_slow.usage)
    assert es_fast.total == es_slow.total == 353
    assert [ln.lineno for ln, _, _ in es_fast.pressure] == [301, 302, 303]


def test_a_large_log_keeps_a_sample_every_pressure_row_and_the_exact_row_count(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    log = tmp_path / "sglang-engine-0.log"
    lines = stats_lines(5000) + stats_lines(2, "0.97", 4) + stats_lines(5000) + stats_lines(1, "1.00", 9)
    log.write_text("\n".join(lines) + "\n")
    (es,) = scan(log).engines.values()
    assert es.total == 10003
    assert 40 <= len(es) <= 60  # a sample of the quiet rows, plus the three pressure rows
    assert [ln.lineno for ln, _, _ in es.pressure] == [5001, 5002, 10003]
    assert es.last_pressure is not None and es.last_pressure[0].lineno == 10003
    assert es.first_line is not None and es.first_line.lineno == 1


def test_odd_usage_values_are_parsed_in_python_not_assumed_low(tmp_path: Path) -> None:
    log = tmp_path / "sglang-engine-0.log"
    odd = ["0.9", "1", "95%", ".95", "True", "0.85.1"]
    log.write_text("\n".join(stats_lines(1, u, 1)[0] for u in odd) + "\n")
    fast, slow = scan(log), scan(log, native=False)
    assert list(fast.engines) == list(slow.engines)
    assert [list(es.usage) for es in fast.engines.values()] == [list(es.usage) for es in slow.engines.values()]


def test_rule_hits_come_from_the_anchors_the_prefilter_found(tmp_path: Path) -> None:
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(stats_lines(20) + OOM + stats_lines(20)) + "\n")
    fast, slow = scan(log), scan(log, native=False)
    assert [(h.rule, h.line.lineno) for h in fast.hits] == [(h.rule, h.line.lineno) for h in slow.hits]
    assert any(h.rule.startswith("serving.") and h.line.lineno == 24 for h in fast.hits)
    assert [ln.lineno for ln in fast.unclaimed] == [ln.lineno for ln in slow.unclaimed]


@pytest.mark.parametrize("extra", [
    "\x1b[33m[2026-05-24 00:55:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 5\x1b[0m",
    "Capturing batches (bs=1): 50%|#####     |\r[2026-05-24 00:55:00 TP0] Decode out of memory. Try to lower your batch size",
    "(SGLangEngine pid=4100, ip=10.0.0.1) " + stats_lines(1, "0.99", 3)[0],
    "NUL\x00 bytes before: Segmentation fault (core dumped)",
])
def test_colour_codes_redraws_ray_prefixes_and_nuls_give_what_the_python_path_gives(tmp_path: Path, extra: str) -> None:
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(stats_lines(10) + [extra] + stats_lines(10)) + "\n")
    fast, slow = scan(log), scan(log, native=False)
    assert [(h.rule, h.line.lineno, h.line.text) for h in fast.hits] == \
           [(h.rule, h.line.lineno, h.line.text) for h in slow.hits]
    assert {k: es.total for k, es in fast.engines.items()} == {k: es.total for k, es in slow.engines.items()}


def test_a_large_coloured_log_stays_on_the_native_path_with_exact_counts(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    python_chunks = []
    monkeypatch.setattr(fastscan, "_python_chunk", lambda *a: python_chunks.append(a))
    log = tmp_path / "sglang-engine-0.log"
    lines = [f"\x1b[32m{ln}\x1b[0m" for ln in stats_lines(3000) + stats_lines(1, "1.00", 9)]
    log.write_text("\n".join(lines + ["\x1b[31mRuntimeError: CUDA error: out of memory\x1b[0m"]) + "\n")
    res = scan(log)
    (es,) = res.engines.values()
    assert python_chunks == []
    assert es.total == 3001 and [ln.lineno for ln, _, _ in es.pressure] == [3001]
    assert es.pressure[0][0].text.startswith("[2026-05-24") and "\x1b" not in es.pressure[0][0].text
    assert [(h.line.lineno, h.line.text) for h in res.hits] == [(3002, "RuntimeError: CUDA error: out of memory")]


def driver_log(engines: int, rows: int) -> list[str]:
    """One Ray driver log: the stats rows of `engines` engines (two DP groups each), interleaved."""
    out = []
    for i in range(rows):
        e = i % engines
        usage, queue = ("1.00", 3) if i % 997 == 0 else ("0.42", 0)
        if i % 3:  # decode rows of DP group 0 or 1
            row = DECODE.format(s=i % 60, u=usage, q=queue).replace(" TP0]", f" DP{i % 2} TP{i % 2}]")
        else:  # prefill rows: untagged
            row = PREFILL.format(s=i % 60, u=usage, q=queue)
        out.append(f"(SGLangEngine pid={4100 + e}, ip=10.0.0.{e}) {row}")
    return out


@pytest.mark.parametrize("engines", [3, 70])  # 70 engines x 2 DP groups: more origins than the C side keeps
def test_a_ray_driver_log_counts_every_engines_rows_on_the_native_path(tmp_path: Path, engines: int,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 300)
    python_chunks = []
    real = fastscan._python_chunk
    monkeypatch.setattr(fastscan, "_python_chunk", lambda *a: (python_chunks.append(1), real(*a)))
    log = tmp_path / "driver.log"
    log.write_text("\n".join(["[2026-05-24 00:50:00] ray driver starting"] + driver_log(engines, 20000)) + "\n")
    fast, slow = scan(log), scan(log, native=False)
    assert {k: es.total for k, es in fast.engines.items()} == {k: es.total for k, es in slow.engines.items()}
    assert sum(es.total for es in fast.engines.values()) == 20000
    assert ("driver.log pid=4101 DP1" in fast.engines) and ("driver.log pid=4100" in fast.engines)
    assert {k: [ln.lineno for ln, _, _ in es.pressure] for k, es in fast.engines.items()} == \
           {k: [ln.lineno for ln, _, _ in es.pressure] for k, es in slow.engines.items()}
    assert (python_chunks == []) == (engines == 3)


def test_a_single_dp_group_file_counts_its_rows_on_its_own_timeline(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(ln.replace(" TP0]", " DP0 TP0]") for ln in stats_lines(3000)
                             if " TP0]" in ln) + "\n")
    fast, slow = scan(log), scan(log, native=False)
    assert {k: es.total for k, es in fast.engines.items()} == {k: es.total for k, es in slow.engines.items()} \
        == {"sglang-engine-0.log DP0": 2000}


def test_line_counts_and_a_missing_final_newline(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("a\nb\nRuntimeError: CUDA error: out of memory")
    fast, slow = scan(log), scan(log, native=False)
    assert fast.file.lines == slow.file.lines == 3
    assert [h.line.lineno for h in fast.hits] == [h.line.lineno for h in slow.hits] == [3]


def test_a_line_longer_than_a_chunk_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 16)
    log = tmp_path / "train.log"
    log.write_bytes(b"x" * (1 << 18) + b" Segmentation fault\n" + b"Fatal Python error: Segmentation fault\n")
    res = scan(log)
    assert res.file.lines == 2
    assert [h.line.lineno for h in res.hits] == [2]
    assert res.errors == []


def pressure_log(n: int, seed: int = 3) -> list[str]:
    """Stats rows of one engine whose pool fills and drains: saturated runs (usage 0.95-1.00 with a queue), quiet
    stretches, full pools with nothing waiting, lone decodes, and now and then a line Python must read."""
    import random

    rng = random.Random(seed)
    out, high = [], False
    for i in range(n):
        if rng.random() < 0.03:
            high = not high
        s = i % 60
        if high:
            u, q = f"{rng.choice((0.95, 0.97, 0.99, 1.0)):.2f}", rng.choice((0, 3, 5, 12, 40))
        else:
            u, q = f"{rng.uniform(0.2, 0.89):.2f}", rng.choice((0, 0, 1))
        row = (DECODE if rng.random() < 0.8 else PREFILL).format(s=s, u=u, q=q)
        r = rng.random()
        if r < 0.01:
            row = row.replace("#running-req: 40", "#running-req: 1").replace(f"#queue-req: {q}", "#queue-req: 0")
        elif r < 0.015:
            row = row.replace(f"token usage: {u}", "token usage: 97%")  # odd value: Python reads it
        elif r < 0.02:
            out.append("[2026-05-24 00:53:00 TP0] Scheduler: request aborted, retrying")
        out.append(row)
    return out


def pressure_view(es):  # type: ignore[no-untyped-def]
    eps = es.pressure_episodes
    return {"total": es.total, "peak": es.peak_usage(), "queue": es.peak_queue(),
            "pressure": [(ln.lineno, ln.text, u, q) for ln, u, q in es.pressure],
            "last": (es.last_pressure[0].lineno, es.last_pressure[1:]) if es.last_pressure else None,
            "first": es.first_line.lineno if es.first_line else None,
            "totals": (eps.count, eps.total_rows, eps.total_seconds, eps.peak_usage, eps.peak_queue, eps.dropped),
            "episodes": [(e.first.lineno, e.last.lineno, e.peak.lineno if e.peak else None, e.rows, e.peak_usage,
                          e.peak_queue, e.peak_running, e.t0, e.t1) for e in eps.items]}


@pytest.mark.parametrize("seed", [3, 4])
def test_folded_pressure_rows_give_what_python_gives_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 seed: int) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)  # several chunks: runs cross chunk ends
    records = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (r := real(*a), records.extend(
        h for h in r[4] if h[0] in (fastscan.K_FOLD, fastscan.K_BATCH)))[0])
    log = tmp_path / "sglang-engine-0.log"
    lines = pressure_log(12000, seed)
    log.write_text("\n".join(lines) + "\n")
    fast, slow = scan(log), scan(log, native=False)
    (key,) = slow.engines
    assert list(fast.engines) == [key]
    assert pressure_view(fast.engines[key]) == pressure_view(slow.engines[key])
    eps = fast.engines[key].pressure_episodes
    assert eps.count > 50 and eps.total_rows > 1000  # the run really has pressure, in many episodes
    folded = sum(rec[4][1][3] if rec[0] == fastscan.K_FOLD else rec[4][1][1] for rec in records)
    assert folded > eps.total_rows // 2  # most of it folded in C, not read row by row
    assert [(h.rule, h.line.lineno) for h in fast.hits] == [(h.rule, h.line.lineno) for h in slow.hits]


def flipping_log(n: int, seed: int) -> list[str]:
    """Rows of one engine flipping in and out of pressure on their own (a pool hovering around 0.9): most episodes
    are one row, some a few rows over several seconds; now and then a line Python must read."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        pressed = rng.random() < (0.6 if i % 997 < 40 else 0.11)  # stretches where longer episodes form
        u, q = (f"{rng.uniform(0.9, 0.99):.2f}", rng.randrange(1, 30)) if pressed else \
            (f"{rng.uniform(0.2, 0.85):.2f}", rng.choice((0, 0, 1, 2)))
        row = (DECODE if rng.random() < 0.8 else PREFILL).format(s=(i // 7) % 60, u=u, q=q)
        out.append(row.replace("00:53:", f"{i // 420 % 24:02d}:{i // 7 // 60 % 60:02d}:", 1))
        if rng.random() < 0.002:
            out.append("[2026-05-24 00:53:00 TP0] Scheduler: request aborted, retrying")
    return out


@pytest.mark.parametrize(("seed", "keep"), [(5, 256), (6, 8)])
def test_many_short_pressure_episodes_reach_python_as_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              seed: int, keep: int) -> None:
    from triage.parsers import engine_stats

    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)
    monkeypatch.setattr(fastscan, "KEEP_EPISODES", keep)
    monkeypatch.setattr(engine_stats, "KEEP_EPISODES", keep)
    records = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (r := real(*a), records.extend(
        h for h in r[4] if h[0] in (fastscan.K_FOLD, fastscan.K_BATCH)))[0])
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(flipping_log(20000, seed)) + "\n")
    fast, slow = scan(log), scan(log, native=False)
    (key,) = slow.engines
    assert pressure_view(fast.engines[key]) == pressure_view(slow.engines[key])
    eps = fast.engines[key].pressure_episodes
    assert eps.count > 2000 and max(e.seconds for e in eps.items) > 0
    assert len(eps.items) <= keep + 3 and eps.dropped == eps.count - len(eps.items)
    assert len(records) < eps.count // 4  # a record per batch, not per episode
    sent = sum(len(rec[4][1][6]) for rec in records if rec[0] == fastscan.K_BATCH)
    assert sent < eps.count // 2  # episodes that cannot be among the longest are not handed over


def test_a_saturated_pool_keeps_bounded_rows_and_exact_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from triage.model import Line

    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    n = 30000
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(DECODE.format(s=i % 60, u=("0.97", "0.99", "1.00")[i % 3], q=5 + i % 30)
                             for i in range(n)) + "\n")
    (es,) = scan(log).engines.values()
    eps = es.pressure_episodes
    assert es.total == n and eps.total_rows == n and eps.count == 1 and eps.peak_queue == 34
    assert len(es) <= 60  # the timeline's sample, not every saturated row
    assert [ln.lineno for ln, _, _ in es.pressure] == list(range(1, 21)) and es.last_pressure[0].lineno == n
    assert (eps.items[0].first.lineno, eps.items[0].peak.lineno, eps.items[0].last.lineno) == (1, 30, n)  # 1.00 and 34 waiting
    assert sum(isinstance(o, Line) for o in gc.get_objects()) < 200


def test_a_folded_result_survives_the_trip_back_from_a_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers send their FileResult back pickled: rows the C prefilter folded (kept as RowRefs that make their
    Line on demand) must travel too, or a whole engine log is lost ("its result could not be sent back")."""
    import pickle

    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(pressure_log(12000, 3) + OOM) + "\n")
    res = scan(log)
    back = pickle.loads(pickle.dumps(res))
    (key,) = res.engines
    assert pressure_view(back.engines[key]) == pressure_view(res.engines[key])
    assert [(h.rule, h.line.lineno) for h in back.hits] == [(h.rule, h.line.lineno) for h in res.hits]
    assert any(h.rule == "serving.engine-cuda-oom" for h in back.hits)


def test_a_pressure_run_split_across_workers_loses_no_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through the real worker processes: every engine log read, the OOM found."""
    from triage.scan import parallel

    monkeypatch.setenv("TRIAGE_JOBS", "2")
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)
    monkeypatch.setattr(parallel, "BIG", 1 << 20)  # these 2 MB engine logs go to a worker
    for i in range(3):
        lines = pressure_log(12000, i) + (OOM if i == 1 else [])
        (tmp_path / f"sglang-engine-{i}.log").write_text("\n".join(lines) + "\n")
    report = analyze(Settings(paths=[str(tmp_path)]), LIB)
    assert [(f.rel, f.status) for f in report.files] == [(f"sglang-engine-{i}.log", "read") for i in range(3)]
    oom = next(f for f in report.findings if f.rule == "serving.engine-cuda-oom")
    assert oom.evidence[-1].file == "sglang-engine-1.log"


def storm_log(n: int, seed: int) -> list[str]:
    """A retraction storm of one engine: the same wording with changing numbers, stats rows between, now and then
    another wording, a line of another family, a gap longer than a family bridges, a Ray line and a repeat count."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = f"[2026-05-24 01:{i // 600 % 60:02d}:{i // 10 % 60:02d} TP{i % 2}] "
        r = rng.random()
        if r < 0.002:
            out.append(t + "Scheduler hit an exception: RuntimeError: CUDA error: an illegal memory access")
        elif r < 0.004:
            out.extend(DECODE.format(s=i % 60, u="0.50", q=0) for _ in range(80))  # a gap of 80 lines
        elif r < 0.005:
            out.append(f"(SGLangEngine pid={100 + i % 3}) {t}KV cache pool is full. Retract requests. "
                       f"#retracted_reqs: {rng.randrange(1, 9)}, #new_token_ratio: 0.3 -> 0.5")
        elif r < 0.006:
            out.append(f"{t}KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.3 -> 0.5 "
                       "[repeated 3x across cluster]")
        elif r < 0.01:
            out.append(f"{t}Decode out of memory happened. #retracted_reqs: {rng.randrange(1, 4)}")
        elif r < 0.75:
            a = rng.uniform(0.05, 0.5)
            out.append(f"{t}KV cache pool is full. Retract requests. #retracted_reqs: {rng.randrange(1, 40)}, "
                       f"#new_tokens_gained: {rng.randrange(100, 900)}, #new_token_ratio: {a:.4f} -> {a + 0.2:.4f}")
        else:
            out.append(DECODE.format(s=i % 60, u=f"{rng.uniform(0.2, 0.85):.2f}", q=rng.choice((0, 1))))
    return out


@pytest.mark.parametrize(("seed", "chunk"), [(1, 1 << 16), (2, 1 << 16), (3, 1 << 20)])
def test_a_retraction_storm_is_counted_in_c_as_python_counts_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 seed: int, chunk: int) -> None:
    from triage.checks.serving import retracted

    monkeypatch.setattr(fastscan, "CHUNK", chunk)  # many chunks: a family crosses chunk ends; or the first part alone
    counted = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (r := real(*a), counted.extend(
        h[4][0] for h in r[4] if h[0] == fastscan.K_FAMILY))[0])
    log = tmp_path / "sglang-engine-0.log"
    lines = storm_log(30000, seed)
    log.write_text("\n".join(lines) + "\n")
    fast, slow = scan(log), scan(log, native=False)

    def view(res):  # type: ignore[no-untyped-def]
        return ([(h.rule, h.line.lineno, h.line.until, h.line.repeat) for h in res.hits],
                [(e.line.lineno, e.fields.get("count"), e.fields.get("extra"), retracted(e)) for e in res.events
                 if e.kind == "retraction"])

    assert view(fast) == view(slow)
    storm = sum(1 for ln in lines if "Retract requests" in ln and not ln.startswith("(") and "repeated" not in ln)
    assert sum(counted) > storm * 0.8  # most of the storm counted in C, not handed over line by line
    total = sum(retracted(e) for e in slow.events if e.kind == "retraction")
    assert total == sum(int(ln.split("#retracted_reqs: ")[1].split(",")[0]) * (3 if "repeated 3x" in ln else 1)
                        for ln in lines if "#retracted_reqs: " in ln)


def test_small_files_share_one_matcher_and_read_into_buffers_their_size(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    compiled, sizes = [], []
    real_compile = native._linescan.compile
    monkeypatch.setattr(native._linescan, "compile", lambda spec: compiled.append(1) or real_compile(spec))
    monkeypatch.setattr(fastscan, "bytearray", lambda n: sizes.append(n) or bytearray(n), raising=False)
    scanner = Scanner(LIB)
    want = []
    for i in range(3):
        log = tmp_path / f"worker-{i}.log"
        log.write_text("step 1\n" * (10 + i) + "RuntimeError: CUDA error: out of memory\n")
        want.append(log.stat().st_size + 1 + fastscan.MAX_LINE + 1)
        files, _ = discover([str(log)])
        res = scanner.scan(files[0])
        assert [h.line.lineno for h in res.hits] == [11 + i]
    assert len(compiled) == 1
    assert sizes == want  # not a 4 MiB chunk each


# ---- several engines in one file: the C prefilter folds each origin's rows apart (_linescan.c, Origins, Fold) ----

def dp_rows(lines: list[str], rank: int) -> list[str]:
    """One DP-attention rank's lines: `[time DPr TPr]` on every row (SGLang tags each rank's own stats)."""
    import re

    return [re.sub(r" TP\d+\]", f" DP{rank} TP{rank}]", ln).replace("] Prefill", f" DP{rank} TP{rank}] Prefill")
            for ln in lines]


def interleave(streams: list[list[str]], seed: int) -> list[str]:
    """The streams' lines in one file, each stream in its own order, the streams mixed at random (ranks print
    their rows as they come)."""
    import random

    rng = random.Random(seed)
    at = [0] * len(streams)
    out = []
    while True:
        live = [i for i, s in enumerate(streams) if at[i] < len(s)]
        if not live:
            return out
        i = rng.choice(live)
        take = rng.randrange(1, 4)
        out.extend(streams[i][at[i]:at[i] + take])
        at[i] += take


def fold_records(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The fold and batch records the C side returns from now on (as it returns them: (origin, payload))."""
    records: list[tuple] = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (r := real(*a), records.extend(
        h for h in r[4] if h[0] in (fastscan.K_FOLD, fastscan.K_BATCH)))[0])
    return records


def python_chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A 1 for each chunk that goes through the line-for-line path from now on."""
    seen: list[int] = []
    real = fastscan._python_chunk
    monkeypatch.setattr(fastscan, "_python_chunk", lambda *a: (seen.append(1), real(*a)))
    return seen


def engines_view(res) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Every engine's pressure view. Of its first row only whether there is one: the native path keeps a sample of
    the quiet rows, and in a file of several engines the first of an engine's rows it samples need not be its first
    row (only its file is read from it)."""
    return {k: pressure_view(es) | {"first": es.first_line is not None} for k, es in res.engines.items()}


def both_paths_agree(log: Path) -> tuple[Any, Any]:
    """Scan on both paths; every engine's pressure view, row count and the rule hits must be the same."""
    fast, slow = scan(log), scan(log, native=False)
    assert sorted(fast.engines) == sorted(slow.engines)
    assert engines_view(fast) == engines_view(slow)
    assert [(h.rule, h.line.lineno) for h in fast.hits] == [(h.rule, h.line.lineno) for h in slow.hits]
    return fast, slow


def folded_rows(records: list[tuple]) -> Counter:
    """Pressed rows folded per origin (bytes), from the records."""
    rows: Counter = Counter()
    for kind, _, _, _, (origin, rec) in records:
        rows[origin] += rec[3] if kind == fastscan.K_FOLD else rec[1]
    return rows


@pytest.mark.parametrize(("ranks", "seed"), [(2, 7), (8, 8)])
def test_dp_attention_ranks_interleaved_fold_apart_and_give_what_python_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ranks: int, seed: int) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)  # runs cross chunk ends
    records, to_python = fold_records(monkeypatch), python_chunks(monkeypatch)
    per_rank = 16000 // ranks
    streams = []
    for r in range(ranks):  # saturating ranks, flipping ones, and a quiet one
        lines = (pressure_log(per_rank, seed + r) if r % 3 == 0 else flipping_log(per_rank, seed + r) if r % 3 == 1
                 else stats_lines(per_rank))
        streams.append(dp_rows(lines, r))
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(interleave(streams, seed) + OOM) + "\n")
    fast, _ = both_paths_agree(log)
    assert sorted(fast.engines) == sorted(f"sglang-engine-0.log DP{r}" for r in range(ranks))
    assert to_python == []  # every chunk stayed on the native path
    for r in range(ranks):  # each engine has its own episodes: none on the quiet ranks
        eps = fast.engines[f"sglang-engine-0.log DP{r}"].pressure_episodes
        assert (eps.count > 10) == (r % 3 != 2), r
    rows = folded_rows(records)
    assert {o for o, n in rows.items() if n} == {f"DP{r}".encode() for r in range(ranks) if r % 3 != 2}
    for r in range(ranks):  # most of each pressed rank's pressure rows folded in C
        if r % 3 != 2:
            assert rows[f"DP{r}".encode()] > fast.engines[f"sglang-engine-0.log DP{r}"].pressure_episodes.total_rows // 2
    assert any(h.rule == "serving.engine-cuda-oom" for h in fast.hits)


def test_dp_ranks_every_row_kept_give_the_same_timelines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log small enough to keep every row: each rank's timeline (rows, usage, queue, time) is the Python path's."""
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 16)
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(interleave([dp_rows(pressure_log(1500, 11), 0), dp_rows(flipping_log(1500, 12), 1)], 3))
                   + "\n")
    fast, slow = both_paths_agree(log)
    for key, es in slow.engines.items():
        mine = fast.engines[key]
        assert (list(mine.lineno), list(mine.usage), list(mine.queue), list(mine.time), mine.total) == \
               (list(es.lineno), list(es.usage), list(es.queue), list(es.time), es.total)


def test_a_ray_driver_log_folds_each_engines_pressure_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)
    records, to_python = fold_records(monkeypatch), python_chunks(monkeypatch)
    streams = []
    for e in range(3):  # two engines under pressure, one flipping
        lines = pressure_log(5000, 20 + e) if e < 2 else flipping_log(5000, 20 + e)
        streams.append([f"(SGLangEngine pid={4100 + e}, ip=10.0.0.{e + 1}) {ln}" for ln in lines])
    streams.append([f"(MegatronTrainRayActor pid=3900, ip=10.0.0.9) step {i}: loss 0.{i % 10}" for i in range(300)])
    log = tmp_path / "driver.log"
    log.write_text("\n".join(["[2026-05-24 00:50:00] ray driver starting"] + interleave(streams, 5)) + "\n")
    fast, _ = both_paths_agree(log)
    assert sorted(fast.engines) == [f"driver.log pid={4100 + e}" for e in range(3)]
    assert to_python == []
    rows = folded_rows(records)
    for e in range(3):
        eps = fast.engines[f"driver.log pid={4100 + e}"].pressure_episodes
        assert eps.count > 10 and rows[f"pid={4100 + e}".encode()] > eps.total_rows // 2


def test_a_second_origin_after_10_mb_stays_on_the_native_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in the bench's logs: 10 MB of one DP rank's rows, then an engine with no DP tag (a real case pasted in)
    under pressure, its rows among the rank's. The first chunk that holds both is scanned again per origin."""
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 200)
    records, to_python = fold_records(monkeypatch), python_chunks(monkeypatch)
    scans = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (scans.append(a[4]), real(*a))[1])
    head = dp_rows(pressure_log(60000, 30), 0)
    assert len("\n".join(head)) > 10 << 20
    tail = interleave([dp_rows(pressure_log(3000, 31), 0), pressure_log(600, 32)], 9)
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(head + tail) + "\n")
    fast, _ = both_paths_agree(log)
    assert sorted(fast.engines) == ["sglang-engine-0.log", "sglang-engine-0.log DP0"]
    assert to_python == []
    assert scans[:2] == [False, False] and scans[-1] is True  # per origin only once the second one shows up
    rows = folded_rows(records)
    assert rows[b""] > fast.engines["sglang-engine-0.log"].pressure_episodes.total_rows // 2


def test_more_origins_than_the_c_side_keeps_go_to_the_python_path(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    to_python = python_chunks(monkeypatch)
    streams = [dp_rows(pressure_log(150, 40 + r) if r % 2 else stats_lines(150), r) for r in range(70)]
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(interleave(streams, 11)) + "\n")
    fast, _ = both_paths_agree(log)
    assert len(fast.engines) == 70 and to_python != []


ROW_PREFIXES = [  # the line starts a stats row may have; what the C side reads as its origin must be Python's engine
    "[2026-05-24 00:50:00 DP3 TP3] ", "[2026-05-24 00:50:00 TP0] ", "[2026-05-24 00:50:00] ", "", "[17:15:07 TP0] ",
    "(SGLangEngine pid=4100, ip=10.0.0.1) [2026-05-24 00:50:00 DP1 TP1] ", "(SGLangEngine pid=4100) [2026-05-24] ",
    "(SGLangEngine) [2026-05-24 00:50:00 DP2 TP2] ", "(SGLangEngine pid=4100, ip=10.0.0.1)[2026-05-24 DP1 TP1] ",
    "(SGLangEngine pid=4100, ip=10.0.0.1)  [2026-05-24 DP1 TP1] ", "(A pid=1) (B pid=2) [2026-05-24 DP1 TP1] ",
    "(SGLang-Engine.v2:1 pid=0009, ip=fe80::1) [2026-05-24 00:50:00 DP4 TP4] ", "(_x pid=5, ip=1.2.3.4) [0m [t DP6] ",
    "worker-1  | [2026-05-24 00:50:00 DP0 TP0] ", "worker-1  | (SGLangEngine pid=7) [2026-05-24 DP0 TP0] ",
    "[36m(SGLangEngine pid=7, ip=1.2.3.4)[0m [2026-05-24 00:50:00 DP0 TP0] ", "[1;36m(SGLangEngine pid=8)[0m [t TP0] ",
    "[1;2;3;4;36m(A pid=9) [t DP1] ", "[1;2;3;4;5;36m(A pid=9) [t DP1] ", "[36m(bad prefix) [t DP1] ",
    "[2026-05-24 DP0x TP0] ", "(SGLangEngine pid=3) Engine 012: [t DP1] ", "Engine 12: [t DP2] ",
    "[2026-05-24 DPA TP0 DP2] ", "[2026-05-24 DP1 DP2] ", "[2026-05-24 00:50:00 EP0 DP12 TP0 EP0] ", "[t DP5]] ",
    "INFO Engine 000: [2026-05-24 DP0] ", "[2026-05-24 DP7 TP7 ", "(bad prefix) [2026-05-24 DP1] ", "(pid=3) ",
    "[2026-05-24 DP1\tTP1] ", "[2026-05-24 DP\u00e91 TP1] ", "x(y) [2026-05-24 DP1] ", "[2026-05-24 DP1 TP1](z) ",
]


@pytest.mark.parametrize("prefix", ROW_PREFIXES)
def test_the_origin_the_c_side_names_is_the_engine_python_files_the_row_under(tmp_path: Path, prefix: str) -> None:
    from triage.scan.prefiltered import origin_key, row_key

    quiet = prefix + DECODE.format(s=1, u="0.42", q=0).split("] ", 1)[1]
    high = prefix + DECODE.format(s=1, u="0.97", q=5).split("] ", 1)[1]
    log = tmp_path / "e.log"
    log.write_text(high + "\n")
    (python_key,) = scan(log, native=False).engines
    assert row_key("e.log", high.encode()) == python_key
    needles = Scanner(LIB).needles
    assert needles is not None
    for line in (quiet, high):  # a quiet row closes its engine's episode (a record), a high one is folded
        buf = (line + "\n").encode()
        for origins in (True, False):
            _, flags, quiet_rows, _, hits, per_origin = native._linescan.scan(needles.matcher(buf), buf, 1 << 40, 0,
                                                                              origins, ROW_GAP, 20, 256)
            kinds = [h[0] for h in hits]
            named = [h[4][0] for h in hits if h[0] == fastscan.K_FOLD] + [o for o, n in (per_origin or {}).items() if n]
            if kinds == [fastscan.K_CAND]:  # Python reads the row (and its engine) itself
                assert quiet_rows == 0 and not named
            elif flags & native.F_MANY:  # one origin assumed, and this is not one: scanned again per origin
                assert not origins and line is quiet
            else:
                assert quiet_rows == 1 and named and kinds == [fastscan.K_FOLD], (line, origins, hits)
                assert {origin_key("e.log", o) for o in named} == {python_key}, (line, origins, named)
    assert both_paths_agree(log)  # and the whole scan agrees


def test_rows_of_every_line_shape_mixed_fold_as_python_reads_them(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)
    streams = [[prefix + ln.split("] ", 1)[1] for ln in pressure_log(800, 50 + i)]
               for i, prefix in enumerate(ROW_PREFIXES)]
    log = tmp_path / "driver.log"
    log.write_text("\n".join(interleave(streams, 13)) + "\n")
    fast, _ = both_paths_agree(log)
    assert len(fast.engines) > 10


def test_flipping_ranks_hand_over_batches_bounded_by_each_engines_own_bar(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.parsers import engine_stats

    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)
    monkeypatch.setattr(fastscan, "KEEP_EPISODES", 8)
    monkeypatch.setattr(engine_stats, "KEEP_EPISODES", 8)
    records = fold_records(monkeypatch)
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(interleave([dp_rows(flipping_log(15000, 60 + r), r) for r in range(2)], 17)) + "\n")
    fast, _ = both_paths_agree(log)
    for r in range(2):
        eps = fast.engines[f"sglang-engine-0.log DP{r}"].pressure_episodes
        mine = [rec for kind, _, _, _, (origin, rec) in records if kind == fastscan.K_BATCH and origin == b"DP%d" % r]
        assert eps.count > 1000 and len(eps.items) <= 8 + 3
        assert sum(len(rec[6]) for rec in mine) < eps.count // 4  # past the bar of its own engine, few are sent


def test_a_storm_among_several_ranks_rows_is_still_counted_in_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four DP ranks, each with its own retraction storm among its saturated rows, interleaved: the per-origin fold
    keeps the chunks native, and the storm's lines are counted there as Python counts them."""
    from triage.checks.serving import retracted

    monkeypatch.setattr(fastscan, "CHUNK", 1 << 18)
    counted = []
    real = native._linescan.scan
    monkeypatch.setattr(native._linescan, "scan", lambda *a: (r := real(*a), counted.extend(
        h[4][0] for h in r[4] if h[0] == fastscan.K_FAMILY))[0])
    to_python = python_chunks(monkeypatch)
    streams = []
    for r in range(4):
        lines = [ln.replace("usage: 0.", "usage: 0.9") if "Decode batch" in ln else ln for ln in storm_log(4000, 70 + r)]
        streams.append(dp_rows(lines, r))
    lines = interleave(streams, 19)
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(lines) + "\n")
    fast, slow = both_paths_agree(log)
    assert to_python == []
    assert [(e.line.lineno, e.fields.get("count"), e.fields.get("extra"), retracted(e)) for e in fast.events
            if e.kind == "retraction"] == \
           [(e.line.lineno, e.fields.get("count"), e.fields.get("extra"), retracted(e)) for e in slow.events
            if e.kind == "retraction"]
    assert [(h.rule, h.line.lineno, h.line.until, h.line.repeat) for h in fast.hits] == \
           [(h.rule, h.line.lineno, h.line.until, h.line.repeat) for h in slow.hits]
    storm = sum(1 for ln in lines if "Retract requests" in ln and not ln.startswith("(") and "repeated" not in ln)
    assert sum(counted) > storm * 0.8
    assert sum(fast.engines[f"sglang-engine-0.log DP{r}"].pressure_episodes.total_rows for r in range(4)) > 1000


def test_rows_whose_prefixes_differ_only_near_the_stamp_fold_under_their_own_origin(tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The C side keeps the prefix of the last row it looked up (`[date time` digits aside) and skips reading a row
    of the same prefix again (_linescan.c, Prefix). Rows that share that prefix but for what decides the origin (a DP
    tag of the same length, a stamp with a letter in a digit's place, a colour code, vLLM's `Engine NNN:` after the
    marker) must still be read as Python reads them, on both the one-origin and the per-origin scans."""
    import random

    monkeypatch.setattr(fastscan, "SAMPLE_ALL_BELOW", 0)
    monkeypatch.setattr(fastscan, "TIMELINE_ROWS", 50)
    rng = random.Random(5)
    prefixes = ["[2026-05-24 00:50:{s:02d} DP1 TP1] ", "[2026-05-24 00:50:{s:02d} DP2 TP2] ",
                "[2026-05-24 00:5x:{s:02d} DP1 TP1] ", "[2026-05-24 00:50:{s:02d} DP1 TP1] ",
                "[2026-05-24 00:50:{s:02d} DP3 TP3] ", "(SGLangEngine pid=41, ip=10.0.0.1) [2026-05-24 00:50:{s:02d}] ",
                "(SGLangEngine pid=42, ip=10.0.0.1) [2026-05-24 00:50:{s:02d}] ",
                "(SGLangEngine pid=42, ip=10.0.0.1) [2026-05-24 00:50:{s:02d} DP1 TP1] "]
    vllm = "batch, Engine 012: 7, "  # prefix 3: DP1's, its rows naming a vLLM engine after the marker (a key: value)
    rows = [line.split("] ", 1)[1] for line in pressure_log(6000, 21)]
    lines = []
    for i, row in enumerate(rows):  # long runs of one prefix (the memo holds), then a switch
        k = (i // rng.randrange(5, 200)) % len(prefixes)
        lines.append(prefixes[k].format(s=i % 60) + (row.replace("batch, ", vllm, 1) if k == 3 else row))
    log = tmp_path / "sglang-engine-0.log"
    log.write_text("\n".join(lines) + "\n")
    fast, _ = both_paths_agree(log)
    assert len(fast.engines) >= 6, sorted(fast.engines)
    one = tmp_path / "one" / "sglang-engine-0.log"  # one engine but for a few rows: the one-origin scan first
    one.parent.mkdir()
    one.write_text("\n".join(prefixes[0].format(s=i % 60) + (row if i % 997 else row.replace("batch, ", vllm, 1))
                             for i, row in enumerate(rows)) + "\n")
    both_paths_agree(one)
