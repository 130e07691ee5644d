"""Output formats: each module renders the same final Report; none computes anything of its own.

A format module exposes `render(report: Report, options: RenderOptions) -> str`. The findings it reads are
final: ranked, redacted, with baselined ones marked `known` (shown as known, never gating).

REGISTRY is the one list of formats: the CLI's `--format` choices and its extra-output flags (`--json FILE`,
...) are derived from it. Adding a format is its module plus one `register(...)` line below.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the registry before any report exists (and `--help` never needs the nouns)
    from triage.model import Report


@dataclass(frozen=True)
class FormatSpec:
    name: str  # the `--format` choice
    module: str  # import path of the module whose render() writes it
    also: str = ""  # help of the extra-output flag `--NAME FILE`; empty: a main format only (no such flag)


REGISTRY: dict[str, FormatSpec] = {}


def register(name: str, module: str, also: str = "") -> None:
    REGISTRY[name] = FormatSpec(name, module, also)


register("text", "triage.report.text_format")
register("json", "triage.report.json_format", "Also write the JSON report here.")
register("markdown", "triage.report.markdown_format", "Also write the Markdown summary here.")
register("html", "triage.report.html_format", "Also write the HTML page here.")
register("sarif", "triage.report.sarif_format", "Also write SARIF 2.1.0 here.")
register("junit", "triage.report.junit_format", "Also write JUnit XML here.")
register("github", "triage.report.github_format")
register("gitlab", "triage.report.gitlab_format", "Also write GitLab Code Quality JSON here.")

FORMATS = tuple(REGISTRY)  # the built-in formats (tests run every one)
AUTO = "auto"  # not a format: github inside GitHub Actions, else text


def choices() -> tuple[str, ...]:
    """What `--format` accepts: every registered format, and `auto`."""
    return (*REGISTRY, AUTO)


def extras() -> list[FormatSpec]:
    """The formats that can be written beside the main one, each by its flag `--NAME FILE`."""
    return [spec for spec in REGISTRY.values() if spec.also]


@dataclass
class RenderOptions:
    color: bool = False
    width: int | None = None  # wrap the text report at this many columns (a terminal's width); None: no wrap
    verbose: bool = False
    fail_on: str = "error"  # the gate: JUnit fails a category at or above it
    sarif_category: str | None = None  # SARIF runAutomationDetails.id: one category per upload (--sarif-category)
    max_chars: int | None = None  # the Markdown summary's bound in characters (--max-chars; None: 61,440)


def resolve(fmt: str, env: Mapping[str, str]) -> str:
    """`auto` is `github` inside GitHub Actions, else `text`."""
    if fmt != AUTO:
        return fmt
    return "github" if env.get("GITHUB_ACTIONS") else "text"


def render_pieces(fmt: str, report: Report, options: RenderOptions | None = None) -> Iterator[str]:
    """render's text in pieces (their join is render's), for a format that can make it so without holding it whole
    (json's files list, a block at a time); else the text as one piece."""
    spec = REGISTRY.get(fmt)
    module = importlib.import_module(spec.module) if spec is not None else None
    if module is not None and hasattr(module, "pieces"):
        return module.pieces(report, options or RenderOptions())
    return iter((render(fmt, report, options),))


def render(fmt: str, report: Report, options: RenderOptions | None = None) -> str:
    spec = REGISTRY.get(fmt)
    if spec is None:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(choices())}")
    return importlib.import_module(spec.module).render(report, options or RenderOptions())
