"""Recognition round 21 (r21c): causes that a wrapper or a cut paste hides, trainer OOM and the reward path
(real-extra 2060-2079, and the known gaps 1822, 1928, 204).

- Ray sends a worker's exception back pickled; a class whose constructor needs arguments it does not keep
  (torch._dynamo's BackendCompilerFailed, the OpenAI client's APIStatusError, urllib's HTTPError) arrives as
  RaySystemError "Failed to unpickle serialized exception" with the constructor's TypeError as its cause. The
  TypeError names the worker's real failure and must lead (other.ray-exception-not-unpicklable); the wrapper
  lines fold into it (2060-2063).
- vLLM's "Failed to infer device type" (no platform saw an accelerator) is other.gpu-unavailable (1822).
- An OOM under vLLM's DeepGEMM / FlashInfer kernel warm-up is the engine's start-up budget, not a request's
  (serving.engine-oom-kernel-warmup, 1928, its line hard-wrapped after "Tried to allocate").
- SGLang's update_weights_from_disk failure ("Failed to update weights: ... Rolling back to original weights.")
  is a weight-publication failure (health.weight-update-failed).
- CPython's faulthandler dump is a crash even when the paste lost the fatal line above it
  (other.faulthandler-crash-dump: OpenRLHF 1052's engine frames in CuMemAllocator.sleep, verl 2833's "Current
  thread" dump); with the "Fatal Python error: none_dealloc" line present, other.python-fatal-error leads (2065-2068).
- One TRL-style record is enough for the all-zero reward warning when every prompt group's samples scored alike
  (frac_reward_zero_std / zero_var_ratio 1), reward_std is 0 and two or more reward functions are all 0 (204).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

# -- Ray: the exception that could not be sent back -----------------------------------------------------------------


@pytest.mark.parametrize("case, exc, file, line", [
    ("2060", "BackendCompilerFailed", "train.log", 38),
    ("2061", "BackendCompilerFailed", "train.log", 7),
    ("2062", "HTTPError", "driver.log", 6),
    ("2063", "APIStatusError", "train.log", 13),
])
def test_unpicklable_worker_exception_names_the_lost_class(case: str, exc: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", "other.ray-exception-not-unpicklable")
    assert f.numbers["exc"] == exc
    assert [(e.file, e.line) for e in f.evidence][0] == (file, line)


def test_the_unpickle_wrapper_folds_into_the_lost_class():
    report = triage_dir(extra_input("2061"))
    rules = [f.rule for f in report.findings]
    assert "other.ray-exception-unpickle-wrapper" not in rules
    assert "unclassified" not in rules
    lines = {e.line for e in report.findings[0].evidence}
    assert {3, 7}.issubset(lines)  # the RaySystemError line is the same finding's


def test_a_setuptools_import_warning_does_not_lead_over_the_lost_exception():
    report = triage_dir(extra_input("2062"))
    assert report.findings[0].rule == "other.ray-exception-not-unpicklable"
    assert "other.import-error" in {f.rule for f in report.findings[1:]}


def test_ray_1x_one_line_form(tmp_path: Path):
    text = ("ray.exceptions.RaySystemError: System error: __init__() missing 1 required positional argument: "
            "'lock_file'\n")
    f = top(triage_files(tmp_path, {"driver.log": text}))
    assert (f.category, f.rule) == ("other", "other.ray-exception-not-unpicklable")


def test_the_wrapper_alone_still_says_what_happened(tmp_path: Path):
    text = ("ray.exceptions.RaySystemError: System error: Failed to unpickle serialized exception\n"
            "traceback: Traceback (most recent call last):\n")
    f = top(triage_files(tmp_path, {"driver.log": text}))
    assert (f.category, f.rule) == ("other", "other.ray-exception-unpickle-wrapper")


def test_a_constructor_typeerror_without_ray_is_not_this(tmp_path: Path):
    text = ("Traceback (most recent call last):\n"
            '  File "train.py", line 3, in <module>\n'
            "TypeError: Config.__init__() missing 1 required positional argument: 'path'\n")
    report = triage_files(tmp_path, {"train.log": text})
    assert "other.ray-exception-not-unpicklable" not in {f.rule for f in report.findings}


# -- vLLM without an accelerator --------------------------------------------------------------------------------------

@pytest.mark.parametrize("case, file, line", [("1822", "vllm.log", 33), ("2073", "worker.log", 14)])
def test_vllm_failed_to_infer_device_type(case: str, file: str, line: int):
    # 1822: vLLM 0.10 with the VLLM_LOGGING_LEVEL hint; 2073: vLLM 0.7's hint-less wording under Dynamo
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", "other.gpu-unavailable")
    assert [(e.file, e.line) for e in f.evidence][0] == (file, line)
    assert f.numbers["what"] == "Failed to infer device type"


# -- engine kernel warm-up OOM -----------------------------------------------------------------------------------------

def test_deepgemm_warmup_oom_is_the_engine_budget():
    f = top(triage_dir(extra_input("1928")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.engine-oom-kernel-warmup")
    assert [(e.file, e.line) for e in f.evidence][0] == ("vllm-serve.log", 19)
    assert knob_names(f) == ["inference.sglang_mem_fraction_static"]


def test_an_engine_oom_without_warmup_frames_is_not_the_warmup(tmp_path: Path):
    text = ("[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1700, in forward_extend\n'
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.00 GiB is free.\n")
    report = triage_files(tmp_path, {"sglang-engine.log": text})
    assert "serving.engine-oom-kernel-warmup" not in {f.rule for f in report.findings}


# -- SGLang refusing weights from disk -------------------------------------------------------------------------------

def test_sglang_update_weights_from_disk_rolled_back(tmp_path: Path):
    text = ("[2025-10-07 01:23:56] Start update_weights. Load format=auto\n"
            "[2025-10-07 01:23:56 TP0] Failed to update weights: Error(s) in loading state_dict for "
            "Qwen2ForCausalLM.\n"
            "Rolling back to original weights.\n")
    f = top(triage_files(tmp_path, {"sglang-engine.log": text}))
    assert (f.category, f.rule) == ("other", "health.weight-update-failed")
    assert [(e.file, e.line) for e in f.evidence][0] == ("sglang-engine.log", 2)


# -- faulthandler dumps ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["2065", "2066"])
def test_none_dealloc_fatal_line_leads(case: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", "other.python-fatal-error")
    assert f.numbers["what"] == "none_dealloc"


@pytest.mark.parametrize("case, file, line", [("2067", "driver.log", 1), ("2068", "train.log", 1)])
def test_a_faulthandler_dump_alone_is_a_crash(case: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("other", "other.faulthandler-crash-dump")
    assert f.severity == "error"
    assert [(e.file, e.line) for e in f.evidence][0] == (file, line)


def test_a_faulthandler_timeout_dump_is_not_a_crash(tmp_path: Path):
    text = ("Timeout (0:10:00)!\n"
            "Current thread 0x00007f1c2a3b4740 (most recent call first):\n"
            '  File "/usr/lib/python3.10/threading.py", line 320 in wait\n')
    report = triage_files(tmp_path, {"train.log": text})
    assert "other.faulthandler-crash-dump" not in {f.rule for f in report.findings}


def test_an_ordinary_traceback_is_not_a_faulthandler_dump(tmp_path: Path):
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
            "ValueError: bad\n")
    report = triage_files(tmp_path, {"train.log": text})
    assert "other.faulthandler-crash-dump" not in {f.rule for f in report.findings}


# -- trainer OOM -------------------------------------------------------------------------------------------------------

def test_trinity_actor_update_oom_summarised_by_the_reporter():
    f = top(triage_dir(extra_input("2064")))
    assert f.category == "trainer-oom"
    assert [(e.file, e.line) for e in f.evidence][0] == ("trainer.log", 1)
    assert "trainer.micro_batch_size" in knob_names(f)


# -- one record whose every group scored alike, all zero ----------------------------------------------------------------

def test_one_pretty_printed_record_with_every_group_flat_at_zero():
    f = top(triage_dir(extra_input("204")))
    assert (f.category, f.rule) == ("verifier", "verifier.rewards-degenerate")
    assert "every prompt group's samples scored alike" in f.numbers["arithmetic"]
    assert knob_names(f)[0] == "verifier.reward_function"


def test_one_flat_record_with_a_single_reward_function_is_not_enough(tmp_path: Path):
    text = ("{'loss': 0.0, 'grad_norm': 1.2, 'reward': 0.0, 'reward_std': 0.0, 'frac_reward_zero_std': 1.0, "
            "'rewards/accuracy_reward/mean': 0.0, 'epoch': 0.01}\n")
    report = triage_files(tmp_path, {"train.log": text})
    assert all(f.category not in SIX for f in report.findings)


def test_one_record_where_groups_differ_is_not_flat(tmp_path: Path):
    text = ("{'loss': 0.0, 'grad_norm': 1.2, 'reward': 0.0, 'reward_std': 0.0, 'frac_reward_zero_std': 0.5, "
            "'rewards/accuracy_reward/mean': 0.0, 'rewards/format_reward/mean': 0.0, 'epoch': 0.01}\n")
    report = triage_files(tmp_path, {"train.log": text})
    assert "verifier.rewards-degenerate" not in {f.rule for f in report.findings}
