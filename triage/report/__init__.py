"""Output formats: each module renders the same final Report; none computes anything of its own.

A format module exposes `render(report: Report, options: RenderOptions) -> str`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..model import Report

FORMATS = ("text", "json")


@dataclass
class RenderOptions:
    color: bool = False
    width: int = 100
    verbose: bool = False


def render(fmt: str, report: Report, options: RenderOptions | None = None) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    module = importlib.import_module(f".{fmt}_format", __name__)
    return module.render(report, options or RenderOptions())
