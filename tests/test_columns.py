"""Lines of repeated numeric shapes reach Python as columns (scan/columns.py, _linescan.c Columns): the result must be
what the line-for-line path gives, finding for finding and number for number."""

from __future__ import annotations

import gc
import itertools
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from triage.analyze import Settings, analyze
from triage.input.discover import discover
from triage.library.rules import load_library
from triage.model import Event
from triage.parsers import metrics
from triage.parsers.series_store import Later, Rows, column_stats
from triage.report import RenderOptions, render
from triage.scan import columns, native
from triage.scan import prefiltered as fastscan
from triage.scan import scanner as scanner_module
from triage.scan.scanner import Scanner

pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")

LIB = load_library()


def slime_log(steps: int, seed: int = 1, nan_at: int = -1, spike_at: int = -1, collapse_at: int = -1,
              new_key_at: int = -1, twice: bool = False, every: int = 1) -> list[str]:
    """A slime/MILES trainer log: Timer lines, Megatron iteration lines, step/perf/rollout dicts (of every
    `every`-th step)."""
    rng = random.Random(seed)
    out = []
    for s in range(0, steps * every, every):
        t = f"[2026-05-24 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}] "
        loss = rng.uniform(-0.05, 0.05) * (120 if s == spike_at else 1)
        grad = "nan" if s == nan_at else f"{rng.uniform(0.1, 0.9):.4f}"
        reward = rng.uniform(0.3, 0.9) if collapse_at < 0 or s < collapse_at else 0.0
        out += [t + "timer.py:24 - Timer train_wait start",
                t + f"timer.py:32 - Timer train_wait end (elapsed: {rng.uniform(0.5, 9):.1f}s)",
                t + "timer.py:24 - Timer actor_train start",
                f" {t}iteration {s + 1:8d}/ 1000000 | consumed samples: {256 * (s + 1):10d} | lm loss: "
                f"{rng.uniform(-0.05, 0.05):.6E} | grad norm: {rng.uniform(0.1, 0.9):.3f} |",
                t + f"timer.py:32 - Timer actor_train end (elapsed: {rng.uniform(40, 60):.1f}s)"]
        extra = f", 'train/kl_coef': {rng.uniform(0, 0.01):.5f}" if 0 <= new_key_at <= s else ""
        step = (t + f"log_utils.py:542 - step {s}: {{'train/loss': {loss:.6f}, 'train/pg_loss': {rng.uniform(-1, 1):.6f}, "
                f"'train/entropy_loss': {rng.uniform(0.2, 0.6):.4f}, 'train/grad_norm': {grad}, "
                f"'train/lr-pg_0': 1e-06{extra}, 'train/step': {s}}}")
        out.append(step)
        if twice:
            out.append(step)
        out += [t + f"train_metric_utils.py:61 - perf {s}: {{'perf/train_time': {rng.uniform(40, 60):.2f}, "
                f"'perf/step_time': {rng.uniform(90, 120):.2f}, 'perf/tokens_per_gpu_per_sec': "
                f"{rng.uniform(800, 1200):.1f}}}",
                t + f"metrics.py:88 - rollout {s}: {{'rollout/raw_reward': {reward:.4f}, 'rollout/response_len/mean': "
                f"{rng.uniform(800, 3000):.1f}, 'rollout/response_len/max': {rng.uniform(3000, 8192):.1f}, "
                f"'rollout/truncated': {rng.uniform(0, 0.05):.4f}, 'rollout/log_probs': {rng.uniform(-1.2, -0.2):.4f}}}"]
    return out


def verl_log(steps: int, seed: int = 2, nan_at: int = -1) -> list[str]:
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        grad = "nan" if s == nan_at else f"{rng.uniform(0.1, 0.9):.3f}"
        out.append(f"(TaskRunner pid=87031) step:{s} - actor/entropy:{rng.uniform(0.2, 0.6):.3f} - actor/pg_loss:"
                   f"{rng.uniform(-0.1, 0.1):.3f} - actor/grad_norm:{grad} - critic/score/mean:{rng.uniform(0, 1):.3f} - "
                   f"critic/rewards/mean:{rng.uniform(-1, 1):.3f} - response_length/mean:{rng.uniform(200, 900):.3f} - "
                   f"response_length/max:{rng.uniform(1000, 4096):.3f} - response_length/clip_ratio:"
                   f"{rng.uniform(0, 0.05):.3f} - timing_s/gen:{rng.uniform(20, 40):.3f} - timing_s/step:"
                   f"{rng.uniform(60, 90):.3f}")
    return out


