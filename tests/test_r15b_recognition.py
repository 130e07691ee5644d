"""Recognition round 15 (r15b): verifier tracebacks cut before their exception line, and the verifier's caught errors.

- A traceback through reward code whose exception line is missing ends in its innermost frame (or the `raise X(...)`
  statement echoed under it), wherever the paste cut it: at the log's end (real-extra 1220 Skywork-OR1 issue 49, 1222
  open-r1 issue 427, 1223 TRL PR 5281) or before other lines go on; that frame is the evidence, not a trailing source
  line, a caret line or Hydra's HYDRA_FULL_ERROR hint.
- The math graders' equality checks are reward code by their function names (Hendrycks MATH's is_equiv, Qwen2.5-Math's
  grader math_equal / symbolic_equal / numeric_equal), never a tensor framework's own function of the same name.
- A traceback pasted from its first frame, without its header, still ends in the reward function's exception (1221,
  RL Swarm issue 176).
- verl's trainer prints "Error in reward_fn: ..." when the reward manager's call with return_dict raises, and calls it
  again: info, not a failure (1224, RAGEN issue 89).
- Ray's memory monitor killing the driver for host RAM is other, never trainer-oom (1225, verl issue 529).
"""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, top, triage_dir, triage_files
from domain import SIX

from triage.parsers import signals

EXTRA = FIXTURES / "real-extra"

# Skywork-OR1 issue 49 (verl main_task, Math-Verify): the traceback's frames as pasted, without the logger's
# "Error during comparison" line, then the step records the run printed after it (verl's console logger), so the
# traceback is cut in the middle of the log.
SKYWORK_FRAMES = (
    "(main_task pid=2992) Traceback (most recent call last):\n"
    '(main_task pid=2992)   File "/usr/local/miniconda3/lib/python3.10/site-packages/math_verify/grader.py", line 809,'
    " in compare_single_extraction_wrapper\n"
    "(main_task pid=2992)     return compare_single_extraction(g, t)\n"
    '(main_task pid=2992)   File "/usr/local/miniconda3/lib/python3.10/site-packages/math_verify/grader.py", line 667,'
    " in sympy_expr_eq\n"
    "(main_task pid=2992)     return sympy_compare_relational(gold, pred, float_rounding, numeric_precision)\n"
    '(main_task pid=2992)   File "/usr/local/miniconda3/lib/python3.10/site-packages/math_verify/grader.py", line 275,'
    " in sympy_solve_and_compare\n"
)
VERL_STEPS = "".join(
    f"(main_task pid=2992) step:{i} - critic/score/mean:0.41 - critic/rewards/mean:0.41 - response_length/mean:812.4\n"
    for i in range(12, 24))


def test_a_math_verify_traceback_cut_at_the_logs_end_ends_in_its_innermost_frame():
    report = triage_dir(EXTRA / "1223-trl-accuracy-reward-worker-thread-math-verify-parse-signal-traceback-cut" / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.reward-exception", "error")
    # the frame line, not the source line under it nor Python 3.13's caret line after that
    assert [(e.file, e.line) for e in f.evidence] == [("run.log", 7)]
    assert "math_verify/parser.py" in f.evidence[0].text
    assert {"verifier.reward_function", "verifier.timeout"} <= set(knob_names(f))


def test_sympy_frames_under_a_grpo_trainer_end_in_the_last_sympy_frame():
    report = triage_dir(EXTRA / "1222-open-r1-grpo-sympy-relational-canonical-traceback-cut-before-typeerror" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 30)]
    assert "sympy/core/relational.py" in f.evidence[0].text


def test_a_logged_math_verify_comparison_error_cut_before_its_exception_is_the_verifiers():
    report = triage_dir(EXTRA / "1220-skywork-or1-verl-math-verify-error-during-comparison-traceback-cut-then-stalls"
                        / "input")
    f = top(report)
    assert (f.category, f.rule) == ("verifier", "verifier.comparison-error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert not [g for g in report.findings if g.category in SIX and g.category != "verifier"]


def test_a_reward_traceback_cut_in_the_middle_of_the_log_is_a_reward_exception(tmp_path: Path):
    report = triage_files(tmp_path, {"train.log": SKYWORK_FRAMES + "(main_task pid=2992) ...\n" + VERL_STEPS})
    f = by_rule(report)["verifier.reward-exception"]
    assert f.category == "verifier"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 6)]  # the innermost frame, sympy_solve_and_compare
    assert "sympy_solve_and_compare" in f.evidence[0].text


def test_the_same_frames_without_reward_code_stay_unjudged(tmp_path: Path):
    # A cut traceback through no reward code and logged at no error level says nothing about which process failed.
    frames = SKYWORK_FRAMES.replace("math_verify/grader.py", "mylib/utils.py").replace(
        "compare_single_extraction_wrapper", "wrapper").replace("sympy_expr_eq", "helper").replace(
        "sympy_solve_and_compare", "inner")
    report = triage_files(tmp_path, {"train.log": frames + VERL_STEPS})
    assert "verifier.reward-exception" not in by_rule(report)


