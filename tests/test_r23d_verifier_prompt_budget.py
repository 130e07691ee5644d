"""Recognition round 23 (r23d): verifiers/judges and prompt budgets (real-extra 2310-2326).

- A code-execution sandbox's client refused at the service's run endpoint is the verifier's even when neither the
  host nor the client says "sandbox": Code-Runner-Sandbox's SDK, "Max retries exceeded with url: /code/run ...
  Connection refused" (2310, sides.yaml verifier marker), like RAGFlow's 'sandbox-executor-manager' host and
  SandboxFusion's /run_code; an engine's /generate refused stays out.
- Anthropic's output-cap refusal "max_tokens: R > M, which is the maximum allowed number of output tokens for
  <model>" (OpenHands via litellm, 2317; Claude Code's wrapped paste) and Bedrock's "The maximum tokens you
  requested exceeds the model limit of M" are the completion cap (prompt.completion-cap-too-large), while
  "prompt is too long: N tokens > M maximum" stays a prompt over the window.
- E2B's own "The sandbox was not found: This error is likely due to sandbox timeout" (Python and JS SDKs) is an
  expired sandbox, a warning from the first line (verifier.sandbox-expired, 2322); open-r1's "Error from E2B
  executor: ..." wrapper stays verifier.sandbox-api-error.
- A row a data loader drops for its length and goes on (ms-swift "..., deleted.", 2321; LLaMA-Factory "Dropped
  lengthy example") is a warning, prompt.rows-dropped-for-length; the raised MaxLengthError stays
  prompt.framework-length-check (2320).
- Blind-right cases pinned on their rules: an OpenAI context overflow reserving 1024 completion tokens (2314), HF
  generate's max_length filled by the prompt (2315), a persistent agent's history over the context size (2316), a
  conversation over Anthropic's 200k window (2318), a stop-hook judge whose transcript does not fit its window
  (2319, the judge's context), an LLM-judge metric timing out (2311), and the healthy runs with alarming lines:
  tokenizer over-length notices (2312, 2313, 2326), math_verify's "Timeout is disabled" (2323), zero-format-reward
  debug lines (2324). The GPT-2 position overflow seen only as CUDA's index assert (2325) stays a CUDA error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse
from domain import SIX

# -- a code sandbox's run endpoint refusing ------------------------------------------------------------------------


def test_code_runner_sdk_refused_at_code_run_is_the_verifier() -> None:
    report = triage_dir(extra_input("2310"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.judge-api-error", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("client.log", 1)]
    assert f.numbers["side"] == "verifier"
    assert "verifier.reward_function" in knob_names(f)
    assert not [g for g in report.findings if g.rule == "unclassified"]


@pytest.mark.parametrize("line", [
    # RAGFlow's code component (issue 13276): the executor's host names the sandbox
    "Exception executing code: HTTPConnectionPool(host='sandbox-executor-manager', port=9385): Max retries exceeded "
    "with url: /run (Caused by NewConnectionError(\"HTTPConnection(host='sandbox-executor-manager', port=9385): Failed "
    "to establish a new connection: [Errno 111] Connection refused\"))",
    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='10.0.0.7', port=9983): Max retries exceeded with "
    "url: /code/run (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f00>: Failed to "
    "establish a new connection: [Errno 111] Connection refused'))",
])
def test_other_code_sandboxes_refusing_are_the_verifier(tmp_path: Path, line: str) -> None:
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.judge-api-error")


def test_an_engines_generate_refused_is_not_a_sandbox(tmp_path: Path) -> None:
    line = ("requests.exceptions.ConnectionError: HTTPConnectionPool(host='10.0.0.5', port=30000): Max retries exceeded "
            "with url: /generate (Caused by NewConnectionError('Failed to establish a new connection: [Errno 111] "
            "Connection refused'))\n")
    report = triage_files(tmp_path, {"train.log": line})
    assert not [g for g in report.findings if g.category == "verifier"]


# -- Anthropic's and Bedrock's output cap -----------------------------------------------------------------------------


def test_openhands_claude_max_tokens_over_the_output_cap_is_the_completion_cap() -> None:
    f = top(triage_dir(extra_input("2317")))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.completion-cap-too-large", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("openhands.log", 5)]
    assert (f.numbers["response_tokens"], f.numbers["response_limit"]) == (128000, 64000)
    assert knob_names(f)[0] == "inference.max_response_length"


@pytest.mark.parametrize("line, limit", [
    # Claude Code issue 24451: the UI wraps the message after "number of"
    ("API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"max_tokens: 128001 > "
     "64000, which is the maximum allowed number of", 64000),
    # litellm issue 14051
    ("{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"max_tokens: 128000 > 64000, which "
     "is the maximum allowed number of output tokens for claude-3-7-sonnet-20250219\"}", 64000),
    # Bedrock Converse (aws-solutions-library-samples IDP issue 204)
    ("ValidationException: An error occurred (ValidationException) when calling the Converse operation: The model "
     "returned the following errors: The maximum tokens you requested exceeds the model limit of 200000", 200000),
])
def test_every_output_cap_wording_is_the_completion_cap(tmp_path: Path, line: str, limit: int) -> None:
    f = top(triage_files(tmp_path, {"agent.log": line + "\n"}))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.completion-cap-too-large")
    assert f.numbers["response_limit"] == limit


def test_a_conversation_over_anthropics_window_is_the_prompt_not_the_cap() -> None:
    f = top(triage_dir(extra_input("2318")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert (f.numbers["input_tokens"], f.numbers["context_length"]) == (200251, 200000)
    assert [(e.file, e.line) for e in f.evidence] == [("shelley.log", 1)]


# -- an expired E2B sandbox ---------------------------------------------------------------------------------------------


def test_e2b_sandbox_not_found_is_an_expired_sandbox_from_one_line() -> None:
    f = top(triage_dir(extra_input("2322")))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.sandbox-expired", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("backend.log", 1)]
    assert knob_names(f) == ["verifier.timeout"]


def test_e2b_js_sdks_wording_is_the_same_expired_sandbox(tmp_path: Path) -> None:
    line = ("Failed to create ZIP: {\"sandboxId\":\"in2kimr1q7se53aseu4z5\",\"message\":\"The sandbox was not found\","
            "\"code\":502}: This error is likely due to sandbox timeout. You can modify the sandbox timeout by passing "
            "'timeoutMs' when starting the sandbox or calling '.setTimeout' on the sandbox with the desired timeout.\n")
    f = top(triage_files(tmp_path, {"app.log": line}))
    assert (f.category, f.rule) == ("verifier", "verifier.sandbox-expired")


def test_open_r1s_e2b_executor_wrapper_stays_the_sandbox_api_error(tmp_path: Path) -> None:
    line = "Error from E2B executor: The sandbox was not found: This error is likely due to sandbox timeout.\n"
    report = triage_files(tmp_path, {"train.log": line * 3})
    assert top(report).rule == "verifier.sandbox-api-error"
    assert "verifier.sandbox-expired" not in by_rule(report)


# -- rows dropped for their length ----------------------------------------------------------------------------------


def test_ms_swift_rows_deleted_for_length_are_a_warning() -> None:
    report = triage_dir(extra_input("2321"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.rows-dropped-for-length", "warning")
    assert (f.numbers["input_tokens"], f.numbers["max_length"]) == (2210, 2048)
    assert [(e.file, e.line) for e in f.evidence][0] == ("sft.log", 1)
    assert knob_names(f) == ["miles.rollout_max_prompt_len", "inference.max_context_length"]
    assert "prompt.framework-length-check" not in [g.rule for g in report.findings if g.severity == "error"]


def test_llamafactorys_dropped_lengthy_example_is_the_same_warning(tmp_path: Path) -> None:
    line = "[WARNING|supervised.py:173] 2025-03-01 10:00:00,000 >> Dropped lengthy example with length 5120 > 4096.\n"
    f = top(triage_files(tmp_path, {"train.log": line}))
    assert (f.rule, f.severity) == ("prompt.rows-dropped-for-length", "warning")
    assert (f.numbers["input_tokens"], f.numbers["max_length"]) == (5120, 4096)


def test_a_raised_maxlengtherror_stays_the_framework_length_check() -> None:
    f = top(triage_dir(extra_input("2320")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.framework-length-check")
    assert (f.numbers["input_tokens"], f.numbers["max_length"]) == (5762, 2048)
    assert [(e.file, e.line) for e in f.evidence][0] == ("preprocess.log", 11)


# -- blind-right cases ------------------------------------------------------------------------------------------------


def test_h2ogpt_openai_overflow_reserving_1024_completion_tokens() -> None:
    f = top(triage_dir(extra_input("2314")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert (f.numbers["input_tokens"], f.numbers["response_tokens"], f.numbers["context_length"]) == (3672, 1024, 4097)
    assert "inference.max_response_length" in knob_names(f)


def test_hf_generate_max_length_filled_by_the_prompt() -> None:
    f = top(triage_dir(extra_input("2315")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.generate-length-exceeded")
    assert (f.numbers["input_tokens"], f.numbers["context_length"]) == (1000, 1000)
    assert "inference.max_response_length" in knob_names(f)


def test_a_persistent_agents_history_over_the_context_size() -> None:
    f = top(triage_dir(extra_input("2316")))
    assert (f.category, f.rule) == ("prompt-budget", "vocabulary.prompt-over-budget")
    assert [(e.file, e.line) for e in f.evidence] == [("agent.log", 1)]


def test_a_stop_hook_judges_transcript_over_its_window_is_the_judges_context() -> None:
    f = top(triage_dir(extra_input("2319")))
    assert (f.category, f.rule) == ("verifier", "verifier-results.judge-context")
    assert knob_names(f)[0] == "judge.max_context_length"
    assert f.numbers["affected"] == 2


def test_an_llm_judge_metric_timing_out_is_the_verifier() -> None:
    f = top(triage_dir(extra_input("2311")))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert "verifier.timeout" in knob_names(f)


@pytest.mark.parametrize("case", ["2312", "2313", "2323", "2324", "2326"])
def test_healthy_runs_with_alarming_verifier_or_length_lines(case: str) -> None:
    report = triage_dir(extra_input(case))
    assert not [f for f in report.findings if f.category in SIX and f.severity in ("warning", "error", "critical")]


def test_tokenizer_notices_are_only_info(tmp_path: Path) -> None:
    f = top(triage_dir(extra_input("2326")))
    assert (f.rule, f.severity) == ("prompt.tokenizer-sequence-too-long", "info")
    assert (f.numbers["input_tokens"], f.numbers["context_length"]) == (159603, 131072)


def test_gpt2_position_overflow_seen_only_as_cudas_index_assert_stays_a_cuda_error() -> None:
    report = triage_dir(extra_input("2325"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.cuda-error")
    assert warnings_or_worse(report)[0] == "other.cuda-error"