def trl_log(steps: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [f"{{'loss': {rng.uniform(0, 0.1):.4f}, 'grad_norm': {rng.uniform(0.1, 3):.6f}, 'learning_rate': "
            f"{1e-6 * (1 - s / steps):.3e}, 'rewards/accuracy_reward/mean': {rng.uniform(0, 1):.4f}, 'reward': "
            f"{rng.uniform(0, 1):.4f}, 'epoch': {s / steps:.2f}}}" for s in range(steps)]


def report_json(run: Path, monkeypatch: pytest.MonkeyPatch, native: bool, lib: Any = LIB) -> dict:
    if native:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    return json.loads(render("json", analyze(Settings(paths=[str(run)]), lib), RenderOptions()))


def scan(path: Path, native: bool = True, lib: Any = LIB) -> Any:
    scanner = Scanner(lib)
    if not native:
        scanner.needles = None
    files, _ = discover([str(path)])
    return scanner.scan(files[0])


def summary(res: Any) -> dict[str, Any]:
    """Everything the file's metric and timer stores hold, and its hits, as plain data."""
    out: dict[str, Any] = {"hits": [(h.rule, h.line.lineno, h.line.text, h.numbers) for h in res.hits],
                           "unclaimed": [(ln.lineno, ln.text) for ln in res.unclaimed]}
    for ev in res.events:
        if ev.kind == "metric_series":
            st = ev.fields["store"]
            out["line"] = ev.line.lineno
            out["total"], out["threshold"], out["tags"], out["shapes"] = st.total, st.threshold, st.tags, st.shapes
            for name in ("sums", "canon", "fns"):
                out[name] = {k: (s.n, s.bad, s.nonzero, s.first, s.last, s.lo, s.hi, s.bad_first, s.bad_last,
                                 sorted(s.top)) for k, s in getattr(st, name).items()}
                out[name + " order"] = list(getattr(st, name))
            out["view"] = [(p, e.line.lineno, e.line.text, e.line.msg, e.line.actor, e.line.pid, e.fields)
                           for p, e in st.view()]
            out["pins"] = sorted((p, refs, ev.line.lineno) for p, (ev, refs) in st._pins.items())  # no order: a map
        elif ev.kind == "timer_series":
            out["timers"] = [(e.line.lineno, e.line.text, dict(e.fields), n) for e, n in ev.fields["timers"]]
            out["timer line"] = ev.line.lineno
        else:
            out.setdefault("events", []).append((ev.kind, ev.line.lineno, ev.line.text))
    return out


def counting_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows came as columns (one number per write-out)."""
    got: list[int] = []
    real = fastscan._rows

    def rows(fs: Any, offset: int, payload: Any, base: int, data: Any) -> bool:
        got.append(sum(p[1] for p in payload))
        return real(fs, offset, payload, base, data)

    monkeypatch.setattr(fastscan, "_rows", rows)
    return got


def same_both_ways(log: Path, monkeypatch: pytest.MonkeyPatch, lib: Any = LIB) -> tuple[dict[str, Any], int]:
    """The report and the stores are the same on the columns path and the line-for-line path; returns the report
    and the rows that came as columns."""
    rows = counting_rows(monkeypatch)
    fast = report_json(log.parent, monkeypatch, True, lib)
    assert fast == report_json(log.parent, monkeypatch, False, lib)
    got = sum(rows)
    rows.clear()
    fast_sum, slow_sum = summary(scan(log, lib=lib)), summary(scan(log, native=False, lib=lib))
    assert fast_sum.keys() == slow_sum.keys()
    for key in fast_sum:  # repr: NaN values compare as text
        assert repr(fast_sum[key]) == repr(slow_sum[key]), key
    return fast, got


def write(tmp_path: Path, lines: list[str], name: str = "train.log") -> Path:
    log = tmp_path / name
    log.write_text("\n".join(lines) + "\n")
    return log


def findings(report: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    return [(f["category"], f["rule"], [f"{e['file']}:{e['line']}" for e in f["evidence"]]) for f in report["findings"]]


def test_a_miles_trainer_log_gives_the_same_report_and_stores_with_its_records_as_columns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = slime_log(3000, nan_at=2100)
    log = write(tmp_path, lines)
    report, rows = same_both_ways(log, monkeypatch)
    assert rows > 0.95 * 3000 * 7  # the timer lines and the dicts, but for the first of each shape and the NaN line
    nan_line = next(i for i, t in enumerate(lines, 1) if "'train/grad_norm': nan" in t)
    assert any(f"train.log:{nan_line}" in ev for _, _, ev in findings(report))
    res = scan(log)
    store = next(ev.fields["store"] for ev in res.events if ev.kind == "metric_series")
    assert store.total == 3 * 3000 and store.thinned  # 9,000 records: a sample, exact summaries
    assert store.sums["train/grad_norm"].bad == 1 and store.sums["train/grad_norm"].bad_first[0] == 3 * 2100
    assert store.retained() < 4096 + 256 + 200


@pytest.mark.parametrize("case", ["spike", "collapse", "new key", "twice"])
def test_trainer_failures_and_changes_mid_run_give_the_same_findings_on_both_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    kwargs = {"spike": {"spike_at": 1500}, "collapse": {"collapse_at": 1200}, "new key": {"new_key_at": 900},
              "twice": {"twice": True}}[case]
    log = write(tmp_path, slime_log(2000, seed=7, **kwargs))
    report, rows = same_both_ways(log, monkeypatch)
    assert rows > 2000 * 4  # a new key set: its first chunk's lines come as lines
    summary_ = next(f for f in report["findings"] if f["rule"] == "health.summary")["numbers"]
    assert summary_["records"] == 3 * 2000
    if case == "collapse":
        assert summary_["reward_min"] == 0.0


@pytest.mark.parametrize("case", ["resumed", "every third step", "a late reprint"])
def test_steps_printed_again_are_dropped_alike_when_their_first_prints_came_as_columns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """Rows whose steps rise are kept as spans of steps (metrics.Records), not a key a row: a step printed again
    later (a run resumed from a checkpoint prints steps 0-999 again; a dict printed twice far apart) is still a
    duplicate, dropped as on the line-for-line path; steps with gaps between them are spans too."""
    seen_line = "[2026-05-24 00:30:00] Loading checkpoint shards: 100%| 4/4 [00:05<00:00,  1.30s/it]"  # a line
    # Python sees: the rows before it are written out first
    if case == "resumed":
        lines, records = slime_log(1500) + [seen_line] + slime_log(1000, seed=9), 3 * 1500
    elif case == "every third step":
        lines, records = slime_log(1500, every=3), 3 * 1500
    else:
        lines = slime_log(2000)
        at = next(i for i, t in enumerate(lines) if "log_utils.py:542 - step 500:" in t)
        end = next(i for i, t in enumerate(lines) if "log_utils.py:542 - step 1800:" in t)
        lines[end + 1:end + 1] = [seen_line, lines[at]]
        records = 3 * 2000
    held: list[Any] = []
    real = metrics.Records.close

    def close(self: Any) -> None:
        held.append((len(self.seen), self.span_rows))
        real(self)

    monkeypatch.setattr(metrics.Records, "close", close)
    log = write(tmp_path, lines)
    report, rows = same_both_ways(log, monkeypatch)
    assert rows > 0.8 * len(lines)  # 7 lines of 8 a step, but for the first of each shape
    summary_ = next(f for f in report["findings"] if f["rule"] == "health.summary")["numbers"]
    assert summary_["records"] == records
    seen, spans = held[0]  # the first: the report on the columns path
    assert spans > 0.8 * records
    if case == "every third step":
        assert seen < 0.1 * records


@pytest.mark.parametrize("two_shapes", [False, True])
def test_small_write_outs_passed_on_are_not_kept_alive(tmp_path: Path, two_shapes: bool) -> None:
    """A Ray driver log's trainer lines come a few at a time between other lines: many small write-outs. Once passed
    on to the store, nothing in Records may hold them (their columns): at most the store's last one stays. With two
    shapes of one tag taking turns (odd steps print one more key), a write-out's steps of that tag do not rise in each
    part, and their keys go into `seen` one by one, not as spans: the same holds."""
    lines = []
    for line in slime_log(1500):
        step = re.search(r"log_utils.py:542 - step (\d+):", line)
        if two_shapes and step and int(step.group(1)) % 2:
            line = line.replace("'train/step'", "'train/kl': 0.5, 'train/step'")
        lines.append(line)
        if re.search(r"rollout (\d*[258]):", line):  # write-outs of three or four steps
            lines.append("[2026-05-24 00:30:00] Loading checkpoint shards: 100%| 4/4 [00:05<00:00,  1.30s/it]")
    log = write(tmp_path, lines)
    alive: list[tuple[int, int]] = []
    real = metrics.Records.close

    def close(self: Any) -> None:
        rows = [o for o in gc.get_objects() if type(o) is Rows]
        alive.append((sum(r.passed for r in rows), len(rows)))
        real(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(metrics.Records, "close", close)
        res = scan(log)
    passed, made = alive[0]
    assert made > 20 and passed <= 1
    store = next(ev.fields["store"] for ev in res.events if ev.kind == "metric_series")
    assert store.total == 3 * 1500


def test_a_verl_log_with_ray_prefixes_and_a_nan_step_gives_the_same_findings_on_both_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = verl_log(4000, nan_at=3100)
    log = write(tmp_path, lines)
    report, rows = same_both_ways(log, monkeypatch)
    assert rows > 3700  # all but the first 64 KiB (read first, to learn the shapes) and the NaN line
    assert any("train.log:3100" in ev for _, _, ev in findings(report))


def test_trl_dicts_give_the_same_findings_on_both_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write(tmp_path, trl_log(6000))
    _, rows = same_both_ways(log, monkeypatch)
    assert rows > 5400  # all but the first 64 KiB


GRAD_RULE = """\
rules:
  - id: user.grad-blowup
    category: other
    severity: error
    title: Gradient norm blew up
    anchor: ["'train/grad_norm': "]
    match: "'train/grad_norm': (?P<g>[0-9.]+)"
    when: [{field: g, min: 0.85}]
    knobs: []
    explain: The gradient norm went over 0.85.
    examples:
      match: ["step 3: {'train/grad_norm': 0.9}"]
"""


def test_a_rule_that_judges_a_metric_line_sees_every_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What is tested is which lines the rule sees, not its time budget (test_cost has that): a loaded machine must
    # not switch the rule off halfway through the file.
    monkeypatch.setattr(scanner_module, "RULE_BUDGET", 1e9)
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "mine.yaml").write_text(GRAD_RULE)
    lib = load_library([folder])
    run = tmp_path / "run"
    run.mkdir()
    lines = slime_log(1500, seed=5)
    log = write(run, lines)
    report, rows = same_both_ways(log, monkeypatch, lib)
    assert rows > 1500 * 5  # the timers and the perf and rollout dicts still come as columns, the step dicts do not
    claimed = [h for h in scan(log, lib=lib).hits if h.rule == "user.grad-blowup"]
    expect = [i for i, t in enumerate(lines, 1) if "'train/grad_norm': 0.8" in t and float(
        t.split("'train/grad_norm': ")[1].split(",")[0]) >= 0.85 or "'train/grad_norm': 0.9" in t]
    assert [h.line.lineno for h in claimed] == expect


def test_context_lines_next_to_a_traceback_and_repeated_timer_lines_reach_python(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = slime_log(1200, seed=9)
    crash = ["Exception in thread worker-3:", lines[5], lines[6], lines[7],
             "Traceback (most recent call last):", '  File "/x/slime/train.py", line 12, in main',
             "    train()", "RuntimeError: CUDA error: an illegal memory access was encountered"]
    lines = lines[:8000] + [lines[8000]] * 3 + crash + lines[8000:]
    log = write(tmp_path, lines)
    _, rows = same_both_ways(log, monkeypatch)
    assert rows > 1200 * 5


def test_a_log_of_several_chunks_thins_its_sample_as_the_line_path_does(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    lines = slime_log(5000, seed=11, nan_at=4500)
    log = write(tmp_path, lines)
    assert log.stat().st_size > (4 << 20)
    _, rows = same_both_ways(log, monkeypatch)
    assert rows > 5000 * 6.9


def test_the_c_side_reads_a_shape_and_its_numbers_as_the_python_tokenizer_does() -> None:
    rng = random.Random(4)
    first = b"[2026-05-24 00:53:04] x.py:5 - step 3: {'a': 0.5, 'b_2': -1e-06, 'c': 12, 'd': v1.2} t=-3.25E+02 k-5"
    segs, toks = columns.template(first)
    assert toks == [b"2026", b"05", b"24", b"00", b"53", b"04", b"5", b"3", b"0.5", b"-1e-06", b"12", b"-3.25E+02",
                    b"5"]
    n = len(toks)
    spec = [(segs, bytes([columns.ALL] * n), bytes(range(n)), (), False, False)]
    armed = native._linescan.shapes(spec, ())
    pieces = ["0", "7", "-7", "7.25", "-0.0", "1e5", "1E-5", "2.5e+10", "12345678901234567890.5", "0.1", "1.", ".5",
              "nan", "-", "7e", "x", "1.2.3", "00012", "9" * 30]
    lines, expect = [], []
    for _ in range(3000):
        parts = [segs[0]]
        for j in range(n):
            parts += [rng.choice(pieces).encode() if rng.random() < 0.3 else toks[j], segs[j + 1]]
        line = b"".join(parts)
        lines.append(line)
        got_segs, got_toks = columns.template(line)
        whole_too_long = any(not any(c in t for c in b".eE") and len(t.lstrip(b"-").lstrip(b"0")) > 15 for t in got_toks)
        ok = got_segs == segs and len(line) <= columns.LINE_MAX and not whole_too_long  # a step is read exactly by int()
        expect.append([float(t) for t in got_toks] if ok else None)
    data = b"\n".join(lines) + b"\n"
    needles = native.Needles({"step "}, set())
    ids = (0,)
    assert columns.stable(segs, (b"step ",))  # so its lines are matched from their first needle on (cols_early)
    every: list[Any] = []
    assert scan_shape(needles, data, segs, ids, False) == scan_shape(needles, data, segs, ids, True)
    for scan_, stable in itertools.product((native._linescan.scan, native._linescan.scan_scalar), (False, True)):
        spec = [(segs, bytes([columns.ALL] * n), bytes(range(n)), ids, False, False, stable)]
        armed = native._linescan.shapes(spec, ())
        hits = scan_(needles.matcher(b""), data, 0, 0, False, 0, 0, 0, -1.0, -1, None, None, armed)[4]
        every.append(hits)
        rows: dict[int, list[float]] = {}
        for kind, _, _, _, payload in hits:
            if kind == native.K_COLS:
                for _, k, lns, _, _, _, vals, _ in payload:
                    li, vs = memoryview(lns).cast("q"), memoryview(vals).cast("d")
                    for i in range(k):
                        rows[li[i]] = [vs[j * k + i] for j in range(n)]
        got = [rows.get(i) for i in range(len(lines))]
        assert sum(e is not None for e in expect) > 100 and sum(e is None for e in expect) > 100
        assert [repr(g) for g in got] == [repr(e) for e in expect]
    assert all(hits == every[0] for hits in every)  # the same lines, rows and numbers, every loop and either way


def test_the_c_side_works_out_each_columns_statistics_as_the_store_does_in_python() -> None:
    """_linescan.c col_stats (values four at a time while none of them moves the lowest, the highest or a full heap
    of the TOP highest; each fraction divided when the column is written out) against series_store.column_stats, on
    columns of ties, constants, infinities (`1e400` overflows), signed zeros, rising steps and fewer than TOP values."""
    rng = random.Random(16)
    pools = [["0", "-0.0", "7", "7.0", "2.25", "-3"], ["1e400", "-1e400", "5", "0.125", "5"], ["0.5"], ["0"]]
    lines: list[bytes] = []
    for block in range(40):
        pool = pools[block % len(pools)]
        for _ in range(rng.choice([3, 15, 16, 17, 40, 300])):
            a = rng.choice(pool) if rng.random() < 0.7 else f"{rng.random() * 10:.{rng.randrange(1, 4)}f}"
            b = rng.choice(["1.5", "1.5", "2.5", "1e-06", "-1.5e+02", "0.0001"])
            step = len(lines) if block % 3 else rng.randrange(5)  # rising, or not
            lines.append(b"x step %d: {'a': %s, 'b': %s}" % (step, a.encode(), b.encode()))
    segs, toks = columns.template(lines[0])
    n = len(toks)
    needles = native.Needles({"step "}, set())
    values: dict[int, list[float]] = {}
    for li, line in enumerate(lines):
        got_segs, got_toks = columns.template(line)
        assert got_segs == segs
        values[li] = [float(t) for t in got_toks]
    data = b"\n".join(lines) + b"\n"
    checked = 0
    for size, at in ((w, at) for w in (1 << 11, len(data)) for at in range(0, len(data), w)):
        start = data.rfind(b"\n", 0, at) + 1 if at else 0
        end = data.rfind(b"\n", 0, at + size) + 1 if at + size < len(data) else len(data)
        if end <= start:
            continue
        spec = [(segs, bytes([columns.ALL] * n), bytes(range(n)), (0,), False, False, True)]
        hits = native._linescan.scan(needles.matcher(b""), data[start:end], 0, 0, False, 0, 0, 0, -1.0, -1, None,
                                     None, native._linescan.shapes(spec, ()))[4]
        base = data.count(b"\n", 0, start)
        for kind, _, _, _, payload in hits:
            if kind != native.K_COLS:
                continue
            for _, k, lns, _, _, _, vals, stats in payload:
                rows = [values[base + li] for li in memoryview(lns).cast("q")]
                col = memoryview(vals).cast("d")
                for j in range(n):
                    want = [r[j] for r in rows]
                    assert [repr(v) for v in col[j * k:(j + 1) * k]] == [repr(v) for v in want]
                    assert stats[j][:7] == column_stats(want)[:7]
                    rising = all(0 <= v < 2 ** 53 and v == int(v) for v in want) and all(
                        x < y for x, y in zip(want, want[1:]))
                    assert stats[j][7] == rising
                    checked += 1
    assert checked > 100  # a write-out per 2 KiB of lines, and one of them all


def scan_shape(needles: Any, data: bytes, segs: tuple[bytes, ...], ids: tuple[int, ...], stable: bool) -> list[Any]:
    """The hits of `data` with one registered shape, with each loop of the C side."""
    spec = [(segs, bytes([columns.ALL] * (len(segs) - 1)), bytes(range(len(segs) - 1)), ids, False, False, stable)]
    armed = native._linescan.shapes(spec, ())
    return [scan_(needles.matcher(b""), data, 0, 0, False, 0, 0, 0, -1.0, -1, None, None, armed)[4]
            for scan_ in (native._linescan.scan, native._linescan.scan_scalar)]


@pytest.mark.parametrize(("pre", "text"), [(b"", b"Xabz"), (b"", b"Xab abz"), (b"", b"abzXab"), (b"abqr ", b"")])
def test_a_line_matched_from_its_first_needle_holds_the_needles_a_whole_scan_finds_in_their_order(
        pre: bytes, text: bytes) -> None:
    """cols_early: a line of a stable shape gets its shape's needles without its rest being visited. Two needles whose
    pairs are one byte apart ("Xab" and "abz" in "Xabz") are found in one visit or two, in either order, as the line
    falls in the buffer: such a shape is matched the whole way, so every line gets what a whole scan gives. Two
    needles found at one pair ("abq" and "abqr") are one visit: the first makes the line's needles, the second is not
    added again."""
    rng = random.Random(8)
    lines = [b"[2026-05-24 00:53:04] x.py:5 - " + pre + b"step %d: " % s + text + b" {'a': %s}" % rng.choice([b"1.5", b"-2", b"9" * 30])
             + b" " * rng.randrange(2) for s in range(3000)]
    data = b"\n".join(lines) + b"\n"
    needles = native.Needles({"Xab", "abz", "abq", "abqr", "step "}, set())  # "Xab" sorts first: chained last
    first = native._linescan.scan(needles.matcher(b""), lines[0] + b"\n", 0, 0, False, 0, 0, 0, -1.0, -1, None, None,
                                  None)[4]
    segs, ids = columns.template(lines[0])[0], first[0][4]
    assert columns.stable(segs, tuple(n for n, _ in needles.items if len(n) > 1))
    whole, early = scan_shape(needles, data, segs, ids, False), scan_shape(needles, data, segs, ids, True)
    assert early == whole
    assert sum(len(h) for h in whole[0] if h[0] == native.K_COLS) > 0 and sum(h[0] == 0 for h in whole[0]) > 100


def test_a_shape_is_stable_only_when_no_needle_can_occur_across_its_numbers() -> None:
    """columns.stable: the proof that lets the C side skip the rest of a matched line's needles."""
    line = b"[2026-05-24 00:53:04] timer.py:32 - Timer train_wait end (elapsed: 6.7s) exit code 3"
    segs, _ = columns.template(line)
    assert columns.stable(segs, (b"Timer ", b"elapsed", b"exit code"))
    assert not columns.stable(segs, (b"code 1",))  # "exit code 1" spells it: the 3 varies
    assert columns.stable(segs, (b"s) exit",))  # in the literal text only: in every line of the shape
    assert not columns.stable(segs, (b"(elapsed: 1",))  # the text before a token and the token's start
    assert not columns.stable(segs, (b"7s",))  # a token's last byte and the text after it
    assert not columns.stable(segs, (b"2.5e",))  # all token bytes: inside one
    assert not columns.stable(segs, (b"04] timer",))  # the end of a token, two segments away
    assert not columns.stable(segs, (b"s) exit code 1",))  # a segment, then the start of the next token
    assert columns.stable(segs, (b"s) exit code x",))  # cannot: a token follows "s) exit code "
    assert columns.stable(segs, (b"0 timer",))  # cannot: "] " stands between a token and "timer"


def test_a_verl_step_line_of_many_keys_comes_as_columns_with_the_same_findings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = (  # a verl step line of corpus 040's shape: many keys, more needle occurrences than 32
[f"global_seqlen/{k}" for k in ("min", "max", "mean")] + [f"actor/{k}" for k in (
        "kl_loss", "kl_coef", "entropy_loss", "pg_loss", "pg_clipfrac", "ppo_kl", "grad_norm", "lr")]
        + [f"critic/{a}/{b}" for a in ("score", "rewards", "advantages", "returns") for b in ("mean", "max", "min")]
        + [f"response_length/{k}" for k in ("mean", "max", "min", "clip_ratio")]
        + [f"prompt_length/{k}" for k in ("mean", "max", "min", "clip_ratio")]
        + [f"timing_s/{k}" for k in ("gen", "old_log_prob", "ref", "adv", "update_actor", "testing", "step")])
    rng = random.Random(6)
    lines = [f"(main_task pid=51520) step:{s} - " + " - ".join(
        f"{k}:{1024.0 if k == 'response_length/max' else rng.uniform(-1, 900):.3f}" for k in keys)
        for s in range(1, 2501)]
    log = write(tmp_path, lines)
    report, rows = same_both_ways(log, monkeypatch)
    assert rows > 2300
    assert any(f["category"] == "generation-tail" for f in report["findings"])


def test_a_result_with_rows_survives_the_trip_back_from_a_worker(tmp_path: Path) -> None:
    import pickle

    log = write(tmp_path, slime_log(1500, seed=13, nan_at=1400))
    res = scan(log)
    back = pickle.loads(pickle.dumps(res))
    assert repr(summary(back)) == repr(summary(res)) == repr(summary(scan(log, native=False)))


def test_two_stages_learn_the_shapes_in_the_reading_process_and_give_the_same_stores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.scan import parallel

    log = write(tmp_path, slime_log(2500, seed=17, nan_at=2000))
    scanner = Scanner(LIB)
    files, _ = discover([str(log)])
    rows = counting_rows(monkeypatch)
    staged = parallel._staged_scan(scanner, files[0])  # a forked worker reads and prefilters, this process parses
    assert sum(rows) > 2500 * 6.5
    assert repr(summary(staged)) == repr(summary(scan(log, native=False)))


def test_shapes_learnt_in_one_file_serve_the_next_and_small_files_share_theirs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of several trainer logs (one per rank) repeats the same shapes in every file: the renderings are tried
    once per run (Scanner.shape_cache) and a later file's first line is only checked against the mapping. The report
    stays the one of the line-for-line path, with a NaN step in the second file. Files under COLUMNS_FROM share one
    registry (their lines come before a file's own could know any shape); its shapes are tried like any other (the
    small file's short numbers are other token classes: one shape more)."""
    write(tmp_path, slime_log(1500, seed=4), "train-rank-0.log")
    lines = slime_log(1500, seed=5, nan_at=700)
    write(tmp_path, lines, "train-rank-1.log")
    write(tmp_path, slime_log(5, seed=6), "train-rank-2.log")
    tried: list[int] = []
    real = columns.Shapes._consider

    def consider(self: Any, *args: Any) -> Any:
        tried.append(1)
        return real(self, *args)

    monkeypatch.setattr(columns.Shapes, "_consider", consider)
    rows = counting_rows(monkeypatch)
    fast = report_json(tmp_path, monkeypatch, True)
    assert fast == report_json(tmp_path, monkeypatch, False)
    assert sum(rows) > 0.9 * 2 * 1500 * 7  # both big files' rows came as columns
    assert 0 < len(tried) <= 9  # 8 shapes (4 timer lines, the iteration line, 3 dicts), each once in the run
    nan_line = next(i for i, t in enumerate(lines, 1) if "'train/grad_norm': nan" in t)
    assert any(f"train-rank-1.log:{nan_line}" in ev for _, _, ev in findings(fast))
    small = discover([str(tmp_path / "train-rank-2.log")])[0][0]
    big = discover([str(tmp_path / "train-rank-0.log")])[0][0]
    scanner = Scanner(LIB)
    shared = fastscan.shapes_for(scanner, small)
    assert small.size < fastscan.COLUMNS_FROM and shared is not None and shared.shared
    assert fastscan.shapes_for(scanner, small) is shared and fastscan.shapes_for(scanner, big) is not shared


def test_the_runs_store_takes_rows_in_bulk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a run (analyze), this process's files put their records into one run-level store (scan/series.py); rows of
    registered shapes must go into it whole (MetricStore.add_rows), not as one event each: that is the whole gain of
    the columns (a 73 MB trainer log: 2.9 s with an event a record, 0.5 s in bulk)."""
    write(tmp_path, slime_log(3000, seed=7, nan_at=2500))
    from triage.parsers.series_store import MetricStore

    singles: list[int] = []
    real_add = MetricStore.add

    def add(self: Any, ev: Any) -> None:
        singles.append(1)
        real_add(self, ev)

    monkeypatch.setattr(MetricStore, "add", add)
    rows = counting_rows(monkeypatch)
    fast = report_json(tmp_path, monkeypatch, True)
    assert sum(rows) > 0.95 * 3000 * 7
    assert len(singles) < 0.05 * 3 * 3000  # the first line of each shape, the NaN record and the like
    singles.clear()
    assert fast == report_json(tmp_path, monkeypatch, False)


def test_the_share_of_the_longest_response_is_worked_out_by_the_c_side_as_the_store_does_row_by_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(17)
    lines = []
    for s in range(1, 4001):
        longest = 0.0 if s % 7 == 0 else -1.0 if s % 11 == 0 else rng.uniform(1000, 4096)  # rows without a share
        lines.append(f"(TaskRunner pid=87031) step:{s} - actor/entropy:{rng.uniform(0.2, 0.6):.3f} - "
                     f"response_length/mean:{rng.uniform(200, 900):.3f} - response_length/max:{longest:.3f} - "
                     f"timing_s/step:{rng.uniform(60, 90):.3f}")
    log = write(tmp_path, lines)
    shares: list[tuple[int, int]] = []  # (rows, shares) of each write-out the C side worked the share out in
    real = fastscan._rows

    def rows(fs: Any, offset: int, payload: Any, base: int, data: Any) -> bool:
        for k, n, *_, stats in payload:
            if len(stats) > fs.shapes[k].rows.nout:
                share_b, rows_b, _ = stats[-1]
                shares.append((n, len(share_b) // 8))
                assert (len(rows_b) if rows_b is not None else n * 8) == len(share_b)  # the rows they are of
        return real(fs, offset, payload, base, data)

    monkeypatch.setattr(fastscan, "_rows", rows)
    res = scan(log)
    assert sum(n for n, _ in shares) > 3400
    kept = sum(m for _, m in shares)
    assert 0 < kept < sum(n for n, _ in shares)
    st = next(ev.fields["store"] for ev in res.events if ev.kind == "metric_series")
    assert st.canon["response_length/share_of_max"].n == 4000 - len([s for s in range(1, 4001) if s % 7 == 0 or s % 11 == 0])
    monkeypatch.undo()
    same_both_ways(log, monkeypatch)


def test_sampled_rows_are_made_records_only_when_read_so_those_thinned_away_never_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write(tmp_path, slime_log(12000, seed=19))
    counts = {"sampled": 0, "made": 0}
    real_init, real_make = Later.__init__, Later.make

    def init(self: Later, part: Any, i: int) -> None:
        counts["sampled"] += 1
        real_init(self, part, i)

    def make(self: Later) -> Event:
        counts["made"] += 1
        return real_make(self)

    monkeypatch.setattr(Later, "__init__", init)
    monkeypatch.setattr(Later, "make", make)
    store = next(ev.fields["store"] for ev in scan(log).events if ev.kind == "metric_series")
    assert store.total == 36000 and store.thinned
    waiting = {p for p, (_, ev) in store._sample.items() if isinstance(ev, Later)}
    assert waiting and counts["made"] == 0
    assert len(waiting) < counts["sampled"]  # sampled once, thinned away since: never made
    view = dict(store.view())
    assert counts["made"] == len(waiting) and not any(isinstance(ev, Later) for _, ev in store._sample.values())
    assert all(type(view[p]) is Event and view[p].line.lineno > 0 and type(view[p].fields["step"]) is int
               and view[p].fields["values"] for p in waiting)


def test_timer_readings_are_counted_by_the_c_side_as_the_store_counts_them_line_by_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(23)
    lines = []
    for s in range(6000):
        t = f"[2026-05-24 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}] "
        wait = rng.choice(["0.0", "0.1", "2.5", "10.0", "7.0", "007.0"])  # 7.0 twice: equal as numbers, written apart
        lines += [t + "timer.py:24 - Timer train_wait start",
                  t + f"timer.py:32 - Timer train_wait end (elapsed: {wait}s)",
                  t + f"timer.py:32 - Timer actor_train end (elapsed: {rng.uniform(40, 41):.1f}s)",
                  t + f"log_utils.py:542 - step {s}: {{'train/loss': {rng.uniform(-0.05, 0.05):.6f}, 'train/step': {s}}}"]
    log = write(tmp_path, lines)
    tallies: list[int] = []  # distinct readings of each timer part the C side counted
    real = fastscan._rows

    def rows(fs: Any, offset: int, payload: Any, base: int, data: Any) -> bool:
        for k, n, *_, stats in payload:
            shape = fs.shapes[k]
            if shape.ctx and len(stats) > shape.rows.nout:
                values_b, counts_b, firsts_b = stats[-1]
                assert len(values_b) == len(counts_b) == len(firsts_b)
                assert sum(memoryview(counts_b).cast("q")) == n
                tallies.append(len(values_b) // 8)
        return real(fs, offset, payload, base, data)

    monkeypatch.setattr(fastscan, "_rows", rows)
    res = scan(log)
    assert tallies and max(tallies) <= 11
    timers = next(ev.fields["timers"] for ev in res.events if ev.kind == "timer_series")
    waits = {ev.fields.get("seconds"): n for ev, n in timers if ev.fields.get("name") == "train_wait"
             and ev.fields.get("seconds") is not None}
    assert set(waits) <= {0.0, 0.1, 2.5, 10.0, 7.0} and sum(waits.values()) == 6000
    monkeypatch.undo()
    same_both_ways(log, monkeypatch)


def test_lines_taken_whole_after_a_matched_one_give_what_the_needle_search_gives() -> None:
    """cols_run: once a line of a stable shape is matched, the lines after it are matched against the shapes first and
    become rows without the needle search while they are of a shape whose needles are all candidate needles of its
    literal text (cols_whole). The hits must be those of the search line by line (the shapes not marked stable), on
    every loop, wherever the lines fall in the buffer: lines of no shape, of a shape whose text holds a usage value
    (not taken whole), refused rows (NaN, a whole number too long), repeated context lines, a traceback after rows."""
    rng = random.Random(31)
    needles = native.Needles({"step ", "Timer ", "Traceback", "perf/", "ERROR"}, set())
    anchor = {a: i for i, a in enumerate(needles.anchor_of) if a is not None}
    usage = len(needles.anchor_of) - 4  # b"usage: " (K_USAGE), before the three single bytes
    assert needles.items[usage][0] == b"usage: "
    shapes = [  # (a first line, its needles in the order a scan finds them, ctx)
        (b"[2026-05-24 00:53:04] x.py:5 - step 3: {'a': 0.5, 'b': -1e-06}", (anchor["step "],), False),
        (b"[2026-05-24 00:53:04] t.py:32 - Timer w end (elapsed: 6.7s)", (anchor["Timer "],), True),
        (b"[2026-05-24 00:53:04] m.py:8 - perf 3: {'perf/t': 4.25, 'perf/u': 7}", (anchor["perf/"],) * 2, False),
        (b"[2026-05-24 00:53:04] s.py:1 - step 4 usage: 0.95 perf/x 2", (anchor["step "], usage, anchor["perf/"]),
         False),
    ]
    lines = []
    for s in range(4000):
        t = b"[2026-05-24 %02d:%02d:%02d] " % (s // 3600 % 24, s // 60 % 60, s % 60)
        v = rng.choice([b"0.5", b"-2", b"nan", b"9" * 20, b"1e5", b"12.75"])
        pick = rng.random()
        if pick < 0.3:
            lines.append(t + b"x.py:5 - step %d: {'a': %s, 'b': %s}" % (s, v, rng.choice([b"-1e-06", b"3"])))
        elif pick < 0.5:
            line = t + b"t.py:32 - Timer w end (elapsed: %s)" % rng.choice([b"6.7s", b"6.7s", b"10.0s"])
            lines += [line] * rng.choice([1, 1, 2])  # a context line again: Python folds it into the first
        elif pick < 0.65:
            lines.append(t + b"m.py:8 - perf %d: {'perf/t': %s, 'perf/u': 7}" % (s, v))
        elif pick < 0.72:
            lines.append(t + b"s.py:1 - step %d usage: 0.%d perf/x 2" % (s, rng.randrange(100)))
        elif pick < 0.85:
            lines.append(b" " + t + b"iteration %8d/ 1000 | lm loss: %s |" % (s, v))  # no needle
        elif pick < 0.9:
            lines.append(t + b"ERROR step %d failed" % s)  # a needle, no shape
        elif pick < 0.92:
            lines += [b"Traceback (most recent call last):", b'  File "x.py", line 3, in f', b"ValueError: x"]
        else:
            lines.append(t + b"x.py:5 - step %d: {'a': %s, 'b': 1}" % (s, v) + b" " * rng.randrange(1, 3))
    data = b"\n".join(lines) + b"\n"
    back = (anchor["Traceback"],)
    ls = native._linescan
    default = ls.SIMD
    every: dict[tuple[bytes, int], list[Any]] = {}  # (padding, buffer size) -> the hits of each loop, either way
    try:
        for path in ("",) + tuple(getattr(ls, "PATHS", ())):
            ls.set_simd(path)
            for pad in (b"", b"\n", b"\n\n\n"):  # the lines at odd and even offsets
                for stable in (False, True):
                    spec = []
                    for first, ids, ctx in shapes:
                        segs, toks = columns.template(first)
                        n = len(toks)
                        spec.append((segs, bytes([columns.ALL] * n), bytes(range(n)), ids, not ctx, ctx, stable))
                    armed = ls.shapes(spec, back)
                    for size in (len(data), 1 << 16):  # one buffer, and buffers of whole lines (the last without its
                        got, at = [], 0  # newline in the second case's final piece)
                        buf = pad + data
                        while at < len(buf):
                            end = buf.rfind(b"\n", at, at + size) + 1 if at + size < len(buf) else len(buf)
                            got.append(ls.scan(needles.matcher(b""), buf[at:end], 0, 0, False, 0, 0, 0, -1.0, -1,
                                               None, None, armed)[:5])
                            at = end
                        every.setdefault((pad, size), []).append(got)
    finally:
        ls.set_simd(default)
    for runs in every.values():
        assert len(runs) >= 4 and all(hits == runs[0] for hits in runs)
    one = every[(b"", len(data))][0]
    rows = sum(p[1] for chunk in one for h in chunk[4] if h[0] == native.K_COLS for p in h[4])
    assert rows > 1500 and sum(h[0] == 0 for chunk in one for h in chunk[4]) > 1000


def few_at_a_time(lines: list[str], every: int) -> list[str]:
    """lines with another process's line after every `every`-th of them: the C side writes its rows out before each,
    so the rows come in write-outs of a few (a Ray driver log's trainer lines between the engines' lines)."""
    out = []
    for i, line in enumerate(lines, 1):
        out.append(line)
        if i % every == 0:
            out.append("(SGLangEngine pid=4100) [2026-05-24 00:50:04] Loading checkpoint shards: 100%| 4/4 [00:05<00:00]")
    return out


@pytest.mark.parametrize("case", ["slime, a NaN and a spike", "two shapes of one tag", "verl, shares of the longest"])
def test_small_write_outs_are_joined_into_one_bulk_add_with_the_stores_of_the_line_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """Rows of small write-outs passed on one after another are joined (series_store.Joiner: each shape's parts one
    part, its columns' statistics joined) and go to the store in bulk; the stores (summaries, pins, sample, view) and
    the report are those of the line-for-line path."""
    if case.startswith("verl"):
        rng = random.Random(5)
        lines = [f"(TaskRunner pid=87031) step:{s} - actor/entropy:{rng.uniform(0.2, 0.6):.3f} - response_length/mean:"
                 f"{rng.uniform(200, 900):.3f} - response_length/max:"
                 f"{0.0 if s % 7 == 0 else rng.uniform(1000, 4096):.3f} - timing_s/step:{rng.uniform(60, 90):.3f}"
                 for s in range(1, 2501)]
    else:
        lines = slime_log(900, seed=11, nan_at=700, spike_at=300)
        if case.startswith("two"):
            lines = [line.replace("'train/step'", "'train/kl': 0.5, 'train/step'")
                     if (m := re.search(r" - step (\d+):", line)) and int(m.group(1)) % 2 else line for line in lines]
    log = write(tmp_path, few_at_a_time(lines, 9))
    from triage.parsers.series_store import MetricStore
    bulk: list[int] = []
    real = MetricStore.add_rows

    def add_rows(self: Any, rows: Any) -> None:
        bulk.append(rows.n)
        real(self, rows)

    monkeypatch.setattr(MetricStore, "add_rows", add_rows)
    writes = counting_rows(monkeypatch)
    res = scan(log)
    total = next(ev.fields["store"] for ev in res.events if ev.kind == "metric_series").total
    assert len(writes) > total / 12 and max(writes) <= 10  # write-outs of a few rows
    assert max(bulk) >= metrics.BULK_MIN and sum(bulk) > 0.75 * total  # joined: the rows in bulk (not the first lines)
    same_both_ways(log, monkeypatch)
