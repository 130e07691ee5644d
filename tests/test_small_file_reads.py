"""A small file is opened once by its scan: the bytes the scan read are what the metric tables' pass reads
(Scanner._tables), not a second opening of the file (a run of 200 k per-sample logs paid one for each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from triage.analyze import Settings, analyze
from triage.library.rules import load_library
from triage.report import RenderOptions, render
from triage.scan import scanner as scanner_mod

PAIRS = """| metrique GRPO | valeur observee | occurrences |
|---|---|---:|
| `completions/mean_length` | **80** | **40 / 40** |
| `completions/clipped_ratio` | `1` | 39 / 40 (1 fois `0.975`) |
| `completions/mean_terminated_length` | `0` | 39 / 40 (1 fois `4`) |
"""


def _opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the scan opens, in order: as a stream (open_stream) or read whole (read_small)."""
    opened: list[str] = []

    def counting(real: Any) -> Any:
        def opening(path: str, *args: Any, **kw: Any) -> Any:
            opened.append(path)
            return real(path, *args, **kw)
        return opening

    monkeypatch.setattr(scanner_mod, "open_stream", counting(scanner_mod.open_stream))
    monkeypatch.setattr(scanner_mod, "read_small", counting(scanner_mod.read_small))
    return opened


@pytest.mark.parametrize("native", [True, False])
def test_a_small_file_is_opened_once_and_its_table_still_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               native: bool) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "issue-metrics.md").write_text(PAIRS, encoding="utf-8")
    (run / "verify-sample-000001.log").write_text(
        "INFO:2026-05-24 00:50:00,173: sample 0 rollout 4: parsed answer \\boxed{757} against gold 757: score 1.0\n",
        encoding="utf-8")
    if native:
        monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    else:
        monkeypatch.setenv("TRIAGE_NO_NATIVE", "1")
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    opened = _opens(monkeypatch)
    report = json.loads(render("json", analyze(Settings(paths=[str(run)]), load_library()), RenderOptions()))
    assert [(f["rule"], f["evidence"][0]["line"]) for f in report["findings"]][:1] == [("gen.cap-hit-rate", 4)]
    assert sorted(Path(p).name for p in opened) == ["issue-metrics.md", "verify-sample-000001.log"]


@pytest.mark.parametrize("filler", [0, 300 << 10])
def test_a_scan_stopped_early_leaves_the_tables_pass_its_own_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    filler: int) -> None:
    # a streamed file's bytes are used only when the scan read it to the end (or past the size the tables pass reads):
    # a scan that stopped (here: the C prefilter raising) is no reading of the file, which the tables pass then opens
    # itself; a small file read whole (decompress.read_small, < 256 KiB) was read to its end before the scan began
    run = tmp_path / "run"
    run.mkdir()
    notes = "notes from the run, nothing to report\n" * (filler // 38)
    (run / "issue-metrics.md").write_text(notes + PAIRS, encoding="utf-8")
    monkeypatch.delenv("TRIAGE_NO_NATIVE", raising=False)
    monkeypatch.setenv("TRIAGE_JOBS", "1")

    def broken(*_: Any, **__: Any) -> int:
        raise OSError("boom")

    monkeypatch.setattr(scanner_mod.fastscan, "scan_file", broken)
    opened = _opens(monkeypatch)
    report = analyze(Settings(paths=[str(run)]), load_library())
    assert [Path(p).name for p in opened] == ["issue-metrics.md"] * (2 if filler else 1)
    assert [f.rule for f in report.findings][:1] == ["gen.cap-hit-rate"]
