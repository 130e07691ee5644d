"""Recognition round 19 (r19a): complete public run logs (real-extra 1760-1777, 1766 and 1771 left out as byte copies
of 714 and 1601).

- A mean completion length that sits at the run's highest mean record after record is every completion cut at one
  length, when the log prints no cap and no per-step longest response (TRL < 0.14's `completion_length`): 1761,
  gen.mean-length-at-cap. A mean pinned at its lowest value (a collapse to one-token answers) is not a cap.
- The first steps of a run all slow against the later median form a warm-up (or a regime that ended), not one
  stalled step: gen.step-time-growth keeps quiet on 1761's first two TRL iterations and on 714's steps that fell
  from 427 s to 38 s as its responses collapsed; a slow step among fast ones is still a stall.
- An API provider's daily per-model quota (ModelScope "You have exceeded today's quota for model ...") is the
  account's, not a prompt over its length budget: other.api-credit-exhausted (1770); quota and rate-limit wordings
  no longer read as vocabulary.prompt-over-budget.
- Slurm's "srun: error: <node>: task N: Exited with exit code N" is a symptom of what the task printed before it
  (other.slurm-task-exit), and a Ray `[repeated Nx across cluster]` echo of a panic printed earlier is not the
  process's last exception: the driver's HarmonyError is (1775).
- A line its logger printed at INFO (`2026-02-28 16:15:25,731 - INFO - Failed to auto-detect TPU type.`) that no
  rule explains is information, not a warning.
- Blind right and kept right: healthy vLLM servers on ROCm and WSL (1760, 1776), TRL sweeps clipped at 512 and
  finished (1762-1764), drivers copied mid-run (1765, 1767, 1768), an evaluation (1769), a DGX Spark benchmark after
  a 309 s start (1772), Ray's GCS lost (1773), a vLLM config error (1774) and a bad chat template (1777).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse

from triage.model import Line
from triage.parsers import signals


def test_trl_completion_length_pinned_at_128_is_every_completion_at_the_cap():
    report = triage_dir(extra_input("1761"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.mean-length-at-cap", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("w6_G3_rho3.00_seed42.log", 40), ("w6_G3_rho3.00_seed42.log", 139)]
    assert (f.numbers["response_cap"], f.numbers["records"], f.numbers["metric"]) == (128.0, 100, "completion_length")
    assert knob_names(f)[0] == "inference.max_response_length"
    assert "gen.step-time-growth" not in by_rule(report)  # its first two iterations are a warm-up, not a stall


def _trl(lengths: list[float]) -> str:
    return "".join(f"{{'loss': '0.01', 'completion_length': '{n:g}', 'reward': '0.5', 'epoch': '0.{i:03d}'}}\n"
                   for i, n in enumerate(lengths))


def test_a_mean_that_varies_is_not_pinned(tmp_path: Path):
    lengths = [180.0 + (i * 37) % 90 for i in range(30)]
    assert "gen.mean-length-at-cap" not in by_rule(triage_files(tmp_path, {"train.log": _trl(lengths)}))


def test_a_mean_pinned_at_its_lowest_is_no_cap(tmp_path: Path):
    lengths = [300.0, 280.0, 250.0] + [1.0] * 27
    assert "gen.mean-length-at-cap" not in by_rule(triage_files(tmp_path, {"train.log": _trl(lengths)}))


def test_short_pinned_answers_are_no_cap(tmp_path: Path):
    assert "gen.mean-length-at-cap" not in by_rule(triage_files(tmp_path, {"train.log": _trl([8.0] * 30)}))


def test_a_few_records_do_not_make_a_cap(tmp_path: Path):
    assert "gen.mean-length-at-cap" not in by_rule(triage_files(tmp_path, {"train.log": _trl([256.0] * 6)}))


def test_pinned_at_256_in_nine_of_ten_records(tmp_path: Path):
    f = by_rule(triage_files(tmp_path, {"train.log": _trl([256.0] * 9 + [201.5] + [256.0] * 10)}))
    assert f["gen.mean-length-at-cap"].numbers["response_cap"] == 256.0


def test_a_collapse_whose_steps_sped_up_is_no_stalled_step():
    report = triage_dir(extra_input("714"))
    assert top(report).rule == "health.policy-collapse"
    assert "gen.step-time-growth" not in by_rule(report)


def _nemo(times: tuple[float, ...]) -> str:
    block = "📊 Training Results:\n  • Loss: 0.1\n  • Avg Reward: 0.35\n\n⏱️  Timing:\n  • Total step time: {t}s\n"
    return "".join(block.format(t=t) + "========================= Step =========================\n" for t in times)


def test_a_slow_first_stretch_is_no_stall(tmp_path: Path):
    report = triage_files(tmp_path, {"train.log": _nemo((700.0, 520.0, 64.0, 66.0, 65.5, 63.0, 66.2))})
    assert "gen.step-time-growth" not in by_rule(report)


def test_a_slow_step_among_fast_ones_after_a_slow_start_is_still_a_stall(tmp_path: Path):
    f = by_rule(triage_files(tmp_path, {"train.log": _nemo((700.0, 64.0, 66.0, 910.0, 65.5, 63.0, 66.2))}))
    assert f["gen.step-time-growth"].numbers["seconds"] == 910.0


def test_a_step_far_above_a_slow_first_one_is_still_a_stall(tmp_path: Path):
    f = by_rule(triage_files(tmp_path, {"train.log": _nemo((200.0, 2400.0, 64.0, 66.0, 65.5, 63.0, 66.2))}))
    assert f["gen.step-time-growth"].numbers["seconds"] == 2400.0


def test_modelscope_daily_quota_is_the_accounts_not_a_prompt_budget():
    report = triage_dir(extra_input("1770"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.api-credit-exhausted", "error")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("results/glm_eval_run.log", 4)]
    assert "today's quota for model ZhipuAI/GLM-5" in f.evidence[0].text
    assert "vocabulary.prompt-over-budget" not in by_rule(report)


@pytest.mark.parametrize("line", [
    "openai.RateLimitError: Error code: 429 - {'error': {'code': '429', 'message': 'Requests to the "
    "ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your "
    "current OpenAI S0 pricing tier. Please retry after 6 seconds.'}}",
    "ERROR: Error code: 429 - {'error': {'message': \"You have exceeded today's quota for model Qwen/Qwen3-235B-A22B, "
    "please try again tomorrow\"}}",
])
def test_quota_and_rate_limit_wordings_are_no_prompt_budget(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"client.log": line + "\n"})
    assert all(f.category != "prompt-budget" for f in report.findings)


def test_a_context_length_error_is_still_a_prompt_budget(tmp_path: Path):
    line = ("openai.BadRequestError: Error code: 400 - {'error': {'message': \"This model's maximum context length is "
            "4096 tokens. However, your messages resulted in 5210 tokens.\", 'code': 'context_length_exceeded'}}")
    assert top(triage_files(tmp_path, {"client.log": line + "\n"})).category == "prompt-budget"


def test_harmony_vocab_error_ends_the_driver_not_the_ray_echo_of_the_actors_panic():
    report = triage_dir(extra_input("1775"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    # the traceback's head, its HarmonyError, then srun's exit folded in as the symptom
    assert [(e.file, e.line) for e in f.evidence] == [("grpo-tdc-gptoss_4736968.err", 125),
                                                      ("grpo-tdc-gptoss_4736968.err", 189),
                                                      ("grpo-tdc-gptoss_4736968.err", 193)]
    assert f.numbers["exception"] == "HarmonyError"
    assert "other.slurm-task-exit" not in [g.rule for g in report.findings if not g.symptom]


def test_srun_exit_is_a_symptom_of_the_tasks_own_error():
    report = triage_dir(extra_input("1774"))
    f = top(report)
    assert (f.rule, f.numbers["exception"]) == ("other.fatal-exit", "ValidationError")
    # the traceback, its ValidationError, the ActorDiedError it reached the driver as, then srun's exit folded in;
    # the engine's own copy of the ValidationError (line 54) folds in next to it (r19d: same_exception_lines); Ray's
    # note naming the class it could not pickle (line 35, other.ray-cause-not-serializable, r23g) folds in as a symptom
    assert [e.line for e in f.evidence] == [29, 93, 54, 35, 75, 98]
    assert f.numbers["same_exception_lines"] == 1
    assert all(g.rule != "other.slurm-task-exit" for g in report.findings)


def test_srun_exit_alone_is_reported(tmp_path: Path):
    f = top(triage_files(tmp_path, {"job.err": "srun: error: node-12: tasks 0-7: Exited with exit code 1\n"}))
    assert (f.category, f.rule, f.numbers["code"]) == ("other", "other.slurm-task-exit", 1)


def test_ray_gcs_lost_leads_and_info_lines_are_information():
    report = triage_dir(extra_input("1773"))
    f = top(report)
    assert (f.category, f.rule) == ("other", "other.ray-gcs-unreachable")
    assert [(e.file, e.line) for e in f.evidence] == [("grpo-tdc-gptoss-dq_4715221.err", 53),
                                                      ("grpo-tdc-gptoss-dq_4715221.err", 54)]  # srun's exit, folded
    info = [g for g in report.findings if g.rule == "unclassified"]
    assert info and all(g.severity == "info" for g in info)
    assert warnings_or_worse(report) == ["other.ray-gcs-unreachable"]


@pytest.mark.parametrize(("text", "msg", "info"), [
    ("2026-02-28 16:15:25,731 - INFO - Failed to auto-detect TPU type.", None, True),
    ("INFO:root:Failed to reach the cache, using the local copy", None, True),
    ("[INFO] retrieval failed for 2 of 500 questions", None, True),
    ("I0801 13:23:20.000000 32974 api.py:874] Failed to start the profiler", None, True),
    ("(APIServer pid=1) INFO 03-08 08:22:22 [utils.py:302] Failed x", "Failed x", True),
    ("2026-02-28 16:15:25,731 - ERROR - Failed to auto-detect TPU type.", None, False),
    ("Failed to connect to the judge", None, False),
    ("ERROR 03-08 08:22:22 [core.py:1] INFO missing", "INFO missing", False),
])
def test_info_level(text: str, msg: str | None, info: bool):
    assert signals.is_info_level(Line("x.log", 1, text, text if msg is None else msg)) is info


@pytest.mark.parametrize("case", ["1760", "1764", "1765", "1767", "1768", "1769", "1772", "1776"])
def test_healthy_runs_warn_of_nothing(case: str):
    assert warnings_or_worse(triage_dir(extra_input(case))) == []


@pytest.mark.parametrize("case", ["1762", "1763"])
def test_trl_runs_clipped_at_512(case: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.numbers["response_cap"]) == ("generation-tail", "gen.cap-hit-rate", 512)


def test_bad_chat_template_is_other():
    f = top(triage_dir(extra_input("1777")))
    assert (f.category, f.severity) == ("other", "error")
    assert f.evidence[-1].text.startswith("ValueError: The supplied chat template string (tool_use) appears path-like")


def test_slow_startup_phases_rank_by_how_far_each_is_over_its_threshold():
    """vLLM 0.14 on ROCm (real-extra 1705): capture 2,173 s (2,143 s over its 30 s), init 2,267 s (the engine init
    that holds the capture, after it): the capture leads, whatever the rules' priorities. The 82.62 s torch.compile
    is under the compile warning's 120 s since r20a (start-up summary only)."""
    rules = [f.rule for f in triage_dir(extra_input("1705")).findings]
    assert rules[:2] == ["cold.startup-capture-slow", "cold.startup-init-slow"]
    assert "cold.startup-compile-slow" not in rules


def test_phase_ranking_keeps_other_findings_in_place(tmp_path: Path):
    log = ("INFO 03-01 16:06:34 [monitor.py:34] torch.compile takes 200.0 s in total\n"
           "INFO 03-01 16:42:49 [gpu_model_runner.py:4656] Graph capturing finished in 40 secs, took 4.08 GiB\n")
    rules = [f.rule for f in triage_files(tmp_path, {"vllm.log": log}).findings]
    assert rules.index("cold.startup-compile-slow") < rules.index("cold.startup-capture-slow")


@pytest.mark.parametrize(("case", "words"), [
    ("1766", "Streaming VLLM version must be greater than 0.8.5"),
    ("1771", "Attempted to load weight (torch.Size([32, 5760])) into parameter (torch.Size([32, 6144]))"),
])
def test_round_two_openrlhf_jobs_end_in_their_own_exception(case: str, words: str):
    """Round 2 (scored against the library with round 1's fixes): a version assertion in every LLMRayActor's creation
    task, a weight update the engine refused; srun's exit folds into each."""
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    assert any(words in e.text for e in f.evidence)
    assert f.evidence[-1].text.startswith("srun: error: ")
    assert all(g.category in ("other", "unclassified") for g in report.findings)
