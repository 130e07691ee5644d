"""Recognition round 22 (r22d): never force a wrong category, and prompt budgets outside the big engines
(real-extra 2200-2219, and 972/973 re-read).

- wandb.init failing before the first step (init timeout, "Error communicating with wandb process", no API key on
  a batch node, the service not starting) is the tracker's: other.tracker-init-failed, not an unexplained line
  nor a rollout or verifier timeout (2202-2204, 2217, 2218; wandb's own errors of a run in flight stay
  other.tracker-client-error). Caught by the script and followed by steps, it is only noted (if_went_on).
- A CUDA device fault raised under reward code (a reward model's forward in TRL's get_reward, 2206) is a device
  fault (other.cuda-error), not a reward function's bug; a plain exception there stays verifier.reward-exception.
- Axolotl's and mistral-common's chat-template errors are other.chat-template-error (2207).
- SiliconFlow's "length of prompt_tokens (N) must be less than max_seq_len (M)" is a prompt over the context
  (prompt.context-length-exceeded, 2215).
- An engine weight loader's shape check (SGLang's param.size() assert in a slime weight sync, vLLM's
  param_data.shape assert and its fused-MoE "shard_dim=0 is not a valid data dimension", cosmos-rl's shape
  mismatch) is other.weight-load-shape-mismatch (2219).
- Blind-right cases pinned on their rules: NCCL watchdog timeouts around checkpoint saves (2200, 2201), a GRPO
  device-side assert (2205), a flash-attn ABI mismatch in a Ray job (2208), a vLLM worker's TCPStore port
  collision (2209), a gated repo in CI (2210), TGI's and llama-cpp-python's budget checks (2211-2214) and a
  tokenizer's over-length notice that is only a warning (2216).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse
from domain import SIX

# -- the experiment tracker that never started ----------------------------------------------------------------------


@pytest.mark.parametrize("case, file, line, what", [
    ("2202", "train.log", 3, "Run initialization has timed out"),
    ("2203", "train.log", 1, "Run initialization has timed out"),
    ("2204", "train.log", 7, "Error communicating with wandb process"),
    ("2217", "train.log", 17, "api_key not configured"),
    ("2218", "train.log", 1, "api_key not configured"),
    ("972-", "run.log", 4, "Run initialization has timed out"),
    ("973-", "train.log", 9, "Error communicating with wandb process"),
])
def test_wandb_init_failure_is_the_trackers(case: str, file: str, line: int, what: str) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.tracker-init-failed", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers["what"] == what
    assert not f.knobs
    assert not [g for g in report.findings if g.category in SIX]
    # wandb's exit hook after any uncaught exception ("wandb: ERROR Abnormal program exit", 973) is no init failure
    assert all(e.text.endswith("Abnormal program exit") for g in report.findings if g.rule == "unclassified"
               for e in g.evidence)


def test_wandb_init_timeout_reports_its_seconds() -> None:
    f = top(triage_dir(extra_input("2203")))
    assert float(f.numbers["seconds"]) == 90.0


def test_a_caught_init_failure_followed_by_steps_is_only_noted(tmp_path: Path) -> None:
    steps = "".join(f"step:{i} - actor/pg_loss:0.01 - actor/grad_norm:0.5 - critic/score/mean:0.3\n" for i in range(1, 6))
    report = triage_files(tmp_path, {"train.log": "wandb: ERROR Run initialization has timed out after 90.0 sec. \n"
                                                  + steps})
    assert by_rule(report)["other.tracker-init-failed"].severity == "info"
    assert not warnings_or_worse(report)


@pytest.mark.parametrize("line", [
    # wandb 0.15's service (sdk/service/service.py)
    "wandb.sdk.service.service.ServiceStartTimeoutError: Timed out waiting for wandb service to start after 30.0 "
    "seconds. Try increasing the timeout with the `_service_wait` setting.",
    # sdk/wandb_login.py, under a Ray actor's prefix (EasyR1's main_task)
    "(main_task pid=55440) wandb.errors.errors.UsageError: api_key not configured (no-tty). call "
    "wandb.login(key=[your_api_key])",
])
def test_other_tracker_start_wordings(tmp_path: Path, line: str) -> None:
    f = top(triage_files(tmp_path, {"train.log": "INFO starting\n" + line + "\n"}))
    assert (f.rule, f.evidence[0].line) == ("other.tracker-init-failed", 2)


def test_wandb_errors_in_flight_stay_the_client_error(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": "wandb: Network error (ReadTimeout), entering retry loop.\n"})
    assert "other.tracker-init-failed" not in by_rule(report)


# -- a device fault under reward code ------------------------------------------------------------------------------

REWARD_CHAIN = """\
Traceback (most recent call last):
  File "/workspace/verl/verl/trainer/ppo/ray_trainer.py", line 1042, in fit
    reward_tensor = self.reward_fn(batch)
  File "/workspace/verl/verl/workers/reward_manager/naive.py", line 84, in __call__
    score = self.compute_score(
  File "/workspace/verl/verl/utils/reward_score/__init__.py", line 40, in default_compute_score
    res = gsm8k.compute_score(solution_str, ground_truth)
{final}
"""


def test_device_side_assert_in_a_reward_models_forward_is_a_cuda_error() -> None:
    report = triage_dir(extra_input("2206"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.cuda-error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert not [g for g in report.findings if g.category == "verifier"]


@pytest.mark.parametrize("final, rule", [
    ("RuntimeError: CUDA error: device-side assert triggered", "other.cuda-error"),
    ("torch.AcceleratorError: CUDA error: an illegal memory access was encountered", "other.cuda-error"),
    ("KeyError: 'ground_truth'", "verifier.reward-exception"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "trainer.cuda-oom"),
])
def test_whose_failure_a_reward_chain_ends_in(tmp_path: Path, final: str, rule: str) -> None:
    f = top(triage_files(tmp_path, {"train.log": REWARD_CHAIN.format(final=final)}))
    assert (f.rule, f.evidence[0].line) == (rule, 8)


def test_kernel_assertions_just_before_a_cut_reward_traceback_keep_it_a_cuda_error(tmp_path: Path) -> None:
    asserts = ("../aten/src/ATen/native/cuda/Indexing.cu:1290: indexSelectLargeIndex: block: [121,0,0], "
               "thread: [94,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n")
    cut = REWARD_CHAIN.format(final="").rstrip("\n") + "\n"
    report = triage_files(tmp_path, {"train.log": asserts + cut})
    assert top(report).rule == "other.cuda-error"
    assert "verifier.reward-exception" not in by_rule(report)


# -- chat templates, prompt budgets, weight loaders ---------------------------------------------------------------


def test_axolotl_jinja_choice_without_template_is_a_chat_template_error() -> None:
    f = top(triage_dir(extra_input("2207")))
    assert (f.category, f.rule) == ("other", "other.chat-template-error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 6)


def test_siliconflow_prompt_tokens_over_max_seq_len_is_prompt_budget() -> None:
    f = top(triage_dir(extra_input("2215")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert (f.evidence[0].file, f.evidence[0].line) == ("ragflow.log", 1)
    assert (int(f.numbers["input_tokens"]), int(f.numbers["context_length"])) == (48322, 32768)
    assert {"miles.rollout_max_prompt_len", "inference.max_context_length"} <= set(knob_names(f))
    assert any("memory" in n.lower() for n in f.not_knobs)


def test_weight_sync_shape_assert_is_the_weight_loaders() -> None:
    f = top(triage_dir(extra_input("2219")))
    assert (f.category, f.rule) == ("other", "other.weight-load-shape-mismatch")
    assert (f.evidence[0].file, f.evidence[0].line) == ("engine.log", 1)


VLLM_LOADER = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/linear.py", line 1500, in weight_loader
    assert param_data.shape == loaded_weight.shape
AssertionError
"""


def test_vllm_bare_assertion_under_the_echoed_shape_check(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"worker.log": VLLM_LOADER})
    assert top(report).rule == "other.weight-load-shape-mismatch"
    assert not [g for g in report.findings if g.category in SIX]


