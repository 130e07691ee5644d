"""Whole public run logs, s14 (real-extra 1164-1177): vLLM servers and verl runs, healthy and failing.

- A Ctrl-C through vLLM 0.7's engine loop logs the stop's message first ("ERROR ... engine.py:389] MQLLMEngine
  terminated", logger.exception), then the traceback that ends in "KeyboardInterrupt: MQLLMEngine terminated":
  the echo and the traceback's head are the stop, not an unexplained error outranking it (1164). A different
  error logged before such a traceback is still reported.
- vLLM's Ray executor giving up on its placement group ("Cannot provide a placement group of
  placement_group_specs=[...] within 1800 seconds") is a start-up that failed (cold-start, error), ranked above the
  waits before it and the API server's "Engine process failed to start" wrapper (1165).
- vLLM V1's start-up line "Initializing a V1 LLM engine (vX) with config:" is no dump of a failed step (1167, 1168).
- A judge API that rejects the credentials ("Error code: 401 - {...}", openai.AuthenticationError) is a verifier
  failure (1178); a Hub download refused with 401 is not.
- Healthy servers and trainer runs, finished, idle or stopped on purpose, end with information only.
"""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, knob_names, top, triage_dir, triage_files, warnings_or_worse
from conftest import extra_input as case

from triage.report.gate import scan_exit


def exit_of(report) -> int:
    return scan_exit(report.findings, "error", complete=report.coverage_complete)


def test_a_ctrl_c_traceback_and_its_logged_echo_are_the_stop_not_an_unexplained_error() -> None:
    report = triage_dir(case("1164-"))
    assert warnings_or_worse(report) == []
    assert not [f for f in report.findings if f.category == "unclassified"]
    stop = by_rule(report)["other.orderly-shutdown"]
    assert (stop.evidence[0].file, stop.evidence[0].line) == ("vllm.log", 624)
    assert stop.numbers["signal"] == "SIGINT"
    assert exit_of(report) == 0


def test_an_error_logged_before_a_ctrl_c_traceback_is_still_reported(tmp_path: Path) -> None:
    """Only the line that repeats the interrupt's own message is its echo."""
    report = triage_files(tmp_path, {"vllm.log": (
        "INFO 04-18 15:05:40 engine.py:270] Added request chatcmpl-1.\n"
        "ERROR 04-18 15:05:58 engine.py:135] Shard 3 checksum mismatch while swapping blocks\n"
        "ERROR 04-18 15:05:59 engine.py:389] MQLLMEngine terminated\n"
        "ERROR 04-18 15:05:59 engine.py:389] Traceback (most recent call last):\n"
        'ERROR 04-18 15:05:59 engine.py:389]   File "/x/vllm/engine/multiprocessing/engine.py", line 374, in signal_handler\n'
        'ERROR 04-18 15:05:59 engine.py:389]     raise KeyboardInterrupt("MQLLMEngine terminated")\n'
        "ERROR 04-18 15:05:59 engine.py:389] KeyboardInterrupt: MQLLMEngine terminated\n"
    )})
    texts = [e.text for f in report.findings if f.category == "unclassified" for e in f.evidence]
    assert any("Shard 3 checksum mismatch" in t for t in texts)
    assert not any(t.endswith("] MQLLMEngine terminated") for t in texts)


def test_a_placement_group_that_never_came_is_a_failed_start() -> None:
    report = triage_dir(case("1165-"))
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("cold.ray-placement-timeout", "cold-start", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm_new_setup.log", 33), ("vllm_new_setup.log", 88)]
    assert f.numbers["seconds"] == 1800
    assert knob_names(f) == ["ray.placement_resources"]
    assert warnings_or_worse(report) == ["cold.ray-placement-timeout"]
    assert by_rule(report)["other.exception-wrapper-header"].severity == "info"
    assert exit_of(report) == 1


def test_the_v1_engine_start_line_is_no_failure_dump() -> None:
    for prefix in ("1167-", "1168-"):
        assert "other.engine-failure-dump" not in by_rule(triage_dir(case(prefix))), prefix


def test_a_kv_pool_that_preempts_at_full_usage_warns_and_names_the_memory_share() -> None:
    f = top(triage_dir(case("1167-")))
    assert (f.rule, f.category, f.severity) == ("serving.kv-pool-saturated", "serving-oom-retraction", "warning")
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


def test_a_verl_run_with_almost_no_capped_responses_has_only_the_ordinary_batch_tail() -> None:
    # 180 steps whose slowest agent-loop sample is often the step's longest response at about twice the mean sample
    # time, but clip_ratio averages 0-0.3%: the normal tail of a synchronous rollout, not a rollout held up by capped
    # generations (gen.slowest-sample-tail's min_clip_ratio); nothing in the six at warning, nothing gates
    report = triage_dir(case("1169-"))
    assert "gen.slowest-sample-tail" not in {f.rule for f in report.findings}
    assert not [f for f in report.findings if f.category == "generation-tail" and f.severity != "info"]
    assert exit_of(report) == 0


def test_a_sigkilled_sweep_run_is_a_failure_outside_the_six() -> None:
    report = triage_dir(case("1176-"))
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("other.killed-sigkill", "other", "error")
    assert {(e.file, e.line) for e in f.evidence} == {("longhorizon_pipeline.log", 15), ("watchdog.log", 79)}


def test_healthy_or_stopped_complete_runs_end_with_information_only() -> None:
    for prefix in ("1166-", "1168-", "1170-", "1173-", "1174-", "1175-", "1177-"):
        report = triage_dir(case(prefix))
        assert not [f for f in report.findings if f.severity != "info" and f.category not in ("other", "unclassified")], prefix
        assert exit_of(report) == 0, prefix
    for prefix in ("1168-", "1170-", "1173-", "1174-", "1175-", "1177-"):
        assert warnings_or_worse(triage_dir(case(prefix))) == [], prefix


def test_a_judge_that_rejects_the_token_is_a_verifier_failure() -> None:
    """EvalScope's LLM judge on ModelScope answered 401 (1178); a Hub download refused the same way is not a judge."""
    report = triage_dir(case("1178-"))
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("verifier.judge-auth-error", "verifier", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("eval_0826.log", 272), ("eval_0826.log", 273)]
    assert f.numbers["status"] == 401
    assert knob_names(f) == ["judge.api_key"]
    assert warnings_or_worse(report) == ["verifier.judge-auth-error"]
    assert exit_of(report) == 1


def test_a_hub_download_refused_with_401_is_not_the_judge(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 3, in <module>\n'
        "    AutoConfig.from_pretrained(name)\n"
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json\n"
    )})
    assert "verifier.judge-auth-error" not in by_rule(report)


def test_an_exception_chained_before_the_interrupt_is_still_reported(tmp_path: Path) -> None:
    """Only the part of a traceback chain that ends in KeyboardInterrupt is the stop."""
    report = triage_files(tmp_path, {"train.log": (
        "step:3 - actor/pg_loss:0.1\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 40, in step\n'
        "    run_batch()\n"
        "RuntimeError: shard index table is inconsistent\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 44, in step\n'
        "    time.sleep(5)\n"
        "KeyboardInterrupt\n"
    )})
    texts = [e.text for f in report.findings for e in f.evidence if f.severity != "info"]
    assert "RuntimeError: shard index table is inconsistent" in texts