def test_hydras_hint_after_a_cut_reward_traceback_is_not_its_evidence(tmp_path: Path):
    # verl's Hydra entry point prints its HYDRA_FULL_ERROR hint after the traceback (verl issue 3478's log shape).
    text = (
        "Traceback (most recent call last):\n"
        '  File "/workspace/verl/verl/trainer/ppo/reward.py", line 160, in compute_reward\n'
        "    reward_result = reward_fn(data, return_dict=True)\n"
        '  File "/workspace/verl/verl/workers/reward_manager/naive.py", line 100, in __call__\n'
        "    score = self.compute_score(\n"
        "\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
    f = by_rule(triage_files(tmp_path, {"train.log": text}))["verifier.reward-exception"]
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 4)]


def test_frames_without_a_traceback_header_end_in_the_reward_functions_exception():
    report = triage_dir(EXTRA / "1221-rl-swarm-stage3-final-correctness-reward-nonetype-frames-without-header" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert [(e.file, e.line) for e in f.evidence] == [("swarm.log", 12)]
    assert "verifier.reward_function" in knob_names(f)


def test_math_grader_equality_checks_are_reward_frames():
    # Hendrycks MATH's is_equiv as verl ships it; Qwen2.5-Math's evaluation/grader.py.
    assert signals.is_reward_frame('File "/workspace/simpleRL/utils/math_utils.py", line 188, in is_equiv')
    assert signals.is_reward_frame('File "/workspace/Qwen2.5-Math/evaluation/grader.py", line 120, in math_equal')
    assert signals.is_reward_frame('File "/workspace/Qwen2.5-Math/evaluation/grader.py", line 301, in symbolic_equal')
    # JAX's shape polymorphism compares dimensions with a symbolic_equal of its own: not a grader
    assert not signals.is_reward_frame(
        'File "/usr/lib/python3.11/site-packages/jax/_src/export/shape_poly.py", line 1020, in symbolic_equal')
    # an engine's speculative-decoding verify stays the engine's
    assert not signals.is_reward_frame(
        'File "/usr/lib/python3.11/site-packages/sglang/srt/speculative/eagle_worker.py", line 300, in verify')


def test_a_cut_traceback_through_a_grader_names_the_grader(tmp_path: Path):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/workspace/simpleRL/train.py", line 210, in <module>\n'
        "    trainer.train()\n"
        '  File "/workspace/Qwen2.5-Math/evaluation/grader.py", line 120, in math_equal\n'
        "    if symbolic_equal(prediction, reference):\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 4)]


def test_verls_caught_reward_fn_error_is_information_not_a_failure():
    report = triage_dir(EXTRA / "1224-ragen-verl-error-in-reward-fn-reward-extra-info-non-critical" / "input")
    f = by_rule(report)["verifier.reward-fn-retried"]
    assert (f.category, f.severity) == ("verifier", "info")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert f.numbers.get("error") == "'reward_extra_info'"
    assert not [g for g in report.findings if g.category in SIX and g.severity in ("error", "warning")]


def test_a_reward_fn_error_followed_by_the_retry_failing_is_the_reward_exception(tmp_path: Path):
    # the retry raised too: its traceback through the reward manager is the failure, the printed line only context
    text = (
        "(TaskRunner pid=7) Error in reward_fn: 'ground_truth'\n"
        "(TaskRunner pid=7) Traceback (most recent call last):\n"
        '(TaskRunner pid=7)   File "/workspace/verl/verl/workers/reward_manager/naive.py", line 74, in __call__\n'
        '(TaskRunner pid=7)     ground_truth = data_item.non_tensor_batch["reward_model"]["ground_truth"]\n'
        "(TaskRunner pid=7) KeyError: 'ground_truth'\n")
    report = triage_files(tmp_path, {"train.log": text})
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("verifier", "verifier.reward-exception", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 5)]


def test_rays_host_memory_kill_of_the_driver_is_other_not_trainer_oom():
    report = triage_dir(EXTRA / "1225-verl-ray-host-oom-main-task-killed-generate-sequences-top-users" / "input")
    f = top(report)
    assert f.category == "other" and f.rule == "other.host-oom"
    # the exception line first; the kill details (line 3) and the top-memory-users table's header (line 4) are read
    # since s16, the last of them shown as the last occurrence
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 2), ("train.log", 4)]
    assert f.count == 3
    assert not [g for g in report.findings if g.category == "trainer-oom"]


def test_a_stack_dump_through_reward_code_in_the_middle_of_a_log_is_not_a_reward_exception(tmp_path: Path):
    # faulthandler's dump of every thread (here from a hang), one thread standing in the reward function: no thread
    # raised, and the lines after it show the run going on.
    text = (
        "Thread 0x00007f3a2bfff700 (most recent call first):\n"
        '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n'
        '  File "/workspace/verl/verl/utils/reward_score/math.py", line 40 in is_equiv\n'
        '  File "/workspace/verl/verl/workers/reward_manager/naive.py", line 100 in __call__\n'
        "\n" + VERL_STEPS)
    assert "verifier.reward-exception" not in by_rule(triage_files(tmp_path, {"train.log": text}))