def test_fused_moe_refit_shard_dim(tmp_path: Path) -> None:
    line = "(VllmGenerationWorker pid=2211) ValueError: shard_dim=0 is not a valid data dimension for a 3D tensor " \
           "(expected 1 or 2)"
    f = top(triage_files(tmp_path, {"driver.log": line + "\n"}))
    assert f.rule == "other.weight-load-shape-mismatch"
    assert (int(f.numbers["shard_dim"]), int(f.numbers["ndim"])) == (0, 3)


# -- the blind-right cases, on their rules ------------------------------------------------------------------------


@pytest.mark.parametrize("case, rule, file, line", [
    ("2200", "other.nccl-watchdog-timeout", "train.log", 1),
    ("2201", "other.nccl-watchdog-timeout", "train.log", 1),
    ("2205", "other.cuda-error", "train.log", 1),
    ("2208", "other.import-error", "driver.log", 4),
    ("2209", "other.port-in-use", "driver.log", 6),
    ("2210", "other.hub-access-denied", "ci.log", 1),
])
def test_failures_outside_the_six_stay_other(case: str, rule: str, file: str, line: int) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule) == ("other", rule)
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert not [g for g in report.findings if g.category in SIX and g.severity != "info"]


@pytest.mark.parametrize("case, rule, file, numbers, knob", [
    ("2211", "prompt.tgi-input-validation", "server.log",
     {"context_length": 1512, "input_tokens": 1000, "response_tokens": 1024}, "inference.max_response_length"),
    ("2212", "prompt.tgi-input-validation", "client.log",
     {"context_length": 2048, "input_tokens": 1244, "response_tokens": 1000}, "inference.max_context_length"),
    ("2213", "prompt.tgi-input-validation", "client.log", {"input_limit": 1024, "input_tokens": 1168},
     "miles.rollout_max_prompt_len"),
    ("2214", "prompt.llamacpp-context-exceeded", "run.log", {}, "inference.max_context_length"),
])
def test_serving_budget_checks_are_prompt_budget(case: str, rule: str, file: str, numbers: dict[str, int],
                                                 knob: str) -> None:
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.evidence[0].file) == ("prompt-budget", rule, file)
    assert {k: int(f.numbers[k]) for k in numbers} == numbers
    assert knob in knob_names(f)
    assert any("memory" in n.lower() for n in f.not_knobs)


def test_a_tokenizers_over_length_notice_alone_is_no_problem() -> None:
    report = triage_dir(extra_input("2216"))
    assert not warnings_or_worse(report)
