"""The whole flow in one function: discover -> read -> parse -> match + check -> findings -> Report."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import __version__, parallel
from .checks import Run
from .discover import discover
from .findings import build
from .knobs import build_config
from .model import Event, Line, LogFile, Report
from .patterns import Library, load_library
from .scan import FileResult, Scanner

SCANNED_KINDS = {"sglang", "vllm", "trainer", "driver", "rollout", "verifier", "metrics", "text"}


class InputError(Exception):
    """A problem with what the user asked for (missing path, unreadable config); exit code 2."""


@dataclass
class Settings:
    paths: list[str]
    patterns: list[Path] = field(default_factory=list)
    config: Path | None = None
    redact: bool = True


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested config -> {dotted.name: value, leaf_name: value}."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            name = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict):
                out.update(_flatten(v, name))
            else:
                out[name] = v
                out.setdefault(str(k).split(".")[-1], v)
    return out


def read_config(lf: LogFile) -> tuple[Event | None, str]:
    """A run configuration file as a `config` event (its fields flattened), or a reason it is not one."""
    try:
        with open(lf.path, "rb") as fh:
            data = yaml.safe_load(fh.read(8 << 20).decode("utf-8", "replace"))
    except (OSError, yaml.YAMLError) as e:
        return None, f"not a readable YAML/JSON config: {str(e).splitlines()[0]}"
    if not isinstance(data, dict):
        return None, "not a mapping of settings"
    line = Line(lf.rel, 1, "", "")
    return Event("config", line, _flatten(data)), ""


def _scan_all(scanner: Scanner, files: list[LogFile]) -> tuple[list[FileResult], list[Event]]:
    results, config_events = [], []
    todo: list[LogFile] = []
    for lf in files:
        if lf.status != "read":
            continue
        if lf.kind == "config":
            ev, why = read_config(lf)
            if ev is not None:
                config_events.append(ev)
            else:
                lf.kind = "text"
                lf.reason = why
        if lf.kind in SCANNED_KINDS:
            todo.append(lf)
    by_file = {id(lf): r for lf, r in zip(todo, parallel.scan_files(scanner, todo))}
    for lf in todo:
        r = by_file[id(lf)]
        if r.file is not lf:  # scanned in a worker process: bring its notes home
            lf.lines, lf.reason = r.file.lines, r.file.reason
            r.file = lf
        results.append(r)
    return results, config_events


def analyze(settings: Settings, lib: Library | None = None) -> Report:
    lib = lib or load_library(settings.patterns)
    files, problems = discover(settings.paths)
    if problems:
        raise InputError(problems[0])
    if settings.config is not None:
        if not settings.config.is_file():
            raise InputError(f"{settings.config}: config file not found")
        cfg_file = LogFile(path=str(settings.config), rel=str(settings.config), kind="config")
        files.append(cfg_file)
    scanner = Scanner(lib)
    results, config_events = _scan_all(scanner, files)
    events = [e for r in results for e in r.events] + config_events
    engines = {k: v for r in results for k, v in r.engines.items()}
    hits = [h for r in results for h in r.hits]
    cfg = build_config(lib, events, hits)
    run = Run(engines=engines, events=events)
    findings = build(lib, results, run, cfg, settings.redact)
    root = settings.paths[0] if len(settings.paths) == 1 else "."
    report = Report(version=__version__, root=root, findings=findings, files=files, config=cfg.as_dict())
    report.errors = [e for r in results for e in r.errors]
    return report
