"""Recognition round 21 (r21e, round 2): complete public run logs of RL training, failed and healthy
(real-extra 2100-2105).

- A home-grown GRPO engine on an 8 GB RTX 3060 Ti that catches its own CUDA OOMs and halves the batch
  ("[OOM] Backoff #1: gen_batch=2, train_batch=2", and in its other runs "[OOM] training phase failure during
  training: training_micro_batch 4 -> 2 (gen=4, train=2)") and then finishes: no memory finding (2100).
- The same project's benchmark wrapper failing at import: other.import-error on the ImportError line (2101).
- A GRPO sweep driver whose second run bash reports as "Killed": other.killed-sigkill (2102).
- Driver and monitor files of a GRPO sweep (a multi-file run dir with an operator's switchover, 2103), a driver whose
  shell test fails quietly ("[[: 1a: value too great for base") while every job launches (2104), and an evaluation
  driver committed while it was still loading a model (2105): nothing at warning or above.
All six were right blind, none by a fallback; no rule changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, top, triage_dir, triage_files, warnings_or_worse


@pytest.mark.parametrize("case", ["2100", "2103", "2104", "2105"])
def test_complete_healthy_runs_get_no_warning(case: str):
    report = triage_dir(extra_input(case))
    assert warnings_or_worse(report) == []


def test_engine_absorbed_oom_backoffs_are_not_a_trainer_oom():
    report = triage_dir(extra_input("2100"))
    assert not [f for f in report.findings if f.category == "trainer-oom"]


@pytest.mark.parametrize("line", [
    "[OOM] Backoff #2: gen_batch=1, train_batch=1",
    "[OOM] training phase failure during training: training_micro_batch 4 -> 2 (gen=4, train=2)",
])
def test_oom_backoff_wordings_in_a_finished_run(tmp_path: Path, line: str):
    text = ("[INFO][grpo.trainer] [Train] Starting training for 3 epochs...\n"
            "[INFO][grpo.trainer] \n" + line + "\n"
            "[WARNING][grpo.core.memory_manager] High VRAM usage detected!\n"
            "[INFO][grpo.trainer] [Train] Training complete!\n"
            "[INFO][grpo.main] Training completed successfully!\n")
    report = triage_files(tmp_path, {"train.log": text})
    assert warnings_or_worse(report) == []


def test_benchmark_wrapper_import_error():
    f = top(triage_dir(extra_input("2101")))
    assert (f.category, f.rule) == ("other", "other.import-error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("full_suite.log", 6)


def test_sweep_driver_reports_its_training_run_killed():
    f = top(triage_dir(extra_input("2102")))
    assert (f.category, f.rule) == ("other", "other.killed-sigkill")
    assert [(e.file, e.line) for e in f.evidence][0] == ("longhorizon_pipeline.log", 15)
