"""Recognition round 12 (r12b): cold-start deadlines, evaluation-client timeouts, offline vLLM that served.

Readiness deadlines in more launchers' words: tt-inference-server's eval harness ("Service did not become healthy
within 1200.0s" after "Service not ready after 1181.1s, waiting ..."; real-extra 950, tt-inference-server issue 2505)
and text-generation-webui's llama.cpp loader ("Server health check timed out after 28800 seconds", pasted wrapped;
real-extra 951, textgen issue 6907), AReaL's trainer waiting on its generation servers ("Waiting generation servers
timeout"; real-extra 963, AReaL issue 115). lm-evaluation-harness's API client giving up on long generations at its total
HTTP timeout ("Exception:TimeoutError(), undefined, retrying"; real-extra 955, tt-inference-server issue 3105). An
offline vLLM engine (LLM.generate) prints no stats rows, so its `Processed prompts` bar is what shows it served
(vLLM 0.6.6, real-extra 915): a CUDA-graph capture it paid once is information there, as for a server."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, by_rule, knob_names, triage_dir, triage_files

EXTRA = FIXTURES / "real-extra"


@pytest.mark.parametrize("case, file, line, deadline", [
    ("950-tt-inference-vllm-service-not-healthy-within-1200s-core-engine-waiting", "run_evals.log", 8, 1200.0),
    ("951-textgen-llamacpp-server-health-check-timed-out-28800s-slow-storage", "textgen.log", 2, 28800.0),
    # AReaL's trainer gives up on its SGLang generation servers (no number in its words)
    ("963-areal-sglang-generation-servers-flashinfer-jit-waiting-timeout", "main.log", 14, None),
])
def test_the_real_deadlines_are_a_cold_start_naming_the_startup_timeout(case: str, file: str, line: int,
                                                                       deadline: float | None) -> None:
    f = triage_dir(EXTRA / case / "input").findings[0]
    assert (f.rule, f.category, f.severity) == ("cold.startup-not-ready", "cold-start", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers.get("deadline") == deadline
    assert knob_names(f)[0] == "engine.startup_timeout"


def test_an_evaluation_client_timing_out_long_generations_is_a_generation_tail() -> None:
    report = triage_dir(EXTRA / "955-tt-inference-gpt-oss-120b-aime25-request-batches-timeout-1440s-per-it" / "input")
    f = report.findings[0]
    assert (f.rule, f.category, f.severity) == ("gen.eval-client-timeout", "generation-tail", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("evals.log", 1)
    assert knob_names(f)[:2] == ["rollout.timeout", "inference.max_response_length"]


def test_a_timeout_on_another_exception_is_not_that(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"evals.log": "Exception:ValueError('bad json'), undefined, retrying.\n"})
    assert "gen.eval-client-timeout" not in by_rule(report)


OFFLINE_CAPTURE = (
    "INFO 06-30 03:44:24 worker.py:241] Memory profiling takes 1.76 seconds\n"
    "INFO 06-30 03:44:28 model_runner.py:1410] Capturing cudagraphs for decoding.\n"
    "INFO 06-30 03:45:07 model_runner.py:1535] Graph capturing finished in 39 secs, took 0.77 GiB\n"
    "INFO 06-30 03:45:07 llm_engine.py:431] init engine (profile, create kv cache, warmup model) took 45.20 seconds\n"
    "Processed prompts:   0%|          | 0/3000 [00:00<?, ?it/s, est. speed input: 0.00 toks/s, output: 0.00 toks/s]\n"
)


def test_an_offline_engine_that_generated_paid_its_capture_once(tmp_path: Path) -> None:
    done = ("Processed prompts:   0%|          | 7/3000 [00:11<51:24,  1.03s/it, est. speed input: 94.87 toks/s, "
            "output: 10.09 toks/s]\n")
    f = by_rule(triage_files(tmp_path, {"generate.log": OFFLINE_CAPTURE + done}))["cold.startup-capture-slow"]
    assert f.severity == "info"
    assert (f.evidence[0].file, f.evidence[0].line) == ("generate.log", 3)
    assert f.numbers["served_after_ready"] is True


def test_an_offline_engine_that_finished_nothing_keeps_the_warning(tmp_path: Path) -> None:
    f = by_rule(triage_files(tmp_path, {"generate.log": OFFLINE_CAPTURE}))["cold.startup-capture-slow"]
    assert f.severity == "warning"
    assert f.numbers["served_after_ready"] is False


def test_the_vllm_066_offline_run_reports_its_capture_as_information() -> None:
    report = triage_dir(EXTRA / "915-hotpotqa-vllm-066-32b-teacher-15000-prompts-two-preemptions-complete" / "input")
    assert by_rule(report)["cold.startup-capture-slow"].severity == "info"
    assert report.findings[0].category == "serving-oom-retraction"
