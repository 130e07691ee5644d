"""Where rendered reports go: the main output (stdout or --output), extra outputs (--sarif FILE, ...) and,
inside GitHub Actions, the Markdown job summary. One analysis feeds all of them."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from triage.errors import TriageError
from triage.model import Report
from triage.report import RenderOptions, render


class OutputError(TriageError):
    """An output that cannot be written; exit code 2."""


@dataclass
class Target:
    fmt: str
    path: Path | None = None  # None: standard output


def write_text(path: Path, text: str, append: bool = False) -> None:
    try:
        with open(path, "a" if append else "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None


def emit(report: Report, targets: list[Target], options: RenderOptions, env: Mapping[str, str]) -> list[str]:
    """Render and write every target; returns warnings (e.g. a job summary that could not be appended)."""
    warnings = []
    for t in targets:
        text = render(t.fmt, report, options)
        if t.path is None:
            sys.stdout.write(text)
        else:
            write_text(t.path, text)
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary and any(t.fmt == "github" for t in targets):
        try:
            write_text(Path(summary), render("markdown", report, options) + "\n", append=True)
        except OutputError as e:
            warnings.append(f"job summary not written: {e}")
    return warnings
