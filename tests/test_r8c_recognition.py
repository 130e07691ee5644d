"""Recognition round 8 (r8c): a 2026 vLLM wording of the prompt-budget rejection, and py-spy stack dumps that show a
process waiting in a collective.

vLLM's OpenAI server checks a request before tokenizing it and answers 400 "You passed N input tokens|characters and
requested M output tokens. However, the model's context length is only C tokens, resulting in a maximum input length
of C-M tokens": real-extra 805 (AgentTeams issue 346, 2026-03, 32,000 output tokens requested of a 32K context) and a
committed agent transcript (2026-04, found by exact-string search; the index names no repository). A hang is often
reported with only a py-spy dump: real-extra 803 (ms-swift issue 8506, 2026, rank 0 inside vLLM's symmetric-memory
all_reduce) and accelerate issue 3104 (2024, a DeepSpeed ZeRO-3 thread in all_gather_into_tensor)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, top, triage_dir, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"

# The transcript line as committed (an agent's chat log, 2026-04-16).
VLLM_YOU_PASSED_TOKENS = (
    'assistant: 三方请求失败: 400 {"error":{"message":"You passed 27905 input tokens and requested 4096 output tokens. '
    "However, the model's context length is only 32000 tokens, resulting in a maximum input length of 27904 tokens. "
    'Please reduce the length of the input prompt. (parameter=input_tokens, value=27905)","type":"BadRequestError",'
    '"param":"input_tokens","code":400}}\n'
)

# accelerate issue 3104, a py-spy dump of one rank of a hung DeepSpeed ZeRO-3 job, as pasted.
ACCELERATE_DUMP = """\
Thread 42 (idle): "MainThread"
    backward (torch/autograd/__init__.py:266)
    backward (torch/_tensor.py:522)
    backward (deepspeed/runtime/fp16/loss_scaler.py:63)
    backward (deepspeed/runtime/zero/stage3.py:2213)
    wrapped_fn (deepspeed/utils/nvtx.py:15)
    backward (deepspeed/runtime/engine.py:1976)
    wrapped_fn (deepspeed/utils/nvtx.py:15)
    backward (accelerate/utils/deepspeed.py:166)
    backward (accelerate/accelerator.py:2126)
    training_loop (src/model_back/healing/scripts/fine_tune_accelerate.py:410)
    training_function (src/model_back/healing/scripts/fine_tune_accelerate.py:540)
    main (src/model_back/healing/scripts/fine_tune_accelerate.py:583)
    <module> (src/model_back/healing/scripts/fine_tune_accelerate.py:587)
Thread 928 (idle): "Thread-1"
    wait (threading.py:324)
    wait (threading.py:607)
    run (tqdm/_monitor.py:60)
    _bootstrap_inner (threading.py:1016)
    _bootstrap (threading.py:973)
Thread 4076 (idle)
Thread 4077 (idle)
Thread 4078 (idle)
Thread 4079 (active)
    all_gather_into_tensor (torch/distributed/distributed_c10d.py:2709)
    wrapper (torch/distributed/c10d_logger.py:72)
    all_gather_into_tensor (deepspeed/comm/torch.py:219)
    _fn (torch/_dynamo/eval_frame.py:489)
    all_gather_into_tensor (deepspeed/comm/comm.py:305)
    log_wrapper (deepspeed/comm/comm.py:117)
"""


def _warnings_in_six(report) -> list:
    return [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


def test_vllm_you_passed_characters_is_a_prompt_budget_rejection() -> None:
    report = triage_dir(EXTRA / "805-vllm-serve-openai-client-input-plus-32000-output-over-context" / "input")
    f = top(report)
    assert (f.rule, f.severity, f.count) == ("prompt.context-length-exceeded", "error", 2)
    assert (f.evidence[0].file, f.evidence[0].line) == ("client.log", 1)
    assert (f.numbers["context_length"], f.numbers["response_tokens"]) == (32000, 32000)
    assert "inference.max_response_length" in knob_names(f)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_vllm_you_passed_tokens_is_the_same_rejection(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"agent.log": VLLM_YOU_PASSED_TOKENS}))
    assert f.rule == "prompt.context-length-exceeded"
    assert (f.numbers["input_tokens"], f.numbers["response_tokens"], f.numbers["context_length"]) == (27905, 4096, 32000)


def test_a_py_spy_dump_inside_vllms_all_reduce_is_a_hang_in_a_collective() -> None:
    report = triage_dir(EXTRA / "803-ms-swift-grpo-qwen35-hang-step105-pyspy-vllm-allreduce" / "input")
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("other.stack-dump-in-collective", "other", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("py-spy-dump.txt", 3)  # the innermost collective frame
    assert not _warnings_in_six(report)


def test_a_deepspeed_all_gather_in_a_py_spy_dump_is_the_same_hang(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"dump.txt": ACCELERATE_DUMP})
    f = by_rule(report)["other.stack-dump-in-collective"]
    assert (f.evidence[0].file, f.evidence[0].line) == ("dump.txt", 25)
    assert top(report).rule == "other.stack-dump-in-collective"


def test_python_traceback_frames_are_not_a_stack_dump(tmp_path: Path) -> None:
    log = ('Traceback (most recent call last):\n'
           '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 2709, in all_gather_into_tensor\n'
           '    work = group.allgather_into_tensor_coalesced(output_tensors, input_tensors, opts)\n'
           'RuntimeError: boom\n')
    assert "other.stack-dump-in-collective" not in by_rule(triage_files(tmp_path, {"train.log": log}))


def test_a_missing_overlong_filtering_field_is_not_a_generation_tail() -> None:
    report = triage_dir(EXTRA / "802-nemo-rl-gym-overlong-filtering-keyerror-truncated" / "input")
    assert top(report).rule == "other.fatal-exit"
    assert not [f for f in report.findings if f.category == "generation-tail"]


def test_healthy_prime_rl_orchestrator_lines_raise_nothing() -> None:
    for case in ("800-prime-rl-orchestrator-zero-advantage-filter-async-barrier",
                 "807-prime-rl-orchestrator-gsm8k-steps-28-52-seq-len-growth"):
        report = triage_dir(EXTRA / case / "input")
        assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= 1], case


def test_a_verifier_timeout_outranks_the_collective_timeouts_it_caused() -> None:
    report = triage_dir(EXTRA / "806-open-r1-grpo-math-verify-timeout-then-nccl-allgather-watchdog" / "input")
    rules = [f.rule for f in report.findings]
    assert rules[:2] == ["verifier.timeout-exception", "other.nccl-watchdog-timeout"]
    assert (report.findings[0].evidence[0].file, report.findings[0].evidence[0].line) == ("train.log", 8)
