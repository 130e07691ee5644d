"""Complete public run logs (real-extra 1260-1267): what a whole run's log shows, read as a whole.

Two mechanisms are tested on their own inputs besides the cases: a health probe answering 503 before the engine is
ready is not a failed request (other.engine-http-error-responses), and the run-health summary reads a metric under
the name with the most records, not a one-row run summary that hides the console's non-finite records."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, triage_dir
from domain import SIX

from triage.library.rules import Rule, load_library
from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"


def _case(number: str) -> Path:
    (found,) = [p for p in EXTRA.iterdir() if p.name.startswith(f"{number}-")]
    return found / "input"


def _rule(rule_id: str) -> Rule:
    rule = load_library().rule(rule_id)
    assert rule is not None
    return rule


def test_unsloth_grpo_every_step_nan_grad_norm_is_the_finding_and_the_summary_says_so() -> None:
    report = triage_dir(_case("1260"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("health.grads-non-finite", "other", "error")
    assert [(e.file, e.line) for e in top.evidence] == [("train_grpo.log", 163), ("train_grpo.log", 412)]
    assert (top.numbers["metric"], top.numbers["non_finite"], top.numbers["records"]) == ("grad_norm", 20, 47)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1
    (summary,) = [f for f in report.findings if f.rule == "health.summary"]
    # the wandb summary's single `train/grad_norm` row (0.21, finite) must not stand for the console's 47 records
    assert summary.numbers["grad_norm_metric"] == "grad_norm"
    assert summary.numbers["grad_norm_non_finite"] == 20
    assert "grad_norm 20 non-finite" in summary.numbers["arithmetic"]


def test_run_summary_prefers_the_metric_name_with_most_records(tmp_path: Path) -> None:
    rows = [f"{{'loss': 0.0, 'grad_norm': {'nan' if i < 3 else 0.5}, 'learning_rate': 1e-06, 'epoch': 0.{i}}}"
            for i in range(6)]
    (tmp_path / "train.log").write_text("\n".join(rows + ["wandb:           train/grad_norm 0.5"]) + "\n")
    (summary,) = [f for f in triage_dir(tmp_path).findings if f.rule == "health.summary"]
    assert summary.numbers["grad_norm_metric"] == "grad_norm"
    assert summary.numbers["grad_norm_non_finite"] == 3


def test_sglang_nvfp4_start_abandoned_in_capture_is_cold_start() -> None:
    report = triage_dir(_case("1262"))
    top = report.findings[0]
    assert (top.rule, top.category) == ("cold.startup-abandoned", "cold-start")
    assert top.evidence[0].file == "sglang-versuch2.log" and top.evidence[0].line == 43
    assert "Load weight end" in top.evidence[0].text
    assert top.numbers["seconds"] == pytest.approx(548.9)
    assert "compile.cache" in {k.name for k in top.knobs}


def test_health_probe_503_before_ready_is_no_http_error_in_a_passed_nightly_test() -> None:
    report = triage_dir(_case("1265"))
    assert not [f for f in report.findings if f.rule == "other.engine-http-error-responses"]
    assert all(SEVERITY_RANK[f.severity] > SEVERITY_RANK["warning"] for f in report.findings)
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


@pytest.mark.parametrize("line", [
    '........[2026-01-17 10:01:35] INFO:     172.22.3.244:34864 - "GET /health HTTP/1.1" 503 Service Unavailable',
    '[2026-01-17 10:01:45] INFO:     172.22.3.244:58846 - "GET /health_generate HTTP/1.1" 503 Service Unavailable',
    'INFO:     127.0.0.1:40110 - "GET /ping HTTP/1.1" 503 Service Unavailable',
    'INFO:     127.0.0.1:40110 - "GET /health?timeout=5 HTTP/1.1" 503 Service Unavailable',
])
def test_health_probes_are_not_failed_requests(line: str) -> None:
    assert _rule("other.engine-http-error-responses").search(line) is None


@pytest.mark.parametrize(("line", "path", "status"), [
    ('INFO:     10.0.0.1:45400 - "POST /generate HTTP/1.1" 503 Service Unavailable', "/generate", "503"),
    ('INFO:     10.0.0.1:45400 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
     "/v1/chat/completions", "500"),
    ('INFO:     10.0.0.5:41022 - "GET /healthz_report HTTP/1.1" 500 Internal Server Error', "/healthz_report", "500"),
])
def test_rollout_requests_answered_with_errors_still_count(line: str, path: str, status: str) -> None:
    m = _rule("other.engine-http-error-responses").search(line)
    assert m is not None and (m.group("path"), m.group("status")) == (path, status)


def test_verl_opd_run_waits_on_its_longest_generation() -> None:
    report = triage_dir(_case("1267"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("gen.slowest-sample-tail", "generation-tail", "warning")
    assert (top.evidence[0].file, top.evidence[0].line) == ("output.log", 208)
    assert top.evidence[0].text.startswith("step:1 - global_seqlen/min:")
    assert top.count == 26
    assert "inference.max_response_length" in {k.name for k in top.knobs}
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


@pytest.mark.parametrize("number", ["1261", "1263", "1264", "1266"])
def test_healthy_complete_runs_raise_nothing(number: str) -> None:
    report = triage_dir(_case(number))
    assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_vllm_v1_engine_start_failure_names_the_engine_core_exception_not_the_wrapper() -> None:
    report = triage_dir(_case("1268"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("other.fatal-exit", "other", "error")
    assert (top.numbers["exception"], top.numbers["message"]) == ("TypeError", "type 'array.array' is not subscriptable")
    assert ("vllm_serve.log", 208) in [(e.file, e.line) for e in top.evidence]
    # the API server's pointer is the start failure's symptom (other.engine-start-failed, folded in since s16): shown
    # after the engine core's own exception, never as the failure
    lines = [e.line for e in top.evidence]
    assert lines.index(208) < next(e.line for e in top.evidence if "See root cause above" in e.text)
    assert len(report.findings) == 2 and report.findings[1].rule == "cold.startup-phases"
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_see_root_cause_above_points_to_the_earlier_exception(tmp_path: Path) -> None:
    (tmp_path / "serve.log").write_text("\n".join([
        "(EngineCore_DP0 pid=3709) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=3709)   File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 691, in run',
        "(EngineCore_DP0 pid=3709)     raise ValueError(msg)",
        "(EngineCore_DP0 pid=3709) ValueError: unsupported quantization method 'fp5'",
        "(APIServer pid=3653) Traceback (most recent call last):",
        '(APIServer pid=3653)   File "/usr/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 782, in wait',
        '(APIServer pid=3653)     raise RuntimeError("Engine core initialization failed. "',
        "(APIServer pid=3653) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]) + "\n")
    (fatal,) = [f for f in triage_dir(tmp_path).findings if f.rule == "other.fatal-exit"]
    assert fatal.numbers["exception"] == "ValueError"
    assert any(e.line == 4 for e in fatal.evidence)


def test_verl_responses_shrinking_to_nine_tokens_while_the_score_falls_is_a_collapse() -> None:
    report = triage_dir(_case("1270"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("health.response-collapse", "other", "warning")
    assert [(e.file, e.line) for e in top.evidence] == [("output.log", 293), ("output.log", 297)]
    assert top.evidence[-1].text.startswith("step:59 - global_seqlen/min:")
    assert top.numbers["length_early"] == pytest.approx(970.01, abs=0.01)
    assert top.numbers["length_late"] == pytest.approx(9.818, abs=0.001)
    assert top.numbers["reward_late"] < top.numbers["reward_early"] < -0.5
    assert not top.knobs
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def _verl_steps(tmp_path: Path, rows: list[tuple[float, float]]) -> list[str]:
    lines = [f"step:{i} - critic/score/mean:{score} - response_length/mean:{length} - actor/entropy:0.3"
             for i, (score, length) in enumerate(rows, 1)]
    (tmp_path / "output.log").write_text("\n".join(lines) + "\n")
    return [f.rule for f in triage_dir(tmp_path).findings]


def test_short_answers_that_score_better_are_no_collapse(tmp_path: Path) -> None:
    rows = [(0.2, 950.0)] * 6 + [(0.7, 30.0)] * 6
    assert "health.response-collapse" not in _verl_steps(tmp_path, rows)


def test_responses_shrinking_by_half_are_no_collapse(tmp_path: Path) -> None:
    rows = [(-0.5, 950.0)] * 6 + [(-0.6, 480.0)] * 6
    assert "health.response-collapse" not in _verl_steps(tmp_path, rows)


def test_responses_at_nine_tokens_with_a_falling_score_are_a_collapse(tmp_path: Path) -> None:
    rows = [(-0.5, 950.0)] * 6 + [(-0.9, 9.0), (-0.85, 9.5), (-0.95, 8.8), (-0.9, 9.1), (-0.88, 9.4), (-0.91, 9.2)]
    assert "health.response-collapse" in _verl_steps(tmp_path, rows)


def test_verl_run_whose_responses_grow_into_the_cap_is_a_generation_tail_not_a_collapse() -> None:
    report = triage_dir(_case("1271"))
    top = report.findings[0]
    assert (top.rule, top.category) == ("gen.cap-hit-rate", "generation-tail")
    assert top.evidence[0].file == "output.log" and top.evidence[0].text.startswith("step:157 - ")
    assert "inference.max_response_length" in {k.name for k in top.knobs}
    assert not [f for f in report.findings if f.rule in ("health.response-collapse", "health.policy-collapse")]


def test_a_static_pool_risk_of_a_server_that_was_ready_and_never_served_is_information() -> None:
    report = triage_dir(_case("1272"))
    (pool,) = [f for f in report.findings if f.rule == "config.pool-fits-few-sequences"]
    assert pool.severity == "info"
    assert "and was stopped: no request was seen in the pool" in pool.numbers["not_materialised"]
    assert (pool.numbers["pool_tokens"], pool.numbers["sequence_budget"], pool.numbers["full_sequences"],
            pool.numbers["admitted"]) == (833344, 65536, 12, 64)
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_the_same_pool_risk_stays_a_warning_when_the_engine_served(tmp_path: Path) -> None:
    lines = (_case("1272") / "Qwen3VL_vllm-server.out").read_text().splitlines()
    end = next(i for i, ln in enumerate(lines) if "Application startup complete" in ln)
    stats = ("(APIServer pid=1939745) INFO 01-07 02:40:17 [loggers.py:236] Engine 000: Avg prompt throughput: 900.0 "
             "tokens/s, Avg generation throughput: 45.0 tokens/s, Running: 60 reqs, Waiting: 12 reqs, GPU KV cache "
             "usage: 99.1%, Prefix cache hit rate: 0.0%")
    (tmp_path / "server.out").write_text("\n".join(lines[:end + 1] + [stats] * 6) + "\n")
    (pool,) = [f for f in triage_dir(tmp_path).findings if f.rule == "config.pool-fits-few-sequences"]
    assert pool.severity == "warning"


def test_a_log_that_just_ends_after_ready_keeps_the_pool_risk_a_warning(tmp_path: Path) -> None:
    lines = (_case("1272") / "Qwen3VL_vllm-server.out").read_text().splitlines()
    (tmp_path / "server.out").write_text("\n".join(ln for ln in lines if "CANCELLED" not in ln) + "\n")
    (pool,) = [f for f in triage_dir(tmp_path).findings if f.rule == "config.pool-fits-few-sequences"]
    assert pool.severity == "warning"


def test_vllm_launcher_whose_second_start_found_its_port_taken() -> None:
    report = triage_dir(_case("1273"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("other.port-in-use", "other", "error")
    assert (top.evidence[0].file, top.evidence[0].line) == ("vllm_server.log", 178)
    assert top.evidence[0].text == "OSError: [Errno 98] Address already in use"
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_trl_weight_sync_server_with_1690_updates_is_healthy() -> None:
    report = triage_dir(_case("1274"))
    assert all(SEVERITY_RANK[f.severity] > SEVERITY_RANK["warning"] for f in report.findings)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_the_first_launch_s_rejected_flags_are_named_below_the_relaunch_s_port_error() -> None:
    findings = triage_dir(_case("1273")).findings
    assert [f.rule for f in findings[:2]] == ["other.port-in-use", "other.cli-argument-error"]
    cli = findings[1]
    assert (cli.severity, cli.evidence[0].file, cli.evidence[0].line) == ("error", "vllm_server.log", 144)
    assert cli.numbers["what"] == ("unrecognized arguments: --attention-backend FLASHINFER --enable-metrics "
                                   "--metrics-port 8001")


def test_a_launch_that_only_failed_argument_parsing_names_the_flag(tmp_path: Path) -> None:
    (tmp_path / "serve.log").write_text("\n".join([
        "INFO 02-12 18:37:28 __init__.py:190] Automatically detected platform cuda.",
        "usage: vllm serve [-h] [--config CONFIG] [--host HOST] [--port PORT] model_tag",
        "vllm serve: error: the following arguments are required: model_tag",
    ]) + "\n")
    top = triage_dir(tmp_path).findings[0]
    assert (top.rule, top.category, top.severity) == ("other.cli-argument-error", "other", "error")
    assert top.numbers["what"] == "the following arguments are required: model_tag"
    assert top.evidence[0].line == 3
