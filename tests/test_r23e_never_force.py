"""Recognition round 23 (r23e): never force a category; real failures outside the six and healthy runs with alarming
lines (real-extra 2330-2345).

- Training data that cannot be read is other.dataset-read-failed: pyarrow's ArrowInvalid on a Git LFS pointer or a
  broken download in place of a parquet file (GRPO-Zero 2332, Tool-N1 on verl 2333), pyarrow's
  ArrowNotImplementedError on nested columns (RLAIF-V's DPO parquet, 2334, where only the unexplained-traceback
  fallback answered before), and Hugging Face datasets' CastError / DatasetGenerationError wordings. Blind, 2332 and
  2333 had no finding at all.
- Slurm cancelling a job because a node failed is other.slurm-node-failure (error), not a stop on purpose: the m4
  (IDEFICS) runs on Jean Zay (2340, blind read as "stopped on purpose"; 2341 beside its CUDA error).
- Slurm's time limit, preemption and scancel stay stops on purpose (other.orderly-shutdown, info), now with the
  reason in the title ("Slurm: time limit"), also when slurmstepd's line is glued onto tqdm's last bar update, when
  the step's and the job's records share one line, and in the wording without " ON node" / " AT time".
- Blind-right cases pinned: Ray SIGBUS in the driver's object-store put and in the raylet's chunk receive
  (2330, 2331), NCCL 2.18's IB completion "with error 4, opcode ..." (2336), Ray's /tmp/ray disk full (2338), an
  Xid 63 row-remap event (2342), flash-attn's missing libcudart.so.13 in an OpenRLHF Slurm job (2345, exit 1), a
  dagster-slurm step cancel (2339), a rank hung by a filesystem freeze seen as the
  others' py-spy dump in barrier (2343), and three healthy logs: verl's committed CI output.txt with vLLM's
  multimodal worst-case context warnings (2335, exit 0), ray.init's disk warning (2337) and a run stopped on time at
  iteration 4875 of a nominal 500000 (2344).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, top, triage_dir, triage_files, warnings_or_worse
from domain import SIX

from triage.report.gate import scan_exit

# -- the training data cannot be read -------------------------------------------------------------------------------


@pytest.mark.parametrize("case, file, line, what, detail", [
    ("2332", "train.log", 1, "ArrowInvalid", "Parquet magic bytes not found in footer"),
    ("2333", "train.log", 1, "ArrowInvalid", "Could not open Parquet input source '<Buffer>'"),
    ("2334", "load.log", 16, "ArrowNotImplementedError", "Nested data conversions not implemented"),
])
def test_unreadable_training_data_is_a_dataset_failure(case: str, file: str, line: int, what: str,
                                                       detail: str) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.dataset-read-failed", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers["what"] == what
    assert detail in f.numbers["detail"]
    assert not f.knobs
    assert not [g for g in report.findings if g.category in SIX]


@pytest.mark.parametrize("text, what", [
    # datasets 2.x table.py, TIGER-AI-Lab/VLM2Vec issue 143
    ("datasets.table.CastError: Couldn't cast\n", "CastError"),
    # datasets' logged read failure, qiufengqijun/mini_qwen issue 2
    ("Failed to read file '/root/autodl-tmp/mini_qwen/data/pt/rank_00000.parquet' with error "
     "<class 'datasets.table.CastError'>: Couldn't cast\n", "CastError"),
    # datasets >= 2.17, scicode-bench/SciCode issue 40
    ("datasets.exceptions.DatasetGenerationCastError: An error occurred while generating the dataset\n",
     "DatasetGenerationCastError"),
])
def test_datasets_cast_wordings(tmp_path: Path, text: str, what: str) -> None:
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.rule, f.numbers["what"]) == ("other.dataset-read-failed", what)


def test_dataset_progress_lines_are_not_failures(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": "Generating train split: 112142 examples [00:00, 160735.47 examples/s]\n"
                                                  "Casting the dataset: 100%|██████████| 7473/7473 [00:00<00:00]\n"})
    assert "other.dataset-read-failed" not in by_rule(report)


# -- Slurm: a failed node is a failure, a time limit or preemption a stop on purpose ---------------------------------


def test_node_failure_after_2500_iterations_is_not_a_stop_on_purpose() -> None:
    report = triage_dir(extra_input("2340"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.slurm-node-failure", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("main_log.txt", 5)
    assert f.numbers["node"] == "jean-zay-iam37"
    assert "other.orderly-shutdown" not in by_rule(report)
    assert scan_exit(report.findings, "error", complete=True) == 1


def test_node_failure_beside_a_cuda_error() -> None:
    report = triage_dir(extra_input("2341"))
    rules = by_rule(report)
    assert top(report).rule == "other.cuda-error"
    assert rules["other.slurm-node-failure"].numbers["node"] == "jean-zay-iam49"
    assert (rules["other.slurm-node-failure"].evidence[0].line) == 34


def test_a_step_cancel_without_a_reason_is_scancel() -> None:
    f = top(triage_dir(extra_input("2339")))
    assert (f.rule, f.severity) == ("other.orderly-shutdown", "info")
    assert (f.evidence[0].file, f.evidence[0].line) == ("slurm.log", 4)
    assert f.numbers["signal"] == "Slurm: scancel"


# Real wordings: a committed .out whose tqdm bar the time limit cut (code-index file 11594215350, 2022); an unnamed
# user's LoRA run preempted on Palmetto, the step's and the job's records on one line (a Cursor chat export,
# code-index file 52288270783, 2026); the wording without node and time (a test of a Slurm log splitter and a
# cluster FAQ); and the node-failure form, which is no stop on purpose.
GLUED = (" 22%|██▏       | 11/50 [1:55:26<6:49:05, 629.37s/it]slurmstepd: error: *** JOB 42221 ON clr1247 CANCELLED AT "
         "2022-04-14T16:20:46 DUE TO TIME LIMIT ***\n")
PREEMPTED = ("45%|████▌     | 723/1602 [2:12:45<2:59:53, 12.28s/it][2026-03-25T10:34:07.530] error: *** STEP 11509447.0 ON "
             "nodeau01 CANCELLED [2026-03-25T10:34:07.531] error: *** JOB 11509447 ON nodeau01 CANCELLED AT "
             "2026-03-25T10:34:07 DUE TO PREEMPTION ***\nAT 2026-03-25T10:34:07 DUE TO PREEMPTION ***\n"
             "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")


@pytest.mark.parametrize("text, line, why", [
    (GLUED, 1, "Slurm: time limit"),
    (PREEMPTED, 1, "Slurm: preemption"),
    ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
     "slurmstepd: error: *** JOB 9999 ON hpc CANCELLED DUE TO TIME LIMIT ***\n", 2, "Slurm: time limit"),
    ("slurmstepd-io-cpu-09: error: *** JOB 123 CANCELLED DUE TO TIME LIMIT ***\n", 1, "Slurm: time limit"),
])
def test_slurm_stops_name_their_reason(tmp_path: Path, text: str, line: int, why: str) -> None:
    report = triage_files(tmp_path, {"slurm.out": text})
    f = by_rule(report)["other.orderly-shutdown"]
    assert (f.severity, f.numbers["signal"], f.evidence[0].line) == ("info", why, line)
    assert not warnings_or_worse(report)


def test_slurm_node_failure_line_alone(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"slurm.out": "slurmstepd: error: *** JOB 4191701 ON c5-1 CANCELLED AT "
                                                  "2021-08-17T15:09:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n"})
    f = top(report)
    assert (f.rule, f.numbers["node"]) == ("other.slurm-node-failure", "c5-1")
    assert "other.orderly-shutdown" not in by_rule(report)


# -- blind-right failures outside the six ---------------------------------------------------------------------------


@pytest.mark.parametrize("case, rule, file, line, key, value", [
    ("2330", "other.fatal-signal", "train.log", 1, "signal", "SIGBUS"),
    ("2331", "other.fatal-signal", "train.log", 2, "signal", "SIGBUS"),
    ("2338", "other.disk-full", "notebook.log", 8, None, None),
    ("2342", "other.gpu-hardware-fault", "xid.log", 1, "xid", 63),
    ("2345", "other.import-error", "D-grpo_4451503.err", 24, None, None),
])
def test_failures_outside_the_six(case: str, rule: str, file: str, line: int, key: str | None, value) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", rule, "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    if key:
        assert f.numbers[key] == value
    assert not [g for g in report.findings if g.category in SIX]


def test_nccl_218_ib_completion_wording() -> None:
    f = top(triage_dir(extra_input("2336")))
    assert (f.rule, f.evidence[0].line) == ("other.nccl-error", 1)
    assert "with error 4, opcode 32564" in f.numbers["reason"]


# -- healthy runs with alarming lines -------------------------------------------------------------------------------


def test_verl_ci_run_with_multimodal_context_warnings_is_healthy() -> None:
    report = triage_dir(extra_input("2335"))
    assert not [f for f in report.findings if f.category in SIX]
    assert not warnings_or_worse(report)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_ray_init_disk_warning_alone_is_no_finding() -> None:
    report = triage_dir(extra_input("2337"))
    assert not warnings_or_worse(report)


def test_rank_hung_in_a_filesystem_freeze_shows_as_others_in_barrier() -> None:
    report = triage_dir(extra_input("2343"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.stack-dump-in-collective", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("py-spy-dump.txt", 2)
    assert not [g for g in report.findings if g.category in SIX]


def test_run_stopped_on_time_at_its_last_iteration_line_is_healthy() -> None:
    assert not triage_dir(extra_input("2344")).findings


def test_a_read_failure_the_run_went_on_after_is_only_noted(tmp_path: Path) -> None:
    steps = "".join(f"(TaskRunner pid=42) step:{i} - critic/score/mean:0.{i} - response_length/mean:{100 + i}.0\n"
                    for i in range(1, 8))
    report = triage_files(tmp_path, {"train.log": "pyarrow.lib.ArrowInvalid: JSON parse error: Invalid value. in row 0\n"
                                                  + steps})
    f = by_rule(report)["other.dataset-read-failed"]
    assert f.severity == "info"
