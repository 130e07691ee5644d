"""Recognition round 23 (r23h): whole run logs committed to research repositories (real-extra 2385-2395).

- A long run whose records at the response cap are a few scattered ones (TRL GRPO, one prompt's 8 completions a
  record: 34 of 2,400 records at the 128-token cap, spread over the run) is information, not a generation tail:
  gen.mean-length-at-cap takes `sparse_records` / `sparse_share` (2387). Hits gathering in the last third stay a
  warning (a late collapse), and a short run's hits are judged as before.
- Blind-right cases pinned on their rules: torchrun's argparse refusal (2389), three Ctrl+C KeyboardInterrupts of a
  GPU-holding helper (2388), a caught evaluation OOM of a 14B policy and its reference (2391, trainer.cuda-oom), a
  colocated vLLM 0.7.2 start that is only information (2386), TensorFlow's cuDNN/cuBLAS factory E-lines and a Hub
  "No files have been modified" WARNING on finished runs (2390, 2392, 2393), torch built without CUDA under every
  image generation of a VLM/diffusion GRPO loop (2394, other.gpu-unavailable).
- The GPU watchdog log of five days of retries (2385) reads the NCCL ALLGATHER watchdog timeouts and the segfaults
  as well as the one attempt's OOM (a known miss by category: triage has no notion of attempts).
"""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse
from domain import SIX

from triage.report.gate import scan_exit

# -- a few records at the cap, scattered over a long run ---------------------------------------------------------------


def test_scattered_records_at_the_cap_of_a_finished_trl_run_are_information() -> None:
    report = triage_dir(extra_input("2387"))
    f = by_rule(report)["gen.mean-length-at-cap"]
    assert f.severity == "info"
    assert f.title.startswith("Mean response length at the cap on a few records")
    assert (f.numbers["records"], f.numbers["response_cap"]) == (34, 128.0)
    assert "of 2400 (1.4%), spread over the run" in f.numbers["arithmetic"]
    assert (f.evidence[0].file, f.evidence[0].line) == ("train_stage7_grpo_long2400_r32.log", 26)
    assert not [g for g in report.findings if g.category in SIX and g.severity in ("warning", "error")]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def _trl_records(means: list[float]) -> str:
    lines = []
    for i, m in enumerate(means, 1):
        at_cap = m >= 128
        low, clipped = (128.0, 1.0) if at_cap else (20.0, 0.0)
        lines.append(f"{{'loss': 0.01, 'grad_norm': 0.5, 'completions/mean_length': {m}, 'completions/min_length': "
                     f"{low}, 'completions/max_length': 128.0, 'completions/clipped_ratio': {clipped}, 'reward': 0.5, "
                     f"'epoch': {i / 1000}}}")
    return "\n".join(lines) + "\n"


def test_scattered_hits_in_a_long_run_are_information(tmp_path: Path) -> None:
    means = [40.0] * 300
    for i in range(10, 300, 25):  # 12 of 300 (4%), four of them in the last third
        means[i] = 128.0
    f = by_rule(triage_files(tmp_path, {"train.log": _trl_records(means)}))["gen.mean-length-at-cap"]
    assert f.severity == "info"
    assert f.numbers["records"] == 12


def test_hits_gathering_at_the_end_of_a_long_run_stay_a_warning(tmp_path: Path) -> None:
    means = [40.0] * 288 + [128.0] * 12  # 12 of 300 (4%), all in the last third: a late collapse
    f = by_rule(triage_files(tmp_path, {"train.log": _trl_records(means)}))["gen.mean-length-at-cap"]
    assert f.severity == "warning"


def test_a_short_run_with_few_hits_is_judged_as_before(tmp_path: Path) -> None:
    means = [40.0] * 40
    means[20] = means[35] = 128.0  # 2 of 40, one in the last third: under 100 records the sparse rule does not apply
    f = by_rule(triage_files(tmp_path, {"train.log": _trl_records(means)}))["gen.mean-length-at-cap"]
    assert f.severity == "warning"


# -- blind-right cases ---------------------------------------------------------------------------------------------------


def test_torchrun_argparse_refusal_is_a_command_line_error() -> None:
    report = triage_dir(extra_input("2389"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.cli-argument-error", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("phase1_b64_s42.log", 17)
    assert "--max_new_tokens 64" in f.title
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_ctrl_c_of_a_gpu_holding_helper_is_an_orderly_stop() -> None:
    report = triage_dir(extra_input("2388"))
    f = top(report)
    assert (f.rule, f.severity) == ("other.orderly-shutdown", "info")
    assert (f.evidence[0].file, f.evidence[0].line) == ("nohup.out", 8)
    assert not warnings_or_worse(report)


def test_a_caught_evaluation_oom_of_policy_and_reference_is_the_trainers() -> None:
    report = triage_dir(extra_input("2391"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("trainer-oom", "trainer.cuda-oom", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("validation_prompt_format.log", 66)
    assert "micro_batch_size" in " ".join(knob_names(f))
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_colocated_vllm_072_start_stopped_at_the_gate_is_healthy() -> None:
    report = triage_dir(extra_input("2386"))
    f = by_rule(report)["cold.startup-phases"]
    assert f.severity == "info"
    assert not warnings_or_worse(report)


def test_tensorflow_factory_e_lines_and_hub_no_op_commits_are_no_failures() -> None:
    for case in ("2390", "2392", "2393"):
        report = triage_dir(extra_input(case))
        assert not warnings_or_worse(report), case
        assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_torch_without_cuda_under_every_image_generation_is_the_gpu_unavailable() -> None:
    report = triage_dir(extra_input("2394"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.gpu-unavailable", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("output.log", 5)
    assert f.numbers["what"] == "Torch not compiled with CUDA enabled"
    assert not [g for g in report.findings if g.category in SIX]


def test_watchdog_retries_read_the_nccl_timeouts_and_the_segfaults() -> None:
    rules = by_rule(triage_dir(extra_input("2385")))
    f = rules["other.nccl-watchdog-timeout"]
    assert f.severity == "error"
    assert (f.evidence[0].file, f.evidence[0].line) == ("gpu_monitor.log", 7781)
    assert rules["other.segfault"].severity == "error"
