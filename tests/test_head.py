"""A file's head decides whether a worker reads it while this process parses (scan/head.py, parallel._stageable)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_parallel import needs_fork, report

from triage.scan import parallel


@needs_fork
def test_a_trainer_log_dense_with_rows_is_read_in_two_stages_next_to_engine_logs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # its metric dicts and Timer lines are candidate lines, but rows of columns once the head teaches their shapes
    # (scan/head.py): a worker reads and prefilters it while this process parses, as one process would
    monkeypatch.setattr(parallel, "STAGED_ABOVE", 0)
    monkeypatch.setattr(parallel, "BIG", 0)
    t = "[2026-05-24 00:53:{s:02d}] "
    lines = []
    for s in range(6000):
        lines += [t.format(s=s % 60) + "timer.py:24 - Timer train_wait start",
                  t.format(s=s % 60) + f"timer.py:32 - Timer train_wait end (elapsed: {s % 90 / 10:.1f}s)",
                  t.format(s=s % 60) + f"log_utils.py:542 - step {s}: {{'train/loss': {(s % 13) / 100:.4f}, "
                  f"'train/grad_norm': {0.3 + (s % 7) / 10:.3f}, 'train/step': {s}}}"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    engine = "[2026-05-24 00:00:{s:02d} TP0] Decode batch. #running-req: 4, #token: 100, token usage: 0.10, #queue-req: 0"
    for k in range(2):
        (tmp_path / f"sglang-engine-{k}.log").write_text("\n".join(engine.format(s=i % 60) for i in range(3000)) + "\n")
    staged: list[str] = []
    real = parallel._staged_scan
    monkeypatch.setattr(parallel, "_staged_scan", lambda scanner, lf: staged.append(lf.rel) or real(scanner, lf))
    two = report(tmp_path, monkeypatch, "2")
    assert staged == ["train.log"]
    assert two == report(tmp_path, monkeypatch, "1")
    assert {f["path"]: f["lines"] for f in two["files"]}["train.log"] == 18000
