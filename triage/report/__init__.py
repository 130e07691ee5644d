"""Output formats: each module renders the same final Report; none computes anything of its own.

A format module exposes `render(report: Report, options: RenderOptions) -> str`. The findings it reads are
final: ranked, redacted, with baselined ones marked `known` (shown as known, never gating).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass

from triage.model import Report

FORMATS = ("text", "json", "markdown", "html", "sarif", "junit", "github", "gitlab")
CHOICES = FORMATS + ("auto",)


@dataclass
class RenderOptions:
    color: bool = False
    width: int = 100
    verbose: bool = False
    fail_on: str = "error"  # the gate: JUnit fails a category at or above it
    redact: bool = True  # mask secrets in everything not already redacted (config values, reasons, paths)
    sarif_category: str | None = None  # SARIF runAutomationDetails.id: one category per upload (--sarif-category)
    max_chars: int | None = None  # the Markdown summary's bound in characters (--max-chars; None: 61,440)


def resolve(fmt: str, env: Mapping[str, str]) -> str:
    """`auto` is `github` inside GitHub Actions, else `text`."""
    if fmt != "auto":
        return fmt
    return "github" if env.get("GITHUB_ACTIONS") else "text"


def render(fmt: str, report: Report, options: RenderOptions | None = None) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(CHOICES)}")
    module = importlib.import_module(f".{fmt}_format", __name__)
    return module.render(report, options or RenderOptions())
