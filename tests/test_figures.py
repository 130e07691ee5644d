"""Run figures and timelines the report carries (what `diff` compares and the HTML page draws), on real cases."""

from __future__ import annotations

import json

from realcases import report_of

from triage.report import RenderOptions, render


def test_prefill_ramp_figures_and_timeline_by_line_number() -> None:
    report = report_of("045")
    assert report.figures == {"retractions": 0, "peak_token_usage": 0.77, "peak_queue": 38.0, "first_step_time": None,
                              "step_time": None, "truncation_ratio": None}
    (t,) = report.timelines
    assert (t.kind, t.file, t.rows) == ("engine", "sglang-engine-0.log", 7)
    assert t.x == [6, 7, 8, 9, 10, 11, 12]
    assert t.series["token usage"] == [0.0, 0.04, 0.18, 0.33, 0.48, 0.62, 0.77]
    assert t.series["queued requests"][:2] == [0.0, 38.0]
    assert "gen throughput (token/s)" not in t.series  # prefill rows only: no decode throughput to draw


def test_swa_decode_lines_give_full_pool_usage_and_throughput() -> None:
    (t,) = report_of("036").timelines
    assert t.series["token usage"] == [1.0, 1.0]
    assert t.series["gen throughput (token/s)"] == [429.52, 429.74]
    assert report_of("036").figures["peak_token_usage"] == 1.0


def test_verl_step_metrics_give_truncation_but_no_first_step_at_step_5() -> None:
    figures = report_of("040").figures
    assert figures["truncation_ratio"] == 0.521
    assert figures["first_step_time"] is None  # the log starts at step 5: not a first step
    assert figures["retractions"] is None  # no engine log: unknown, not zero


def test_json_report_carries_figures_and_timelines() -> None:
    doc = json.loads(render("json", report_of("045"), RenderOptions()))
    assert doc["figures"]["peak_queue"] == 38.0
    assert doc["timelines"][0]["x"] == [6, 7, 8, 9, 10, 11, 12]
