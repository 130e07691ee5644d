"""`--export DIR`: the report's data as Parquet tables, for a notebook, a dashboard or `triage diff`.

- findings.parquet: one row per finding in rank order (the JSON report's fields; evidence and knobs as lists);
- engine_timelines.parquet: per engine, one row per timeline point and series (source, file, line, series, value);
- trainer_series.parquet: the trainer's series (step times) in the same long layout;
- figures.parquet: the run figures `triage diff` compares (name, value).

The tables are the Report's own data (findings, timelines, figures), already redacted when the report is.
polars is imported on this path only: a scan without --export never loads it. Each file is written whole or
not at all (outputs.replacing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage.errors import TriageError
from triage.model import Finding, Report, Timeline
from triage.report.outputs import OutputError, replacing

FINDINGS = "findings.parquet"
ENGINES = "engine_timelines.parquet"
TRAINER = "trainer_series.parquet"
FIGURES = "figures.parquet"
TABLES = (FINDINGS, ENGINES, TRAINER, FIGURES)


class ExportError(TriageError):
    """An export directory whose tables cannot be read; exit code 2."""


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _finding(rank: int, f: Finding) -> dict[str, Any]:
    first = f.evidence[0] if f.evidence else None
    return {"rank": rank, "rule": f.rule, "category": f.category, "severity": f.severity, "title": f.title,
            "count": f.count, "known": f.known, "fingerprint": f.fingerprint,
            "file": first.file if first else None, "line": first.line if first else None,
            "text": first.text if first else None,
            "evidence": [{"file": e.file, "line": e.line, "text": e.text} for e in f.evidence],
            "knobs": [{"name": k.name, "current": _text(k.current), "source": k.source} for k in f.knobs],
            "not_knobs": [str(n) for n in f.not_knobs], "explain": f.explain}


def _points(timelines: list[Timeline]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {"source": [], "file": [], "line": [], "series": [], "value": []}
    for t in timelines:
        for name, values in t.series.items():
            for x, v in zip(t.x, values):
                for col, item in zip(cols.values(), (t.source, t.file, x, name, v)):
                    col.append(item)
    return cols


def frames(report: Report) -> dict[str, Any]:
    """file name -> polars DataFrame."""
    import polars as pl

    series_schema = {"source": pl.String, "file": pl.String, "line": pl.Int64, "series": pl.String,
                     "value": pl.Float64}
    evidence = pl.List(pl.Struct({"file": pl.String, "line": pl.Int64, "text": pl.String}))
    knobs = pl.List(pl.Struct({"name": pl.String, "current": pl.String, "source": pl.String}))
    findings_schema: dict[str, Any] = {"rank": pl.Int64, "rule": pl.String, "category": pl.String, "severity": pl.String,
                       "title": pl.String, "count": pl.Int64, "known": pl.Boolean, "fingerprint": pl.String,
                       "file": pl.String, "line": pl.Int64, "text": pl.String, "evidence": evidence, "knobs": knobs,
                       "not_knobs": pl.List(pl.String), "explain": pl.String}
    numeric = {k: float(v) for k, v in report.figures.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {
        FINDINGS: pl.DataFrame([_finding(i, f) for i, f in enumerate(report.findings, 1)], schema=findings_schema),
        ENGINES: pl.DataFrame(_points([t for t in report.timelines if t.kind == "engine"]), schema=series_schema),
        TRAINER: pl.DataFrame(_points([t for t in report.timelines if t.kind != "engine"]), schema=series_schema),
        FIGURES: pl.DataFrame({"name": list(report.figures),
                               "value": [numeric.get(k) for k in report.figures]},
                              schema={"name": pl.String, "value": pl.Float64}),
    }


def write(report: Report, directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{directory}: cannot write the export: {e.strerror or e}") from None
    for name, frame in frames(report).items():
        with replacing(directory / name) as tmp:
            frame.write_parquet(tmp)


def is_export(directory: Path) -> bool:
    return (directory / FINDINGS).is_file()


def read(directory: Path) -> dict[str, Any]:
    """The export as the JSON report's shape `triage diff` reads: findings (in rank order) and figures."""
    import polars as pl

    try:
        findings = pl.read_parquet(directory / FINDINGS).sort("rank").to_dicts()
        figures_path = directory / FIGURES
        figures = ({r["name"]: r["value"] for r in pl.read_parquet(figures_path).to_dicts()}
                   if figures_path.is_file() else {})
    except Exception as e:  # noqa: BLE001 - polars raises its own kinds for every way a table can be bad
        raise ExportError(f"{directory}: not a readable triage export ({type(e).__name__}: {e})") from None
    for f in findings:
        f.pop("rank", None)
    return {"findings": findings, "figures": figures}
