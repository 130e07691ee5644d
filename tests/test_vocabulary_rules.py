"""Error lines no specific rule knows land in the category whose words they use (patterns/vocabulary.yaml), only
when they are error lines, by the process that printed them; everything else stays as it was. Real lines from
fixtures/lines/vocabulary (sources in its SOURCES.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import FIXTURES

from triage.analyze import Settings, analyze
from triage.model import Report

VOCAB = FIXTURES / "lines" / "vocabulary"


def run_of(tmp_path: Path, **files: str) -> Report:
    """A run directory holding each fixture (value) under a run-dir file name (key)."""
    run = tmp_path / "run"
    run.mkdir(parents=True)
    for name, fixture in files.items():
        shutil.copy(VOCAB / fixture, run / name.replace("_", "-").replace("-log", ".log"))
    return analyze(Settings(paths=[str(run)]))


def by_rule(report: Report, rule: str):  # type: ignore[no-untyped-def]
    found = [f for f in report.findings if f.rule == rule]
    assert found, [f.rule for f in report.findings]
    return found[0]


def test_a_reward_function_failure_in_new_words_is_a_verifier_finding(tmp_path: Path) -> None:
    report = run_of(tmp_path, train_log="reward-error-logged.log")
    f = report.findings[0]
    assert (f.rule, f.category, f.severity) == ("vocabulary.reward-path-error", "verifier", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 1)
    assert f.knobs[0].name == "verifier.reward_function"


def test_a_wording_a_specific_rule_learned_is_no_longer_the_vocabulary_s(tmp_path: Path) -> None:
    f = run_of(tmp_path, train_log="maxtext-eval-reward-fn-failed.log").findings[0]
    assert (f.rule, f.category) == ("verifier.reward-call-failed", "verifier")


def test_a_programming_error_naming_a_reward_variable_is_not_the_reward_path(tmp_path: Path) -> None:
    """TRL's CLI bug (trl#3455, fixtures/real-extra/314): the words are a variable's name, not a failing reward."""
    (tmp_path / "train.log").write_text(
        "UnboundLocalError: local variable 'reward_model' referenced before assignment\n")
    report = analyze(Settings(paths=[str(tmp_path)]))
    assert not [f for f in report.findings if f.rule.startswith("vocabulary.")]


def test_an_out_of_memory_in_new_words_goes_to_the_process_that_printed_it(tmp_path: Path) -> None:
    """XLA's TPU runtime loading a program into HBM: an allocator wording no specific rule knows."""
    engine = by_rule(run_of(tmp_path / "a", vllm_server_log="xla-tpu-error-loading-program-oom.log"),
                     "vocabulary.engine-out-of-memory")
    assert (engine.category, engine.evidence[0].file, engine.evidence[0].line) == (
        "serving-oom-retraction", "vllm-server.log", 1)
    assert engine.knobs[0].name == "inference.sglang_mem_fraction_static"
    trainer = by_rule(run_of(tmp_path / "b", train_log="xla-tpu-error-loading-program-oom.log"),
                      "vocabulary.trainer-out-of-memory")
    assert (trainer.category, trainer.evidence[0].line) == ("trainer-oom", 1)
    assert "trainer.micro_batch_size" in {k.name for k in trainer.knobs}


def test_an_out_of_memory_from_an_unknown_process_is_not_guessed(tmp_path: Path) -> None:
    report = run_of(tmp_path, notes_log="ollama-ggml-cuda-malloc-oom.log")
    assert not [f for f in report.findings if f.rule.startswith("vocabulary.")]


def test_an_engine_wording_a_specific_rule_learned_wins_in_any_file(tmp_path: Path) -> None:
    """TurboMind's tag names the engine wherever its line lands (lmdeploy#3557's wording once reached only the
    vocabulary): the specific rule claims it, even in a file named like a trainer's."""
    for name in ("lmdeploy_server_log", "train_log"):
        report = run_of(tmp_path / name, **{name: "lmdeploy-turbomind-oom.log"})
        f = by_rule(report, "serving.cuda-check-oom")
        assert (f.category, f.evidence[0].line) == ("serving-oom-retraction", 2)
        assert f.knobs[0].name == "inference.sglang_mem_fraction_static"
        assert not [g for g in report.findings if g.rule.startswith("vocabulary.")]


def test_an_input_over_the_generation_length_is_a_prompt_budget_finding(tmp_path: Path) -> None:
    # transformers' own length check now has a rule of its own (patterns/prompt-budget.yaml), which wins
    f = by_rule(run_of(tmp_path, rollout_log="transformers-generate-max-length.log"), "prompt.generate-length-exceeded")
    assert (f.category, f.evidence[0].line) == ("prompt-budget", 1)
    assert (f.numbers.get("input_tokens"), f.numbers.get("context_length")) == (14317, 8192)
    assert "inference.max_context_length" in {k.name for k in f.knobs}


def test_the_same_words_on_an_info_line_are_not_a_finding(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        "INFO 05-01 10:00:00 reward_fn loaded from /workspace/rewards/math_reward.py\n"
        "INFO 05-01 10:00:01 generation timeout set to 600 s for rollouts\n"
        "INFO 05-01 10:00:02 max_model_len 32768; prompts longer than 30720 tokens are filtered\n")
    report = analyze(Settings(paths=[str(tmp_path)]))
    assert not [f for f in report.findings if f.rule.startswith("vocabulary.")]


def test_a_specific_rule_still_wins_over_the_vocabulary(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.11 GiB of which 1.00 GiB is free.\n")
    report = analyze(Settings(paths=[str(tmp_path)]))
    assert report.findings[0].rule == "trainer.cuda-oom"
    assert not [f for f in report.findings if f.rule.startswith("vocabulary.")]


def test_a_programs_own_error_in_sentence_is_an_error_line(tmp_path: Path) -> None:
    """"Error in reward_fn: ..." has no exception class and no level: it is still an error line (RAGEN#89). verl's
    trainer prints it when it catches the reward manager's error and scores the batch again, so the rule for that
    retry names it, as information (the maintainers call it non-critical), before the vocabulary's generic placing."""
    f = run_of(tmp_path, driver_log="ragen-error-in-reward-fn.log").findings[0]
    assert (f.rule, f.category, f.severity) == ("verifier.reward-fn-retried", "verifier", "info")
    assert (f.evidence[0].file, f.evidence[0].line) == ("driver.log", 1)
