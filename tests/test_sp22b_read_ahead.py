"""A big file of rows is read a chunk ahead by a thread (prefiltered._Ahead) while this process scans the chunk before:
the chunks are the same bytes, so the report is the one the sequential reads give, on every output format; a read
that fails, or a file cut while it is read, ends the file as it did; nothing is left running."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.library.rules import load_library
from triage.report import RenderOptions, render
from triage.scan import native
from triage.scan import prefiltered as fastscan

LIB = load_library()
pytestmark = pytest.mark.skipif(not native.available(), reason="the C prefilter is not built")

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 3.12 GiB is free.")


def trainer_log(steps: int, oom_at: int | None = None) -> str:
    """slime/Megatron-shaped records: timer lines, an iteration line, the step / perf / rollout metric dicts."""
    out = []
    for i in range(steps):
        t = f"[2026-05-24 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}]"
        out += [f"{t} timer.py:24 - Timer train_wait start",
                f"{t} timer.py:32 - Timer train_wait end (elapsed: {6 + i % 7 * 0.3:.1f}s)",
                f" {t} iteration {i + 1:8d}/ 1000000 | consumed samples: {256 * (i + 1):10d} | lm loss: "
                f"{-0.02794 + i % 13 * 1e-4:.6E} | grad norm: {0.3 + i % 11 * 0.01:.3f} |",
                f"{t} log_utils.py:542 - step {i}: {{'train/loss': {0.05 + i % 17 * 1e-3:.6f}, "
                f"'train/grad_norm': {0.4 + i % 5 * 0.01:.4f}, 'train/step': {i}}}",
                f"{t} train_metric_utils.py:61 - perf {i}: {{'perf/train_time': {40 + i % 9:.2f}, "
                f"'perf/step_time': {90 + i % 23:.2f}}}",
                f"{t} metrics.py:88 - rollout {i}: {{'rollout/raw_reward': {0.5 + i % 19 * 0.01:.4f}, "
                f"'rollout/response_lengths': {2000 + i % 400:.1f}, 'rollout/truncated': {i % 7 * 0.001:.4f}}}"]
        if i == oom_at:
            out.append(OOM)
    return "\n".join(out) + "\n"


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 64 KiB, then 256 KiB once rows are registered, a file of 1 MiB read ahead: many reads ahead in a
    small file."""
    monkeypatch.setattr(fastscan, "CHUNK", 64 << 10)
    monkeypatch.setattr(fastscan, "rows_chunk", 256 << 10)
    monkeypatch.setattr(fastscan, "AHEAD_FROM", 1 << 20)
    monkeypatch.setenv("TRIAGE_JOBS", "1")


def reports(run: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], int]:
    """The report in each format, and the reads done ahead."""
    taken = [0]
    take = fastscan._Ahead.take

    def counted(self: fastscan._Ahead) -> int:
        taken[0] += 1
        return take(self)

    monkeypatch.setattr(fastscan._Ahead, "take", counted)
    rep = analyze(Settings(paths=[str(run)]), LIB)
    return {f: render(f, rep, RenderOptions()) for f in ("json", "text", "markdown")}, taken[0]


def test_reads_ahead_give_the_report_of_sequential_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          small_chunks: None) -> None:
    (tmp_path / "train.log").write_text(trainer_log(6000, oom_at=5100))
    ahead, taken = reports(tmp_path, monkeypatch)
    assert taken >= 5  # the file was read ahead, chunk after chunk
    monkeypatch.setattr(fastscan, "AHEAD_FROM", 1 << 40)
    plain, none = reports(tmp_path, monkeypatch)
    assert none == 0
    assert ahead == plain
    rep = json.loads(ahead["json"])
    assert any(f["rule"] == "trainer.cuda-oom" for f in rep["findings"])
    assert not [t for t in threading.enumerate() if t.name == "triage-read-ahead"]  # each file's thread ended


def test_a_file_without_a_final_newline_and_one_cut_to_a_chunk_boundary(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       small_chunks: None) -> None:
    text = trainer_log(5000)
    (tmp_path / "train.log").write_text(text[:-1])  # the last line without its newline
    ahead, taken = reports(tmp_path, monkeypatch)
    monkeypatch.setattr(fastscan, "AHEAD_FROM", 1 << 40)
    assert taken and ahead == reports(tmp_path, monkeypatch)[0]
    (tmp_path / "train.log").write_text(text[:3 * (256 << 10) + 1000])  # a read ahead that finds the end
    monkeypatch.setattr(fastscan, "AHEAD_FROM", 1 << 20)
    ahead, taken = reports(tmp_path, monkeypatch)
    monkeypatch.setattr(fastscan, "AHEAD_FROM", 1 << 40)
    assert ahead == reports(tmp_path, monkeypatch)[0]


def test_a_read_ahead_that_fails_stops_the_file_where_a_read_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  small_chunks: None) -> None:
    (tmp_path / "train.log").write_text(trainer_log(6000, oom_at=10))
    real = fastscan._Ahead._run
    calls = [0]

    def failing(self: fastscan._Ahead) -> None:
        readinto = self.stream.readinto  # type: ignore[attr-defined]

        def once_fails(view: object) -> int:
            calls[0] += 1
            if calls[0] == 3:
                raise OSError(5, "Input/output error")
            return readinto(view)  # type: ignore[no-any-return]

        self.stream = type("S", (), {"readinto": staticmethod(once_fails)})()  # type: ignore[assignment]
        real(self)

    monkeypatch.setattr(fastscan._Ahead, "_run", failing)
    rep = analyze(Settings(paths=[str(tmp_path)]), LIB)
    assert calls[0] == 3  # the third read ahead failed
    (lf,) = rep.files
    assert lf.status == "partial" and "read stopped early" in lf.reason and "Input/output error" in lf.reason
    assert any(f.rule == "trainer.cuda-oom" for f in rep.findings)  # what was read before still counts
    assert not [t for t in threading.enumerate() if t.name == "triage-read-ahead"]


def test_a_file_cut_while_read_ahead_is_partial_with_how_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            small_chunks: None) -> None:
    log = tmp_path / "train.log"
    log.write_text(trainer_log(6000, oom_at=10))
    size = log.stat().st_size
    real = fastscan._Ahead.ask
    asked = [0]

    def cut_then_ask(self: fastscan._Ahead, view: object) -> None:
        asked[0] += 1
        if asked[0] == 2:
            os.truncate(log, 700_000)  # copytruncate under the reads ahead
        real(self, view)

    monkeypatch.setattr(fastscan._Ahead, "ask", cut_then_ask)
    rep = analyze(Settings(paths=[str(tmp_path)]), LIB)
    assert asked[0] >= 2
    (lf,) = rep.files
    assert lf.status == "partial"
    assert f"truncated while being read (copytruncate?): read to byte 700000 of {size}" in lf.reason
    assert any(f.rule == "trainer.cuda-oom" for f in rep.findings)
