"""Recognition round 18 (r18a): complete public run logs (real-extra 1700-1714).

- A vLLM `Processed prompts` bar at minutes per prompt is a generation tail only when the responses are long: the
  bar's output speed times the seconds per finished prompt is the mean response of a finished prompt, and 256 tokens
  at 0.15 tok/s (vLLM 0.14 on ROCm, its kernels still being tuned, 1705) is a slow engine whose cold start is the
  finding, not a tail of long generations (gen.slow-generation's `min_tokens_per_prompt`).
- A provider that refuses calls for want of credit (DeepInfra "You need positive balance", DeepSeek/OpenRouter 402
  "Insufficient Balance"/"Insufficient credits", OpenAI 429 insufficient_quota, Anthropic "credit balance is too
  low"): other.api-credit-exhausted outside the judge (1710, a data-generation script), verifier.judge-credit-exhausted
  on the verifier side.
- Retries a client logged and went on with (python-backoff "Backing off f(...) for 0.8s (openai.RateLimitError...)",
  tenacity "Retrying f in 4.0 seconds as it raised ...", openai's "Retrying request to ...") are information
  (other.api-call-retried), not verifier.llm-client-error; the give-up line still is.
- AITER's hipcc flag probe on non-CDNA GPUs ("... is not supported by hipcc.", "failed to execute:...clang++ ... -x
  hip -E -P /dev/null", clang's "Unknown command line argument '-amdgpu-...'") is harmless start-up noise (info).
- Blind right, kept right: vLLM start-up OOMs inside inductor's autotuning/benchmarking (HIP 1700, CUDA 1701), three
  requests over a 2,048 context (1702), an import-time build mismatch and a tokenizer failure (1703, 1704, other),
  healthy servers, SFT and eval logs (1706, 1708, 1709, 1711, 1712, 1714), a llama.cpp ROCm HSA exception (1713),
  vLLM 0.23's free memory below the utilization on four workers (1715), a GRPO and a PPO LoRA trainer on MPS that
  print their sampled answers in full and finished (1716, 1717).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse

SIX = {"prompt-budget", "serving-oom-retraction", "trainer-oom", "cold-start", "generation-tail", "verifier"}


def test_rocm_benchmark_slow_from_its_cold_start_is_not_a_generation_tail():
    r = triage_dir(extra_input("1705"))
    rules = {f.rule for f in r.findings}
    assert "gen.slow-generation" not in rules
    f = top(r)  # the capture, 72x its threshold, before the compile at 1.4x (s19: phases rank by how far over)
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-capture-slow", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm_results.log", 48)]
    assert f.numbers["seconds"] == 2173
    # the 82.62 s torch.compile is under the compile warning's 120 s (r20a: healthy first boots print up to 113 s);
    # the start-up summary still names it, and the engine init (which holds it) names the compile cache
    phases = next(x for x in r.findings if x.rule == "cold.startup-phases")
    assert phases.numbers["startup_phases"]["compile"] == 82.62
    assert "compile.cache" in knob_names(next(x for x in r.findings if x.rule == "cold.startup-init-slow"))
    assert "cold.startup-compile-slow" not in rules


LONG_BAR = ("Processed prompts:   7%|▋         | 32/480 [1:51:04<21:22:43, 171.79s/it, est. speed input: 0.69 toks/s, "
            "output: 186.83 toks/s]\n")
SHORT_BAR = ("Processed prompts:   5%|▌         | 1/20 [28:18<8:57:42, 1698.05s/it, est. speed input: 0.01 toks/s, "
             "output: 0.15 toks/s]\n")


def test_slow_generation_needs_long_responses(tmp_path: Path):
    long_run = triage_files(tmp_path / "long", {"eval.log": LONG_BAR})
    f = top(long_run)
    assert (f.category, f.rule) == ("generation-tail", "gen.slow-generation")
    assert f.numbers["output_toks_s"] == 186.83
    short_run = triage_files(tmp_path / "short", {"eval.log": SHORT_BAR})
    assert "gen.slow-generation" not in {x.rule for x in short_run.findings}


def test_datagen_out_of_credit_is_other_not_the_judge():
    r = triage_dir(extra_input("1710"))
    f = top(r)
    assert (f.category, f.rule, f.severity) == ("other", "other.api-credit-exhausted", "error")
    assert f.numbers["message"] == "You need positive balance to do inference"
    assert [(e.file, e.line) for e in f.evidence][:2] == [("generate_length_data.log", 14006),
                                                        ("generate_length_data.log", 16002)]
    assert not [x for x in r.findings if x.category in SIX and x.severity in ("error", "warning")]
    retried = next(x for x in r.findings if x.rule == "other.api-call-retried")
    assert retried.severity == "info" and retried.count > 1000


CREDIT = [
    # DeepInfra (real-extra 1710)
    "openai.APIStatusError: Error code: 402 - {'detail': {'error': 'You need positive balance to do inference. Please "
    "add balance manually or setup top-up'}}",
    # DeepSeek
    "openai.APIStatusError: Error code: 402 - {'error': {'message': 'Insufficient Balance', 'type': 'unknown_error', "
    "'param': None, 'code': 'invalid_request_error'}}",
    # OpenRouter
    "RuntimeError: Error code: 402 - {'error': {'message': 'Insufficient credits. This account never purchased "
    "credits.', 'code': 402}}",
    # OpenAI
    "openai.RateLimitError: Error code: 429 - {'error': {'message': 'You exceeded your current quota, please check "
    "your plan and billing details.', 'type': 'insufficient_quota', 'param': None, 'code': 'insufficient_quota'}}",
    # Anthropic
    "anthropic.BadRequestError: Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', "
    "'message': 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing.'}}",
]


@pytest.mark.parametrize("line", CREDIT)
def test_out_of_credit_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path / "gen", {"generate_data.log": line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.api-credit-exhausted")
    j = top(triage_files(tmp_path / "judge", {"judge.log": line + "\n"}))
    assert (j.category, j.rule) == ("verifier", "verifier.judge-credit-exhausted")
    assert "judge.api_key" in knob_names(j)


@pytest.mark.parametrize("line", [
    "[2025-08-02 22:44:53,357 | INFO]: Backing off get_model_answer_long_short(...) for 0.8s (openai.RateLimitError: "
    "Error code: 429 - {'error': {'message': 'Rate limited'}})",
    "WARNING:__main__:Retrying __main__.generate in 4.0 seconds as it raised RateLimitError: Error code: 429.",
    "INFO:openai._base_client:Retrying request to /chat/completions in 0.445560 seconds",
])
def test_a_retried_call_is_information(tmp_path: Path, line: str):
    r = triage_files(tmp_path, {"client.log": line + "\n"})
    assert [(f.rule, f.severity) for f in r.findings] == [("other.api-call-retried", "info")]


def test_a_give_up_after_retries_is_still_the_judge_clients(tmp_path: Path):
    line = "Giving up get_model_answer(...) after 5 tries (openai.RateLimitError: Error code: 429 - {'error': {}})\n"
    f = top(triage_files(tmp_path, {"train.log": line}))
    assert (f.category, f.rule) == ("verifier", "verifier.llm-client-error")


def test_aiter_flag_probe_is_start_up_noise():
    r = triage_dir(extra_input("1704"))
    probe = next(f for f in r.findings if f.rule == "other.aiter-hipcc-flag-probe")
    assert probe.severity == "info" and probe.count == 4
    assert not [f for f in r.findings if f.rule == "unclassified"]
    f = top(r)
    assert (f.category, f.rule) == ("other", "other.fatal-exit")


@pytest.mark.parametrize("case,line,tried", [("1700", 155, 0.078125), ("1701", 183, 1.02)])
def test_vllm_startup_oom_inside_inductor_autotuning(case: str, line: int, tried: float):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.engine-cuda-oom", "error")
    assert (f.evidence[0].line, f.numbers["tried"]) == (line, tried)
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


def test_free_memory_below_the_utilization_on_four_workers():
    f = top(triage_dir(extra_input("1715")))
    assert (f.category, f.rule, f.count) == ("serving-oom-retraction", "serving.startup-free-memory-short", 4)
    assert "inference.sglang_mem_fraction_static" in knob_names(f)


def test_requests_over_a_2048_context():
    f = top(triage_dir(extra_input("1702")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert (f.numbers["context_length"], f.numbers["total_tokens"], f.count) == (2048, 5418, 3)
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm_server.log", 116)
    assert "inference.max_context_length" in knob_names(f)


def test_judge_server_whose_life_was_its_cold_start():
    f = top(triage_dir(extra_input("1707")))
    assert (f.category, f.rule, f.numbers["seconds"]) == ("cold-start", "cold.startup-compile-slow", 447.22)
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm_judge.log", 252)


@pytest.mark.parametrize("case", ["1706", "1708", "1709", "1711", "1712", "1714", "1716", "1717"])
def test_healthy_complete_logs_raise_nothing_in_the_six(case: str):
    r = triage_dir(extra_input(case))
    assert not [f for f in r.findings if f.category in SIX and f.severity in ("error", "warning")]
    assert not warnings_or_worse(r)


@pytest.mark.parametrize("case,rule", [("1703", "other.fatal-exit"), ("1713", "other.cuda-error")])
def test_failures_outside_the_six(case: str, rule: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", rule)


# transformers' ProgressCallback (2025 ->) prints every float as f"{v:.4g}": a quoted string in the dict line
QUOTED_GRPO = ("{'loss': '0.01', 'grad_norm': '0.5', 'learning_rate': '1e-06', 'num_tokens': '1.2e+05', "
               "'completions/mean_length': '512', 'completions/min_length': '512', 'completions/max_length': '512', "
               "'completions/clipped_ratio': '1', 'completions/mean_terminated_length': '0', "
               "'rewards/accuracy_reward/mean': '0', 'reward': '0', 'reward_std': '0', 'frac_reward_zero_std': '1', "
               "'kl': '0.001', 'entropy': '0.5', 'epoch': '0.0%d'}\n")


def test_quoted_values_of_the_newer_transformers_console_are_metrics(tmp_path: Path):
    text = "".join(QUOTED_GRPO % i for i in range(1, 7))
    r = triage_files(tmp_path, {"train.log": text})
    rules = [f.rule for f in r.findings]
    assert rules[:3] == ["gen.cap-hit-rate", "gen.mean-length-at-cap", "verifier.rewards-degenerate"]
    assert (top(r).numbers["metric"], top(r).numbers["max"]) == ("completions/clipped_ratio", 1.0)


def test_llamafactory_quoted_loss_lines_are_read():
    r = triage_dir(extra_input("1711"))
    health = next(f for f in r.findings if f.rule == "health.summary")
    assert "grad_norm finite" in health.numbers["arithmetic"]


@pytest.mark.parametrize("name", ["output.log", "console.log", "nohup.out"])
def test_a_trl_console_with_reward_keys_is_the_trainers(name: str):
    from triage.input.discover import decide_kind
    quoted = "".join(QUOTED_GRPO % i for i in range(1, 7))
    assert decide_kind(name, quoted) == "trainer"
    assert decide_kind(name, quoted.replace("'0", "0").replace("'1", "1").replace("'5", "5")) == "trainer"
    # a scorer's own log still reads as the verifier's
    scorer = "".join(f"[reward] sample {i}: reward=0.0 (compute_score: no boxed answer)\n" for i in range(6))
    assert decide_kind(name, scorer) == "verifier"
