"""The whole flow in one function: discover -> read -> parse -> match + check -> findings -> Report."""

from __future__ import annotations

import datetime as dt
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from triage import __version__
from triage.checks import Run, load_checked_library
from triage.effective_config import build_config
from triage.errors import TriageError
from triage.findings import build
from triage.input.decompress import wrap_stdin
from triage.input.discover import discover
from triage.input.read import iter_chunks, open_stream
from triage.library.rules import Library
from triage.model import SCANNED_KINDS, Event, LogFile, Report
from triage.parsers import results as results_file
from triage.parsers.config_file import ConfigError, read_config_file
from triage.redact import redact_report
from triage.report import baseline
from triage.report.figures import figures, timelines
from triage.scan import parallel, progress
from triage.scan.placement import place_by_run
from triage.scan.scanner import FileResult, Scanner
from triage.scan.series import RunSeries


class InputError(TriageError):
    """A problem with what the user asked for (missing path, unreadable config or baseline); exit code 2."""


@dataclass
class Settings:
    paths: list[str]
    patterns: list[Path] = field(default_factory=list)
    config: Path | None = None
    redact: bool = True
    baseline: Path | None = None  # hide the findings this baseline holds (they stay visible as known)
    today: dt.date | None = None  # for baseline expiry; default: the local date
    follow_links: bool = False  # read files behind symlinks that lead out of the directories given


def read_config(lf: LogFile) -> tuple[Event | None, str]:
    """A run configuration file as a `config` event (its settings by dotted name), or a reason it is not one."""
    try:
        return read_config_file(lf.path, lf.rel), ""
    except ConfigError as e:
        return None, str(e).removeprefix(f"{lf.rel}: ")


def _given_config(path: Path) -> LogFile:
    """`--config FILE`: it must exist and parse; anything else is a one-line input error."""
    if not path.exists():
        raise InputError(f"{path}: config file not found")
    lf = LogFile(path=str(path), rel=str(path), kind="config", size=path.stat().st_size)
    try:
        read_config_file(lf.path, lf.rel)
    except ConfigError as e:
        raise InputError(str(e)) from None
    return lf


def _scan_all(scanner: Scanner, files: list[LogFile]) -> tuple[list[FileResult], list[Event]]:
    results, config_events = [], []
    todo: list[LogFile] = []
    for lf in files:
        if lf.status != "read":
            continue
        if lf.kind == "results":  # per-sample verifier output: read as a table, never as log lines
            table_ev = results_file.read(lf, open_stream)
            if table_ev is not None:
                config_events.append(table_ev)
                continue
            if results_file.is_parquet(lf.path):
                lf.kind, lf.status, lf.reason = "binary", "skipped", "parquet data, not readable as a results table"
                continue
            lf.kind, lf.reason = "metrics", "not readable as a results table"
        if lf.kind == "config":
            ev, why = read_config(lf)
            if ev is not None:
                config_events.append(ev)
            else:
                lf.kind = "text"
                lf.reason = why
        if lf.kind in SCANNED_KINDS:
            if lf.path == "-":
                results.append(scanner.scan(lf, iter_chunks(wrap_stdin(sys.stdin.buffer))))
            else:
                todo.append(lf)
    bar = progress.start(sum(lf.size for lf in todo))
    scanner.progress = bar
    try:
        by_file = [r for r in parallel.scan_files(scanner, todo) if r is not None]  # in the order of todo
    finally:
        scanner.progress = None
        if bar is not None:
            bar.close()
    results += by_file  # None: a result that holds nothing, left out (its file's notes are home: parallel.kept)
    for r in results:
        _how_far(r)
    return results, config_events


def _how_far(r: FileResult) -> None:
    """A partial file's note says how far it was read: its lines counted, or (reading raised before the count was
    kept) the last line the scan kept."""
    lf = r.file
    if lf.status != "partial":
        return
    seen = ([ln.lineno for ln in r.unclaimed] + [f.last.lineno for f in r.folded] + [h.line.lineno for h in r.hits]
            + [e.line.lineno for e in r.events])
    lf.lines = max([lf.lines, *seen])
    if lf.lines:
        lf.reason += f" (read to line {lf.lines}" + (f" of a {lf.size}-byte file)" if lf.size else ")")


@contextmanager
def batch_gc() -> Iterator[None]:
    """No cyclic garbage collection while a run's lines and events pile up: the scan makes hundreds of thousands
    of small objects that all live to the end, and each collection would walk them (and the rule library)
    again, for nothing: they hold no reference cycles (a whole 1 GiB run leaves about 400 unreachable objects,
    most of them from imports). Objects made before the scan are frozen out of collection, which also keeps
    forked workers from touching (and so copying) the pages that hold them."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()  # what the analysis made goes straight to the oldest generation (next line), so that turning
        gc.unfreeze()  # the collector back on does not start by walking all of it as young objects
        if enabled:
            gc.enable()


def analyze(settings: Settings, lib: Library | None = None, retired: list[object] | None = None) -> Report:
    """The report for the settings' paths. `retired`: a process about to leave through os._exit (the console entry)
    passes a list, and the analysis leaves its scan objects in it for the OS to reclaim instead of freeing hundreds
    of thousands of them one by one."""
    lib = lib or load_checked_library(settings.patterns)
    with batch_gc():
        return _analyze(settings, lib, retired)


def _analyze(settings: Settings, lib: Library, retired: list[object] | None) -> Report:
    entries = baseline.load(settings.baseline) if settings.baseline is not None else {}
    scanner = Scanner(lib)  # before discovery: workers forked early (parallel.soon) scan with it
    scanner.series = RunSeries()
    with parallel.early(scanner):
        files, problems = discover(settings.paths, settings.follow_links, parallel.map_shared, parallel.soon)
        if problems:
            raise InputError(problems[0])
        if settings.config is not None:
            files.append(_given_config(settings.config))
        results, config_events = _scan_all(scanner, files)
    # the records and timers of the files this process scanned first, then those of the files workers scanned
    events = scanner.series.close() + [e for r in results for e in r.events] + config_events
    place_by_run(lib, results, events)  # a line no file placed, placed by the rest of the run
    engines = {k: v for r in results for k, v in r.engines.items()}
    hits = [h for r in results for h in r.hits]
    cfg = build_config(lib, events, hits)
    given = str(settings.config) if settings.config is not None else None
    for where, problem in cfg.problems:
        if where == given:
            raise InputError(problem)
    run = Run(engines=engines, events=events, config=cfg)
    findings = build(lib, results, run, cfg, settings.redact)
    root = settings.paths[0] if len(settings.paths) == 1 else "."
    report = Report(version=__version__, root=root, findings=findings, files=files, config=cfg.as_dict(),
                    figures=figures(lib, run, hits), timelines=timelines(lib, run, hits),
                    categories=list(lib.categories))
    report.errors = scanner.notes + [e for r in results for e in r.errors] + [p for _, p in cfg.problems]
    if settings.redact:
        redact_report(report)
    if settings.baseline is not None:
        baseline.apply(report, entries, settings.today or dt.date.today())
    if retired is not None:
        retired.append((results, events, hits, run))
    return report
