"""Whole public run logs, round 2 of session 16 (real-extra 1580-1599), and what they taught:

- An SGLang scheduler that dies with a frame inside ScheduleBatch.retract_decode died retracting requests from a full
  KV-cache pool, whatever the exception below the frame (real-extra 1584: SGLang on Ascend, the NPU MLA pool without
  the CPU copy the retraction's offload asks for; bytedance-iaas/sglang PR 739: an SWA pool's NotImplementedError;
  sgl-project/sglang PR 19881: a ValueError when one request alone fills the pool). The retraction bug is the
  engine's; what sent it there is admission against the pool: serving-oom-retraction (`serving.retraction-crashed`),
  above the bare engine-crash header, below the allocator's own "No space left" failure (corpus 150).
- Nightly driver logs whose test passes stay quiet; a throughput miss of 0.8 % is still the failed assertion (other), as
  are a DeepEP dispatch capacity assertion and the harness's own KeyError after the benchmark. torch_npu's workspace
  allocator words ("NPU out of memory. NPUWorkspaceAllocator tried to allocate 216.00 MiB(NPU 2; ...") are an OOM with
  their sizes (fragment torch_oom); with a 68k-token prefill and chunking off the prefill chunk is the knob (1586).
- A TRL GRPO run whose answers collapsed to a few tokens (grad_norm 0 in most steps) while the reward did not fall is
  no failure of the six categories (real-extra 1580): the run-health summary is its top finding, nothing warns.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES, triage_dir
from domain import SIX

from triage.library.rules import load_library
from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"


def _case(num: str):
    return next(EXTRA.glob(f"{num}-*")) / "input"


def test_scheduler_that_died_inside_retract_decode_is_the_full_kv_pool() -> None:
    report = triage_dir(_case("1584"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("serving.retraction-crashed", "serving-oom-retraction", "error")
    lines = {(e.file, e.line) for e in top.evidence}
    assert ("d0.log", 2875) in lines  # File ".../schedule_batch.py", line 1779, in retract_decode
    assert ("d0.log", 2888) in lines  # AttributeError: 'NPUMLATokenToKVPool' object has no attribute 'kv_buffer'
    knobs = {k.name: k for k in top.knobs}
    assert knobs["inference.sglang_max_running_requests"].current == 26
    assert knobs["inference.sglang_max_total_tokens"].current == 125440
    assert knobs["inference.sglang_mem_fraction_static"].current == 0.815
    # the engine-crash header is its symptom, not a second top-level error
    assert not [f for f in report.findings if f.rule == "other.engine-crash" and not f.symptom]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


_RETRACT_TRACEBACK = """\
[2026-03-01 10:00:00 TP0] Decode batch, #running-req: 64, #token: 262000, token usage: 0.99, cuda graph: True
[2026-03-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2974, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2148, in update_running_batch
    retracted_reqs, new_token_ratio, reqs_to_abort = batch.retract_decode(
                                                     ^^^^^^^^^^^^^^^^^^^^^
  File "/sgl-workspace/sglang/python/sglang/srt/managers/schedule_batch.py", line 1868, in retract_decode
    {raise_line}
{exception}
"""


@pytest.mark.parametrize(("raise_line", "exception"), [
    # sgl-project/sglang PR 19881: one request alone filled the pool, nothing left to retract
    ("raise ValueError(", "ValueError: Cannot retract the only running request"),
    # bytedance-iaas/sglang PR 739: the SWA pool implements no CPU backup for a retracted request
    ("self.kv_cache_cpu = token_to_kv_pool_allocator.get_cpu_copy(token_indices)", "NotImplementedError"),
])
def test_any_exception_of_the_retraction_path_is_the_same_family(tmp_path, raise_line: str, exception: str) -> None:
    (tmp_path / "sglang.log").write_text(_RETRACT_TRACEBACK.format(raise_line=raise_line, exception=exception))
    report = triage_dir(tmp_path)
    top = report.findings[0]
    assert (top.rule, top.category) == ("serving.retraction-crashed", "serving-oom-retraction")
    assert any(e.line == 8 for e in top.evidence) and any(e.line == 10 for e in top.evidence)


def test_a_scheduler_crash_outside_the_retraction_is_not_read_as_one(tmp_path) -> None:
    (tmp_path / "sglang.log").write_text(
        "[2026-03-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2148, in update_running_batch\n'
        "    retracted_reqs, new_token_ratio, reqs_to_abort = batch.retract_decode(\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/schedule_batch.py", line 1200, in prepare_for_decode\n'
        "    self.out_cache_loc = self.alloc_token_slots(bs)\n"
        "IndexError: index 3 is out of bounds for dimension 0 with size 3\n")
    report = triage_dir(tmp_path)
    assert not [f for f in report.findings if f.rule == "serving.retraction-crashed"]


def test_the_rule_reads_only_the_frame_line() -> None:
    rule = load_library().rule("serving.retraction-crashed")
    assert rule is not None
    assert rule.search('  File "/x/sglang/srt/managers/schedule_batch.py", line 1627, in retract_decode') is not None
    assert rule.search("    retracted_reqs, new_token_ratio, reqs_to_abort = batch.retract_decode(") is None


def test_throughput_below_threshold_by_under_one_percent_is_the_failed_assertion() -> None:
    report = triage_dir(_case("1582"))
    top = report.findings[0]
    assert (top.rule, top.category) == ("other.fatal-exit", "other")
    assert any(e.line == 1058 and "AssertionError: 1915.13 not greater than or equal to 1930.6" in e.text
               for e in top.evidence)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


@pytest.mark.parametrize("num", ["1581", "1583"])
def test_passed_nightly_driver_logs_stay_quiet(num: str) -> None:
    report = triage_dir(_case(num))
    assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_collapsed_short_answers_with_a_steady_reward_raise_no_category_of_the_six() -> None:
    report = triage_dir(_case("1580"))
    top = report.findings[0]
    assert (top.rule, top.category) == ("health.summary", "other")
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_npu_prefill_oom_with_chunking_off_names_the_prefill_chunk() -> None:
    report = triage_dir(_case("1586"))
    top = report.findings[0]
    assert (top.rule, top.category) == ("serving.engine-oom-prefill", "serving-oom-retraction")
    assert any(e.line == 1159 and "Memory_Allocation_Failure(EL0004)" in e.text for e in top.evidence)
    knobs = {k.name: k.current for k in top.knobs}
    assert knobs["miles.sglang_chunked_prefill_size"] == -1
    assert knobs["inference.sglang_mem_fraction_static"] == 0.72
    # torch_npu's workspace allocator words ("NPUWorkspaceAllocator tried to allocate 216.00 MiB(NPU 2; ...") are an
    # engine OOM with their sizes read
    ws = next(f for f in report.findings if f.rule == "serving.engine-cuda-oom")
    assert ws.evidence[0].line == 1062
    assert (ws.numbers["gpu"], ws.numbers["capacity"]) == (2, 61.27)
    assert abs(ws.numbers["tried"] - 216 / 1024) < 1e-3 and abs(ws.numbers["free"] - 159.89 / 1024) < 1e-3
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


@pytest.mark.parametrize(("num", "rule", "line"), [
    ("1587", "other.engine-crash", 1455),  # the scheduler's header; DeepEP's assertion is 93 lines below it
    ("1588", "other.fatal-exit", 1208),  # the harness's KeyError: 'print $4' after the benchmark
])
def test_nightly_failures_outside_the_six_stay_other(num: str, rule: str, line: int) -> None:
    report = triage_dir(_case(num))
    top = report.findings[0]
    assert (top.rule, top.category) == (rule, "other")
    assert any(e.line == line for e in top.evidence)
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1
