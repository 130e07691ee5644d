"""Recognition round 22 (r22e): whole public run logs (real-extra 2230-2235).

- Responses that ran to the cap in a run's first steps and stayed under it afterwards are what the policy learned
  away, not the run's problem: a verl GRPO run of 435 steps with a 192-token cap (2230, the mean length at the cap
  on steps 1-6) and a verl PPO run of 45 steps whose clip ratio falls from 62% to 7% (2231; a run shorter than the
  50-record window is judged on its last third). Both findings stay, at info.
- Slurm refusing the job's request ("srun: error: Unable to create step for job N: Invalid generic resource (gres)
  specification") is other, with that line as evidence, ahead of pip's dependency-resolver ERROR (2234).
- Healthy whole runs (2232, 2233 verl PPO to final validation; 2235 a vLLM 0.8.4 evaluation ending in its own
  "status": "fail" gate verdict) carry no warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, top, triage_dir, triage_files, warnings_or_worse

# -- early cap hits that stopped ------------------------------------------------------------------------------------


def test_mean_length_at_cap_early_then_below_is_info():
    report = triage_dir(extra_input("2230"))
    assert warnings_or_worse(report) == []
    f = {x.rule: x for x in report.findings}["gen.mean-length-at-cap"]
    assert f.severity == "info"
    assert f.numbers["response_cap"] == 192
    assert f.numbers["recent_max"] < 0.95 * 192
    assert f.evidence[0].file == "verl_grpo_qwen2.5b_8gpu.log" and f.evidence[0].line == 278
    assert "early, then below it" in f.title


def test_cap_hits_in_a_short_run_judged_on_its_last_third():
    report = triage_dir(extra_input("2231"))
    assert warnings_or_worse(report) == []
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.cap-hit-rate", "info")
    assert f.numbers["recent_max"] == pytest.approx(0.116)
    assert "over the last 15 records" in f.title


def _verl_steps(ratios: list[float], cap: int = 256) -> str:
    lines = []
    for i, r in enumerate(ratios, 1):
        mean = cap * (0.9 if r >= 0.2 else 0.5)
        lines.append(f"(TaskRunner pid=1) step:{i} - response_length/mean:{mean:.3f} - response_length/max:{cap}.000 - "
                     f"response_length/clip_ratio:{r:.3f}")
    return "\n".join(lines) + "\n"


def test_short_run_still_hitting_the_cap_keeps_the_warning(tmp_path: Path):
    # 45 records, the last third still at the cap: a run that keeps hitting it
    report = triage_files(tmp_path, {"train.log": _verl_steps([0.6] * 30 + [0.1] * 5 + [0.5] * 10)})
    f = {x.rule: x for x in report.findings}["gen.cap-hit-rate"]
    assert f.severity == "warning"


def test_too_short_a_run_is_not_judged_resolved(tmp_path: Path):
    # 20 records (under resolved_min 30): too few to say the hits stopped
    report = triage_files(tmp_path, {"train.log": _verl_steps([0.6] * 12 + [0.05] * 8)})
    f = {x.rule: x for x in report.findings}["gen.cap-hit-rate"]
    assert f.severity == "warning"


# -- Slurm refusing the request -------------------------------------------------------------------------------------


def test_slurm_step_creation_refused_is_other_with_its_line():
    f = top(triage_dir(extra_input("2234")))
    assert (f.category, f.rule, f.severity) == ("other", "other.slurm-request-rejected", "error")
    assert f.numbers["reason"] == "Invalid generic resource (gres) specification"
    assert (f.evidence[0].file, f.evidence[0].line) == ("slurm-25649503.out", 63)


@pytest.mark.parametrize("line, reason", [
    ("srun: error: Unable to allocate resources: Requested node configuration is not available",
     "Requested node configuration is not available"),
    ("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
     "Invalid account or account/partition combination specified"),
])
def test_slurm_request_rejection_wordings(tmp_path: Path, line: str, reason: str):
    f = top(triage_files(tmp_path, {"slurm-1.out": "starting\n" + line + "\n"}))
    assert (f.category, f.rule) == ("other", "other.slurm-request-rejected")
    assert f.numbers["reason"] == reason


def test_srun_at_a_job_end_is_not_a_refusal(tmp_path: Path):
    report = triage_files(tmp_path, {"slurm-1.out": "srun: error: Unable to create step for job 1234: "
                                                    "Job/step already completing or completed\n"})
    assert "other.slurm-request-rejected" not in {f.rule for f in report.findings}


# -- healthy whole runs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["2232", "2233", "2235"])
def test_healthy_whole_runs_carry_no_warning(case: str):
    assert warnings_or_worse(triage_dir(extra_input(case))) == []
