"""Round 2, verifier and generation tail: message families found on fresh public cases (fixtures/real-extra
161-171) and checked on a second wording from another source. Each test asserts the rule, the evidence file:line
and the knob on real lines."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, top, triage_dir, triage_files

EXTRA = FIXTURES / "real-extra"


def _case(name: str):
    return triage_dir(EXTRA / name / "input")


def _knobs(f) -> set[str]:
    return {k.name for k in f.knobs}


def test_math_verify_threaded_message_is_the_verifier() -> None:
    # verl#3407: async rollout, the Math-Verify >= 0.8 message; verl scores every sample 0
    f = top(_case("162-verl-async-math-verify-threaded-zero-score"))
    assert (f.rule, f.category, f.severity) == ("verifier.threaded-signal-timeout", "verifier", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert "verifier.reward_function" in _knobs(f)


def test_grader_signal_error_on_the_line_is_the_verifier() -> None:
    # VLMEvalKit#1329: the grader named on the same line (mathv.py post_check)
    f = top(_case("164-vlmevalkit-mathv-post-check-signal-warning"))
    assert (f.rule, f.category) == ("verifier.threaded-signal-timeout", "verifier")
    assert (f.evidence[0].file, f.evidence[0].line) == ("eval.log", 1)


def test_signal_error_inside_math_verify_frames_is_the_verifier() -> None:
    # Math-Verify#50: a verl driver's traceback through math_verify/grader.py, then "Error comparing"
    f = top(_case("163-verl-main-task-math-verify-error-comparing-signal"))
    assert f.category == "verifier"
    assert any(e.line == 8 and "signal only works" in e.text for e in f.evidence), f.evidence


def test_signal_error_from_an_engine_start_is_not_the_verifier(tmp_path: Path) -> None:
    # vLLM V1 AsyncLLMEngine built outside the main thread (vllm#13806): same ValueError, no grader around it
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/site-packages/vllm/v1/engine/async_llm.py", line 120, in __init__\n'
            "    handler = _signal.signal(_enum_to_int(signalnum), _enum_to_int(handler))\n"
            "ValueError: signal only works in main thread of the main interpreter\n")
    rep = triage_files(tmp_path, {"server.log": text})
    assert not [f for f in rep.findings if f.rule == "verifier.threaded-signal-timeout"]
    assert not [f for f in rep.findings if f.category == "verifier"]


def test_hub_read_timeout_is_not_a_verifier_timeout() -> None:
    # open-instruct#620: the vLLM actor reading the model from huggingface.co
    rep = _case("165-open-instruct-llmrayactor-hf-hub-read-timeout")
    assert not [f for f in rep.findings if f.category == "verifier"]


def test_sandbox_read_timeout_is_still_the_verifier(tmp_path: Path) -> None:
    # verl retool + SandboxFusion (verl#3478 wording; the host is the sandbox, not a hub)
    line = ("(ExecutionWorker pid=121256) ERROR:2025-09-15 15:36:24,702:Case 0: API error occurred: API Call Failed: "
            "API Request Error: HTTPConnectionPool(host='0.0.0.0', port=12322): Read timed out. (read timeout=70)\n")
    f = top(triage_files(tmp_path, {"driver.log": line}))
    assert (f.rule, f.category) == ("verifier.timeout", "verifier")


def test_gateway_timeout_on_rollouts_is_generation_tail() -> None:
    # verifiers#103: the env's rollout calls to the policy server get 504 "Request timed out"
    f = top(_case("166-verifiers-env-rollout-504-request-timed-out"))
    assert (f.rule, f.category) == ("gen.gateway-timeout", "generation-tail")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert "rollout.timeout" in _knobs(f)


def test_gateway_timeout_after_retries_is_generation_tail() -> None:
    # evalscope#318: long reasoning generations behind a Squid proxy, 504 after 3 attempts
    f = top(_case("167-evalscope-remote-api-504-after-retries"))
    assert (f.rule, f.category) == ("gen.gateway-timeout", "generation-tail")
    assert f.numbers.get("attempts") == 3
    assert (f.evidence[0].file, f.evidence[0].line) == ("eval.log", 3)


def test_gateway_timeout_of_a_judge_stays_the_verifier(tmp_path: Path) -> None:
    # the same 504 raised inside a reward function's judge call is the verifier's (frames name the reward code)
    text = ("Traceback (most recent call last):\n"
            '  File "/work/verl/utils/reward_score/llm_judge.py", line 41, in compute_score\n'
            "    chat_response = client.chat.completions.create(\n"
            "openai.InternalServerError: Error code: 504 - {'error': 'Request timed out.'}\n")
    f = top(triage_files(tmp_path, {"driver.log": text}))
    assert f.category == "verifier", (f.rule, f.category)


def test_request_retried_while_running_is_generation_tail() -> None:
    # verl PR #1138 thread: the OpenAI client's retry of a long generation with the same request id
    f = top(_case("171-verl-async-rollout-openai-retry-request-already-running"))
    assert (f.rule, f.category) == ("gen.request-retried-while-running", "generation-tail")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 3)
    assert {"rollout.timeout", "inference.max_response_length"} <= _knobs(f)


def test_request_retried_while_running_vllm_v1_wording(tmp_path: Path) -> None:
    # rllm#330: vLLM V1 output_processor raising on rLLM's trajectory retry
    text = ('  File ".../site-packages/vllm/v1/engine/output_processor.py", line 286, in add_request\n'
            '    raise ValueError(f"Request id {request_id} already running.")\n'
            "ValueError: Request id a654c2bf-8b68-4c2a-8bff-c6182a1e48f5 already running.\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.rule, f.category) == ("gen.request-retried-while-running", "generation-tail")
    assert f.evidence[0].line == 3
