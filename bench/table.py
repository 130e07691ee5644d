"""The rows `bench.run --json` wrote, as one Markdown table (for bench/RESULTS.md and the README).

    python -m bench.table ROWS.json [ROWS.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = ("profile", "size", "MiB", "files", "pairs", "triage s", "grep s", "ratio", "triage CPU s", "grep CPU s",
           "CPU ratio", "peak PSS MB", "RSS sum MB", "recall", "what the run holds")


def holds(r: dict) -> str:
    """The generator's counts that make the profile what it is."""
    c = r.get("counts", {})
    parts = []
    if c.get("stats_rows"):
        parts.append(f"{c['stats_rows']:,} stats rows, {c['high_rows'] / c['stats_rows']:.0%} at usage >= 0.9 "
                     "with a queue")
    if c.get("retractions"):
        parts.append(f"{c['retractions']:,} retraction lines ({c['retractions'] / c['engine_lines']:.0%} of the "
                     "engine lines)")
    if c.get("metric_records"):
        parts.append(f"{c['metric_records']:,} metric records")
    return "; ".join(parts)


def markdown(rows: list[dict]) -> str:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [r["profile"], r["size"], f"{r['mib']:.0f}", str(r["files"]), str(r["runs"]), f"{r['triage_s']:.2f}",
                 f"{r['grep_s']:.2f}", f"**{r['ratio']:.2f}**", f"{r['triage_cpu_s']:.2f}", f"{r['grep_cpu_s']:.2f}",
                 f"{r['cpu_ratio']:.2f}", f"{r['peak_pss_mb']:.0f}", f"{r['peak_rss_mb']:.0f}",
                 f"{r['found']}/{r['injected']}" + (f" (missing {', '.join(r['missing'])})" if r["missing"] else "")
                 + (f", warnings: {', '.join(r['loud'])}" if r["profile"] == "healthy" and r.get("loud") else ""),
                 holds(r)]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    rows = [row for name in (argv if argv is not None else sys.argv[1:])
            for row in json.loads(Path(name).read_text(encoding="utf-8"))]
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
