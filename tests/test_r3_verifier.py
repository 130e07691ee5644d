"""Round 3, verifier: message families found on fresh public cases (fixtures/real-extra 301-314), each checked on
wordings from several projects. Each test asserts the rule, the evidence file:line, the numbers and the knob on
real lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, top, triage_dir, triage_files
from domain import SIX

from triage.parsers import signals

EXTRA = FIXTURES / "real-extra"


def _case(name: str):
    return triage_dir(EXTRA / name / "input")


def _knobs(f) -> set[str]:
    return {k.name for k in f.knobs}


@pytest.mark.parametrize("case, line, func", [
    # ms-swift ORM: the dataset lacks the `solution` column CosineReward needs (ms-swift#3840)
    ("303-ms-swift-grpo-cosine-reward-missing-solution-column", 3, "CosineReward"),
    # TRL GRPOTrainer._calculate_rewards: a user function declaring `completions` positionally (trl#4825)
    ("304-trl-grpo-formatting-reward-func-multiple-values-completions", 4, "formatting_reward_func"),
    # an older TRL calling reward functions positionally, open-r1's take **kwargs (open-r1#13)
    ("310-open-r1-grpo-format-reward-func-positional-trl-version", 7, "format_reward_func"),
    # the rank prefix cut as pasted (`rank2]:`), another rank's traceback after it (open-r1#384)
    ("311-small-doge-trl-grpo-len-reward-missing-solutions", 1, "len_reward"),
])
def test_reward_call_signature_is_the_verifier(case: str, line: int, func: str) -> None:
    f = top(_case(case))
    assert (f.rule, f.category, f.severity) == ("verifier.reward-call-signature", "verifier", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", line)
    assert f.numbers.get("reward_function") == func
    assert _knobs(f) == {"verifier.reward_function"}


def test_a_non_reward_signature_error_is_not_the_verifier(tmp_path: Path) -> None:
    # TRL's own CLI script (trl#3455): the same family of Python error, in the launcher, no reward function named
    rep = _case("314-trl-cli-grpo-unboundlocalerror-reward-model-variable")
    assert top(rep).category not in SIX
    assert not [f for f in rep.findings if f.category == "verifier"]
    # a model's forward() called with a missing argument is not a reward function's signature
    rep = triage_files(tmp_path, {"train.log": "[rank0]: TypeError: forward() missing 1 required positional "
                                               "argument: 'input_ids'\n"})
    assert not [f for f in rep.findings if f.rule == "verifier.reward-call-signature"]


def test_caught_reward_errors_are_zero_rewards_not_a_crash() -> None:
    # PrimeIntellect verifiers (verifiers#711): the judge rubric raised, the sample was scored 0
    f = top(_case("313-verifiers-judgerubric-unexpected-keyword-task"))
    assert (f.rule, f.category, f.severity) == ("verifier.reward-call-failed", "verifier", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("eval.log", 1)
    assert f.numbers.get("reward_function") == "grade_reward"
    # MaxText RL evaluation (maxtext PR #4140): every row's reward silently zeroed
    f = top(_case("306-maxtext-eval-reward-fn-failed-keyerror-zero-mean-reward"))
    assert (f.rule, f.severity) == ("verifier.reward-call-failed", "warning")
    assert f.numbers.get("row") == 127
    assert "verifier.reward_function" in _knobs(f)


def test_ms_swift_unregistered_reward_name() -> None:
    # ms-swift#4351: --reward_funcs my_format with no ORM registered under that name
    f = top(_case("309-ms-swift-grpo-reward-function-not-implemented-plugin"))
    assert (f.rule, f.category, f.severity) == ("verifier.reward-not-implemented", "verifier", "error")
    assert f.numbers.get("reward_function") == "my_format"
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)


def test_scoring_helper_frames_make_a_driver_crash_the_verifier() -> None:
    # reasoning-gym#417: verl RayTaskError(KeyError) from main_task; the frames run through _score_output
    f = top(_case("301-reasoning-gym-verl-grpo-reward-fn-raytaskerror-keyerror"))
    assert (f.rule, f.category, f.severity) == ("verifier.reward-exception", "verifier", "error")
    assert any(e.line == 12 and "RayTaskError(KeyError)" in e.text for e in f.evidence), f.evidence
    assert "verifier.reward_function" in _knobs(f)


def test_verifiers_environment_frames_are_not_reward_code() -> None:
    # PrimeIntellect verifiers' envs run rollouts against the policy engine (case 166: a 504 from the policy's
    # endpoint inside verifiers/envs/environment.py); only its rubrics score.
    text = (EXTRA / "166-verifiers-env-rollout-504-request-timed-out" / "input" / "train.log").read_text()
    env_frame = next(ln for ln in text.splitlines() if "verifiers/envs/environment.py" in ln)
    assert not signals.REWARD_FRAME.search(env_frame)
    assert signals.REWARD_FRAME.search(
        '  File "/usr/lib/python3.12/site-packages/verifiers/rubrics/judge_rubric.py", line 88, in judge')
    f = top(_case("166-verifiers-env-rollout-504-request-timed-out"))
    assert f.category != "verifier"
