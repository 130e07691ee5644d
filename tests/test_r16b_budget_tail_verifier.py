"""Recognition round 16 (r16b): prompt budget, generation tail and verifier wordings in fresh threads.

- LMDeploy's session window: "run out of tokens. session_id=N." / "session=N." when session_len leaves no new token
  (real-extra 1430, lmdeploy issue 2382; 1431, issue 4147) is prompt-budget; its max_new_tokens clamps ("Truncate
  max_new_tokens to N", TurboMind's "`max_new_tokens` is truncated to N") are notes, and a run that only clamps is
  quiet (1432, issue 4224).
- TGI's input limit in its older wording without backticks (1439, SageMaker's TGI) and a TGI / Inference API reply
  saved as a .json file (1436): the file is a server's answer, scanned as text, not a configuration.
- Clients that print the completion budget they computed: ms-swift's "Setting max_tokens: -N" (1445, 1448),
  vLLM's "max_tokens must be at least 1, got 0" under ms-swift GRPO (1446), hal-9100's negative
  max_tokens_to_sample and the proxy's pydantic 422 (1444). A positive remainder is only a clamp.
- A GRPO reward that grades with GPT and says its call failed, "Error in GPT evaluation: Connection error." (1449,
  X-R1 issue 42): verifier, the judge's endpoint and key.
"""

from __future__ import annotations

from conftest import FIXTURES, knob_names, top, triage_dir, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK

EXTRA = FIXTURES / "real-extra"


def _case(name: str):
    return triage_dir(next(EXTRA.glob(name + "-*")) / "input")


def _loud(report) -> list:
    return [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


def test_lmdeploy_run_out_of_tokens_is_the_session_window_not_an_unexplained_error():
    f = top(_case("1430"))
    assert (f.category, f.rule, f.severity) == ("prompt-budget", "prompt.lmdeploy-session-exhausted", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("pipeline.log", 2)]
    assert f.numbers["session"] == 0
    assert knob_names(f)[0] == "inference.max_context_length"


def test_turbomind_clamps_reveal_session_len_for_the_exhausted_session():
    report = _case("1431")
    f = top(report)
    assert (f.category, f.rule) == ("prompt-budget", "prompt.lmdeploy-session-exhausted")
    assert [(e.file, e.line) for e in f.evidence] == [("api_server.log", 10)]
    assert f.numbers["session"] == 119
    knob = next(k for k in f.knobs if k.name == "inference.max_context_length")
    assert knob.current == 65536
    clamp = next(x for x in report.findings if x.rule == "prompt.lmdeploy-max-new-tokens-clamped")
    assert clamp.severity == "info"
    assert (clamp.numbers["input_tokens"], clamp.numbers["response_tokens"]) == (66, 65469)


def test_clamping_every_request_to_session_len_is_no_failure():
    report = _case("1432")
    assert not _loud(report)
    assert [f.rule for f in report.findings] == ["prompt.lmdeploy-max-new-tokens-clamped"]


def test_lmdeploy_api_client_session_message_is_the_same_family(tmp_path):
    report = triage_files(tmp_path, {"client.log": "WARNING: exceed session max length. Please end the session.\n"})
    assert (top(report).category, top(report).rule) == ("prompt-budget", "prompt.lmdeploy-session-exhausted")


def test_tgi_input_limit_without_backticks_names_the_input_budget_and_its_value():
    f = top(_case("1439"))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.tgi-input-validation")
    assert [(e.file, e.line) for e in f.evidence] == [("chatbot.log", 1)]
    assert (f.numbers["input_limit"], f.numbers["input_tokens"]) == (1024, 1416)
    knob = next(k for k in f.knobs if k.name == "miles.rollout_max_prompt_len")
    assert knob.current == 1024


def test_a_saved_server_reply_json_is_read_as_evidence():
    f = top(_case("1436"))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.tgi-input-validation")
    assert [(e.file, e.line) for e in f.evidence] == [("response.json", 3)]
    assert (f.numbers["context_length"], f.numbers["input_tokens"], f.numbers["response_tokens"]) == (4096, 8740, 500)


def test_a_json_configuration_is_still_a_configuration(tmp_path):
    # a run config saved as JSON that mentions the same words is not scanned as a log
    report = triage_files(tmp_path, {"run_config.json": (
        '{"inference": {"max_context_length": 4096},\n "note": "Input validation error: `inputs` must have less '
        'than 1024 tokens. Given: 1416"}\n')})
    assert not [f for f in report.findings if f.rule == "prompt.tgi-input-validation"]


def test_ms_swift_negative_completion_budget_carries_its_arithmetic():
    f = top(_case("1445"))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.completion-budget-exhausted")
    assert [(e.file, e.line) for e in f.evidence] == [("infer.log", 1)]
    assert (f.numbers["context_length"], f.numbers["input_tokens"], f.numbers["remaining_tokens"]) == (8192, 14115, -5923)
    assert next(k for k in f.knobs if k.name == "inference.max_context_length").current == 8192


def test_ms_swift_yarn_run_whose_effective_window_stayed_40960():
    f = top(_case("1448"))
    assert (f.rule, f.numbers["context_length"], f.numbers["remaining_tokens"]) == (
        "prompt.completion-budget-exhausted", 40960, -77484)
    assert [(e.file, e.line) for e in f.evidence] == [("infer.log", 6)]


def test_ms_swift_positive_clamp_alone_is_quiet(tmp_path):
    report = triage_files(tmp_path, {"train.log": (
        "[WARNING:swift] max_model_len(10240) - num_tokens(1505) < max_tokens(10240). Setting max_tokens: 8735\n"
        "[WARNING:swift] max_model_len(10240) - num_tokens(1485) < max_tokens(10240). Setting max_tokens: 8755\n")})
    assert not [f for f in report.findings if f.category == "prompt-budget"]


def test_grpo_colocated_vllm_zero_budget_ends_the_rank():
    f = top(_case("1446"))
    assert (f.category, f.rule, f.numbers["remaining_tokens"]) == (
        "prompt-budget", "prompt.completion-budget-exhausted", 0)
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 10)]


def test_hal_negative_max_tokens_to_sample_and_the_proxys_422():
    f = top(_case("1444"))
    assert (f.category, f.rule, f.numbers["remaining_tokens"]) == (
        "prompt-budget", "prompt.completion-budget-exhausted", -223)
    assert ("hal.log", 1) in [(e.file, e.line) for e in f.evidence]
    assert "inference.max_context_length" in knob_names(f)


def test_gpt_judge_reward_connection_error_is_the_verifier():
    f = top(_case("1449"))
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.judge-call-failed", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 5)]
    assert f.numbers["error"] == "Connection error."
    assert knob_names(f)[0] == "judge.api_key"


def test_the_policy_clients_connection_error_is_not_the_judge(tmp_path):
    report = triage_files(tmp_path, {"orchestrator.log": (
        "2025-12-02 03:58:17 - verifiers.envs.CrystalRelaxationMultiTurnEnv - ERROR - Error getting model response: "
        "Connection error.\n")})
    assert not [f for f in report.findings if f.rule == "verifier.judge-call-failed"]
