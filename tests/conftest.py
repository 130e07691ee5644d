"""Shared helpers: the built-in library, and running triage on a directory or on inline log text."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.analyze import Settings, analyze
from triage.model import Report
from triage.patterns import Library, load_library

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
REAL = FIXTURES / "real"


@pytest.fixture(scope="session")
def lib() -> Library:
    return load_library()


def triage_dir(path: Path | str, **kw: object) -> Report:
    return analyze(Settings(paths=[str(path)], **kw))  # type: ignore[arg-type]


def triage_files(tmp_path: Path, files: dict[str, str], **kw: object) -> Report:
    """Write {name: text} under tmp_path/run and triage that directory."""
    run = tmp_path / "run"
    for name, text in files.items():
        p = run / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return triage_dir(run, **kw)


def top(report: Report):
    assert report.findings, "expected at least one finding"
    return report.findings[0]
