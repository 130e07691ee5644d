"""Recognition round 22 (r22a): complete public run logs, failed and healthy (real-extra 2140-2152).

- verl GRPO console logs of an LLM-agent economics project: one run to 300/300 with a 5,319 s final validation
  (2140) and one copied at step 192 of 300 (2141); the same project's simulate.py dying on an UnboundLocalError
  before any generation (2142).
- A vLLM 0.9.1 server under WSL whose whole life is its start: 224 s of weight loading from a Windows drive
  (cold.startup-load-slow, 2143).
- An EasyR1-on-NPU weight-sync loop against SGLang 0.5.12 that passes (2144); a hand-written GRPO loop on MPS
  printing "is result truncated? False" for every sample and finishing (2145).
- W&B output.log files of a JAX PPO project (classic RL): three trace-time code errors (2146-2148), a healthy CartPole
  run at the 500-return cap (2149), and an operator's Ctrl-C inside a JAX host callback, printed as
  "XlaRuntimeError: INTERNAL: CustomCall failed: CpuCallback error: Traceback ..." around "KeyboardInterrupt:" (2150).
- A stable-baselines3 smoke run (2151) and a TRL GRPO W&B offline run directory (2152) that finished.
- Round 2: an agent-evolution runner whose scoring service answers "/evaluate failed with HTTP 400" (missing
  eval_token; runner tail + service log, 2153), an OCR API server's lone 500 (2154), a vLLM router proxy that serves
  (2155), a CLLM distillation run dying on an IndexError in its dataset (2156).
Blind 15/17 by category (2143 labelled none blind, relabelled cold-start after reading the whole log; 2153 other
instead of verifier; 2142, 2146-2148 and 2156 right only by the fatal-exit fallback; 2150 right but with an
"unclassified" warning leading). Fixed: the stop's echo takes in an exception whose message carries the traceback
that ends in the stop marker (JAX callback wrappers); verifier.scoring-service-http-error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse


@pytest.mark.parametrize("case", ["2140", "2141", "2144", "2145", "2149", "2151", "2152"])
def test_complete_healthy_runs_get_no_warning(case: str):
    report = triage_dir(extra_input(case))
    assert warnings_or_worse(report) == []


def test_vllm_server_whose_life_is_a_slow_weight_load():
    f = top(triage_dir(extra_input("2143")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-load-slow", "warning")
    assert [(e.file, e.line) for e in f.evidence][0] == ("vllm.log", 24)
    assert f.numbers["seconds"] == pytest.approx(223.75)
    assert "engine.load_format" in knob_names(f)


@pytest.mark.parametrize("case,exception,line", [
    ("2142", "UnboundLocalError", ("sim_v5_new.log", 17)),
    ("2146", "ValueError", ("output.log", 66)),
    ("2147", "AssertionError", ("output.log", 13)),
    ("2148", "KeyError", ("output.log", 23)),
])
def test_script_errors_end_the_run_as_other(case: str, exception: str, line: tuple[str, int]):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    assert f.numbers["exception"] == exception
    assert line in [(e.file, e.line) for e in f.evidence]


def test_ctrl_c_inside_a_jax_host_callback_is_the_operator_stop():
    report = triage_dir(extra_input("2150"))
    assert warnings_or_worse(report) == []
    f = top(report)
    assert (f.rule, f.numbers["signal"]) == ("other.orderly-shutdown", "SIGINT")
    assert [(e.file, e.line) for e in f.evidence] == [("output.log", 1371)]
    assert not [g for g in report.findings if g.category == "unclassified"]


def _callback_run(wrapper: str, inner: str) -> str:
    return ("global step=653312, episodic return=406.9367980957031\n"
            "Traceback (most recent call last):\n"
            '  File "/home/u/ppo.py", line 281, in <module>\n'
            "    out = train_jit(rng)\n"
            f"{wrapper}Traceback (most recent call last):\n"
            '  File "/home/u/ppo.py", line 281, in <module>\n'
            '  File "/opt/conda/lib/python3.11/site-packages/jax/_src/callback.py", line 91, in pure_callback_impl\n'
            f"{inner}\n"
            "--------------------\n"
            "For simplicity, JAX has removed its internal frames from the traceback of the following exception. "
            "Set JAX_TRACEBACK_FILTERING=off to include these.\n")


@pytest.mark.parametrize("wrapper", [
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CustomCall failed: CpuCallback error: ",  # jaxlib 0.4.x
    "jax.errors.JaxRuntimeError: INTERNAL: CpuCallback error calling callback: ",  # jaxlib with the FFI callback
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Generated function failed: CpuCallback error: ",
])
def test_callback_wrapper_around_ctrl_c_is_no_failure(tmp_path: Path, wrapper: str):
    report = triage_files(tmp_path, {"output.log": _callback_run(wrapper, "KeyboardInterrupt: ")})
    assert warnings_or_worse(report) == []
    assert top(report).rule == "other.orderly-shutdown"


def test_callback_wrapper_around_a_real_error_still_gates(tmp_path: Path):
    text = _callback_run("jax.errors.JaxRuntimeError: INTERNAL: CpuCallback error calling callback: ",
                         "ValueError: operands could not be broadcast together with shapes (640,3) (640,)")
    report = triage_files(tmp_path, {"output.log": text})
    f = top(report)
    assert (f.category, f.severity) == ("other", "error")


@pytest.mark.parametrize("case", ["2155"])
def test_round2_healthy_service_logs(case: str):
    assert warnings_or_worse(triage_dir(extra_input(case))) == []


def test_scoring_service_refuses_the_evaluate_call():
    report = triage_dir(extra_input("2153"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.scoring-service-http-error", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("runner_tail.log", 26)
    assert (f.numbers["status"], f.numbers["service"]) == (400, "eval service")
    assert knob_names(f)[0] == "judge.api_key"
    assert not [g for g in report.findings if g.rule == "other.fatal-exit"]


@pytest.mark.parametrize("line", [
    "WARNING:root:Reward server returned 400 Bad Request.",
    "GameAutomationError: reward server returned HTTP 503",
])
def test_scoring_service_status_wordings(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"runner.log": "step 3: scoring 16 candidates\n" + line + "\n"})
    f = top(report)
    assert (f.category, f.rule) == ("verifier", "verifier.scoring-service-http-error")


def test_reward_count_mismatch_is_not_a_status(tmp_path: Path):
    report = triage_files(tmp_path, {"runner.log": "ValueError: Reward server returned 400 rewards for 512 samples\n"})
    assert not [f for f in report.findings if f.rule == "verifier.scoring-service-http-error"]


def test_ocr_server_lone_500_is_other_without_gate():
    report = triage_dir(extra_input("2154"))
    f = top(report)
    assert f.category == "other"
    assert [(e.file, e.line) for e in f.evidence][0] == ("api_server.log", 56)
    assert warnings_or_worse(report) == []


def test_cllm_dataset_indexerror_is_the_fatal_exit():
    f = top(triage_dir(extra_input("2156")))
    assert (f.category, f.rule, f.numbers["exception"]) == ("other", "other.fatal-exit", "IndexError")
