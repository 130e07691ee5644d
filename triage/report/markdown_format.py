"""`--format markdown`: the summary (report/summary.py) bounded for a ticket or a comment.

Trackers count characters, not bytes: a GitHub issue or pull-request comment holds 65,536, a Jira Cloud text
field 32,767 (its default `jira.text.field.character.limit`). The default bound, 61,440, fits GitHub with room
for a sentence a person adds; `--max-chars N` sets another, `--max-chars jira` the Jira one.
"""

from __future__ import annotations

from triage.model import Report
from triage.report import RenderOptions
from triage.report.common import safe_report
from triage.report.summary import bounded

DEFAULT_MAX_CHARS = 60 * 1024
PRESETS = {"jira": 32_767, "github": 65_536}  # named bounds `--max-chars` accepts


def render(report: Report, options: RenderOptions) -> str:
    return bounded(safe_report(report), options, options.max_chars or DEFAULT_MAX_CHARS)
