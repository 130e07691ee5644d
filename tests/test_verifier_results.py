"""Per-sample verifier and judge result files read as data (triage/parsers/results.py, checks/verifier_results.py).

The fixtures in fixtures/results/ follow real projects' output formats (fixtures/results/SOURCES.md); the numbers
asserted here are counted from the fixture files themselves, not copied from triage's output."""

from __future__ import annotations

import csv
import json

import polars as pl
from conftest import FIXTURES, triage_dir, triage_files
from domain import SIX

from triage.input.discover import decide_kind
from triage.model import SEVERITY_RANK

RESULTS = FIXTURES / "results"


def _by_rule(report):
    return {f.rule: f for f in report.findings}


def _warnings(report):
    return [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


def test_sandbox_results_with_40_percent_timeouts_are_verifier_timeouts_not_training_records() -> None:
    path = RESULTS / "sandbox-timeouts-40pct" / "input"
    data = path / "rollout" / "step_3_samples.jsonl"
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    timed_out = [i + 1 for i, r in enumerate(rows) if r["sandbox"]["run_result"]["status"] == "TimeLimitExceeded"]
    assert len(rows) == 200 and len(timed_out) == 80

    report = triage_dir(path)
    assert [f.kind for f in report.files] == ["results"]
    top = report.findings[0]
    assert (top.rule, top.category, top.severity, top.count) == ("verifier-results.timeouts", "verifier", "error", 80)
    assert top.numbers["rows"] == 200 and top.numbers["rate"] == 0.4
    assert [(e.file, e.line) for e in top.evidence] == [("rollout/step_3_samples.jsonl", n) for n in timed_out[:3]]
    assert "TimeLimitExceeded" in top.evidence[0].text
    assert "80 of 200 rows (40.0 %)" in top.title
    assert top.knobs[0].name == "verifier.timeout"
    rules = _by_rule(report)
    assert "health.publication-missing" not in rules  # no longer 200 "training records"
    tail = rules["verifier-results.latency-at-timeout"]
    assert tail.numbers["timeout"] == 10 and "run_timeout" in tail.numbers["timeout_from"]
    assert tail.numbers["at_timeout"] == 80


def test_verl_rollout_dump_healthy_is_clean_and_all_zero_is_no_signal() -> None:
    healthy = triage_dir(RESULTS / "verl-rollout-dump-healthy" / "input")
    assert {f.kind for f in healthy.files} == {"results"}
    assert _warnings(healthy) == []
    assert [f.rule for f in healthy.findings] == ["verifier-results.summary"]
    assert healthy.findings[0].numbers["rows"] == 128

    zero = triage_dir(RESULTS / "verl-rollout-dump-all-zero" / "input")
    top = zero.findings[0]
    assert (top.rule, top.category, top.severity, top.count) == ("verifier-results.rewards-degenerate", "verifier",
                                                                 "warning", 128)
    assert [(e.file, e.line) for e in top.evidence] == [("rollout_data/1.jsonl", 1), ("rollout_data/2.jsonl", 64)]
    assert '"pred": "[INVALID]"' in top.evidence[0].text
    assert top.knobs[0].name == "verifier.reward_function"


def test_judge_csv_context_overflow_against_config_and_rate_limits() -> None:
    path = RESULTS / "judge-csv-context-and-429" / "input"
    with open(path / "judge_results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    over = [i + 2 for i, r in enumerate(rows)
            if int(r["prompt_tokens"]) + int(r["completion_tokens"]) + int(r["rubric_tokens"]) > 16384
            or "maximum context length" in r["error"]]
    limited = [i + 2 for i, r in enumerate(rows) if "429" in r["error"]]
    report = triage_dir(path)
    rules = _by_rule(report)
    ctx = rules["verifier-results.judge-context"]
    assert report.findings[0] is ctx
    assert ctx.count == len(over) and [e.line for e in ctx.evidence] == over[:3]
    assert ctx.numbers["rows"] == 120
    assert [k.name for k in ctx.knobs][:1] == ["judge.max_context_length"]
    assert ctx.knobs[0].current == 16384
    errors = rules["verifier-results.errors"]
    assert errors.count == len(limited) and errors.numbers["rate_limited"] == len(limited)
    assert "judge.rate_limit" in [k.name for k in errors.knobs]
    assert [e.line for e in errors.evidence] == limited[:3]


def test_judge_tokens_over_a_context_column_without_any_error_text(tmp_path) -> None:
    rows = [{"id": i, "judge_score": 5, "prompt_tokens": 3000 if i != 7 else 7900, "completion_tokens": 400,
             "rubric_tokens": 300, "max_context_length": 8192} for i in range(20)]
    report = triage_files(tmp_path, {"judge_out.jsonl": "\n".join(json.dumps(r) for r in rows) + "\n"})
    f = _by_rule(report)["verifier-results.judge-context"]
    assert (f.count, f.evidence[0].line, f.numbers["tokens"], f.numbers["context"]) == (1, 8, 8600, 8192)


def test_lighteval_details_parquet_is_read_by_its_columns() -> None:
    report = triage_dir(RESULTS / "lighteval-details-parquet-healthy" / "input")
    assert [f.kind for f in report.files] == ["results"]
    assert _warnings(report) == []
    summary = _by_rule(report)["verifier-results.summary"]
    assert summary.numbers["rows"] == 100 and summary.evidence[0].text.startswith("row 1: ")


def test_parquet_with_constant_reward_and_row_numbers_as_lines(tmp_path) -> None:
    df = pl.DataFrame({"question": [f"q{i}" for i in range(12)], "prediction": ["x"] * 12,
                       "reward": [1.0] * 12, "latency_s": [0.5] * 12})
    df.write_parquet(tmp_path / "part-0.parquet")
    report = triage_dir(tmp_path)
    f = _by_rule(report)["verifier-results.rewards-degenerate"]
    assert "same value" in f.title and f.count == 12
    assert [(e.line, e.text.split(":")[0]) for e in f.evidence] == [(1, "row 1"), (12, "row 12")]


def test_json_array_and_index_keyed_rows_keep_their_lines(tmp_path) -> None:
    rows = [{"origin_prompt": "p", "prediction": "a", "status": "error" if i in (3, 5, 9) else "ok",
             "error": "judge API error: 503 Service Unavailable" if i in (3, 5, 9) else "", "score": i % 3}
            for i in range(12)]
    array = "[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n"
    keyed = json.dumps({str(i): r for i, r in enumerate(rows)}, indent=2)
    for name, text in (("preds.json", array), ("judged.json", keyed)):
        report = triage_files(tmp_path / name.split(".")[0], {name: text})
        f = _by_rule(report)["verifier-results.errors"]
        assert f.count == 3
        lines = text.splitlines()
        starts = [n for n, x in enumerate(lines, 1) if x.lstrip().startswith(('{"origin_prompt"', '"3": {', '"5": {',
                                                                               '"9": {'))]
        if name == "preds.json":
            starts = [starts[i] for i in (3, 5, 9)]  # row i of the array is on line i + 2
        assert [e.line for e in f.evidence] == starts[:3]


def test_metrics_records_stay_metrics_and_program_failures_are_not_verifier_errors(tmp_path) -> None:
    metrics = "\n".join(json.dumps({"step": i, "loss": 0.1, "grad_norm": 0.3, "reward": 0.5}) for i in range(5))
    assert decide_kind("metrics.jsonl", metrics) == "metrics"
    summary = json.dumps({"_step": 40, "_runtime": 900, "critic/score/mean": 0.0, "_wandb": {"runtime": 900}})
    assert decide_kind("wandb/run-20250101_010101-abc123/files/wandb-summary.json", summary) == "metrics"
    # SandboxFusion `Failed` (the candidate program failed its tests) is the sample's outcome, not a verifier error
    rows = [{"uid": i, "score": 0, "status": "Failed",
             "run_result": {"status": "Error", "execution_time": 0.2, "return_code": 1}} for i in range(20)]
    report = triage_files(tmp_path, {"out.jsonl": "\n".join(json.dumps(r) for r in rows)})
    assert "verifier-results.errors" not in _by_rule(report)


def test_bad_rows_never_raise(tmp_path) -> None:
    text = '{"input": "q", "score": 1, "error": ""}\nnot json at all\n{"input": "q", "score": \n\x00\x01\n[1, 2]\n'
    report = triage_files(tmp_path, {"samples.jsonl": text, "broken.csv": 'input,score,error\n"unterminated,1\n',
                                     "empty.json": "[]", "bad.parquet": "PAR1 not really"})
    assert report is not None


def test_results_file_kind_from_columns_not_name() -> None:
    row = json.dumps({"prompt": "x", "response": "y", "reward": 0.0, "status": "timeout", "latency": 30.0})
    assert decide_kind("out_000.jsonl", row) == "results"
    assert decide_kind("judge.jsonl", json.dumps({"level": "ERROR", "message": "judge down"})) == "verifier"
    assert decide_kind("eval.csv", "sample_id,judge_score,prompt_tokens,completion_tokens\ns1,3,100,20\n") == "results"
    assert decide_kind("table.csv", "a,b,c\n1,2,3\n") != "results"
    assert decide_kind("run.json", json.dumps({"trainer": {"total_epochs": 3}, "reward_model": {"timeout": 30}})) == "config"
