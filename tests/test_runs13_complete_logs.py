"""Whole public run logs (real-extra 1064-1073): healthy serving that is not a tail, and the failures they bury.

- One long request decoding alone is a straggler when a batch drained down to it (the rows just before it ran more
  requests, or had some waiting) or when the log ends inside it (060: still decoding when the excerpt stops). An
  episode that began with the engine idle and ended with the engine serving on (an agent client sending one request
  at a time, 1064) held no batch back: information, not a generation-tail warning.
- A static pool risk (the pool holds fewer full-length sequences than the admission) that the run's own stats show
  only as a passing moment of pressure (one row of 152, no preemption) did not materialise: information, as the
  pressure finding itself judges it (1064).
- Failures in complete logs: the verl actor-update OOM behind Ray's "Unhandled error" blocks (1067), TRL's forward OOM
  (1070), a Hydra config error after a finished first stage (1069), an NPU operator error in SGLang's warm-up (1072)
  and a vector-core fault buried under a hundred TBE "main process disappeared" lines (1073, 1078).
- An inference engine's own `verify` frame is speculative decoding checking draft tokens (SGLang
  speculative/eagle_worker_v2.py): a scheduler exception through it is the engine's, not a reward function's (1078).
- A benchmark client's tqdm bar over concurrent requests starts at 181 s/it, then 74.8 s/it, both at 03:01 of the
  bar's clock: one wait that several requests ended together, not a stalled step; the test's own assertion
  (TPOT 79.59 ms over its 45.9 ms bound) is what ended the run (1076).
- torch c10 does not pad the month of its level prefix: `[W114 12:02:28.872705088 compiler_depend.ts:83]` is a
  warning its program printed, `[E405 03:51:41.285624929 ProcessGroupNCCL.cpp:688]` an error line.
"""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, top, triage_dir, triage_files, warnings_or_worse
from conftest import extra_input as case

from triage.model import Line
from triage.parsers.signals import is_reward_frame, is_warning_level, level_of
from triage.report.gate import scan_exit
from triage.scan.origins import split_ray


def test_one_long_request_at_a_time_is_information_not_a_straggler() -> None:
    report = triage_dir(case("1064-"))
    assert warnings_or_worse(report) == []
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0
    f = by_rule(report)["tail.stats-lone-decode"]
    assert (f.category, f.severity) == ("generation-tail", "info")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm.log", 235), ("vllm.log", 276)]
    assert (f.numbers["longest_s"], f.numbers["running"]) == (410, 1)
    assert f.title.startswith("Engine decoding one long request alone, one request at a time")


def test_a_pool_risk_seen_only_as_a_passing_moment_of_pressure_is_information() -> None:
    report = triage_dir(case("1064-"))
    pool = by_rule(report)["config.pool-fits-few-sequences"]
    assert pool.severity == "info"
    assert (pool.numbers["pool_tokens"], pool.numbers["sequence_budget"], pool.numbers["admitted"]) == (
        151216, 131072, 16)
    assert pool.numbers["not_materialised"] == (
        "the pool was full with requests waiting in only 1 stats row (peak usage 0.94), briefly, with no retraction")
    pressure = by_rule(report)["serving.kv-pool-saturated"]
    assert (pressure.severity, [e.line for e in pressure.evidence]) == ("info", [522])


def _rows(lines: list[str], first: int, last: int) -> list[str]:
    return lines[first - 1:last]


def test_the_same_long_request_after_a_wider_batch_is_a_straggler(tmp_path: Path) -> None:
    """The 6.8-minute episode of 1064 (lines 235-276), right after a row that ran four requests (line 461 of the
    same log): the batch drained down to it, so it held the others' step."""
    lines = (case("1064-") / "vllm.log").read_bytes().decode().split("\n")
    batch = lines[460]
    assert "Running: 4 reqs, Waiting: 0 reqs" in batch and "08-05 13:45:40" in batch
    lone = _rows(lines, 235, 276)
    after = lines[282]  # a later stats row of the same log: nothing running, the engine serves on
    assert "Running: 0 reqs" in after
    report = triage_files(tmp_path, {"vllm.log": "\n".join([batch.replace("13:45:40", "12:31:50"), *lone, after])
                                     + "\n"})
    f = by_rule(report)["tail.stats-lone-decode"]
    assert (f.category, f.severity) == ("generation-tail", "warning")
    assert f.title.startswith("Engine decoding a straggler alone")
    assert [e.line for e in f.evidence] == [2, 43]


def test_a_request_still_decoding_alone_when_the_log_ends_is_a_straggler(tmp_path: Path) -> None:
    lines = (case("1064-") / "vllm.log").read_bytes().decode().split("\n")
    report = triage_files(tmp_path, {"vllm.log": "\n".join(_rows(lines, 235, 276)) + "\n"})
    f = by_rule(report)["tail.stats-lone-decode"]
    assert (f.severity, f.numbers["longest_s"]) == ("warning", 410)


def test_healthy_complete_runs_end_with_information_only() -> None:
    for prefix in ("1065-", "1068-", "1071-"):
        report = triage_dir(case(prefix))
        assert warnings_or_worse(report) == [], prefix
        assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_verl_actor_update_oom_behind_ray_unhandled_error_blocks() -> None:
    f = top(triage_dir(case("1067-")))
    assert (f.rule, f.category, f.severity, f.count) == ("trainer.oom-backward", "trainer-oom", "error", 3)
    assert f.evidence[0].text.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.78 GiB")


def test_buried_npu_faults_are_the_engine_crash_not_their_aftermath() -> None:
    f = top(triage_dir(case("1073-")))  # the device fault itself is named since s14 (r14d)
    assert (f.rule, f.category, f.severity) == ("other.npu-device-error", "other", "error")
    f = top(triage_dir(case("1072-")))
    assert (f.rule, f.category, f.severity) == ("other.engine-crash", "other", "error")


def test_a_speculative_decoding_verify_frame_is_the_engines_not_reward_code() -> None:
    report = triage_dir(case("1078-"))
    assert "verifier.reward-exception" not in by_rule(report)
    f = top(report)
    # the vector-core fault the device reported, with a rank's ACL error among its evidence (named since s14)
    assert (f.rule, f.category, f.severity) == ("other.npu-device-error", "other", "error")
    assert "fftsplus aivector error" in f.evidence[0].text
    assert "RuntimeError: ACL stream synchronize failed, error code:507011" in [e.text for e in f.evidence]
    engine = ('File "/usr/local/python3.11.13/lib/python3.11/site-packages/sglang/srt/speculative/eagle_worker_v2.py", '
              'line 699, in verify')
    assert not is_reward_frame(engine)
    # SGLang 0.4.x (sgl-project/sglang pull 5772, 2025-04, a CI run): the EAGLE worker before spec v2
    assert not is_reward_frame('File "/public_sglang_ci/runner-l1c-gpu-67/_work/sglang/sglang/python/sglang/srt/'
                               'speculative/eagle_worker.py", line 485, in verify')
    # the same function name in a verifier's own code is reward code
    assert is_reward_frame('File "/workspace/verl/verl/utils/reward_score/prime_math/__init__.py", line 384, in verify')


def test_a_benchmark_bar_over_concurrent_requests_is_no_stalled_step() -> None:
    report = triage_dir(case("1076-"))
    assert "gen.step-time-growth" not in by_rule(report)
    f = top(report)
    assert (f.rule, f.category, f.severity) == ("other.fatal-exit", "other", "error")
    assert [(e.line, e.text) for e in f.evidence][1] == (4666, "AssertionError: 79.59 not less than or equal to 45.9")
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def _line(text: str) -> Line:
    msg, actor, pid, repeat = split_ray(text)
    return Line("x.log", 1, text, msg, actor, pid, repeat)


def test_c10_level_prefixes_without_a_padded_month() -> None:
    warning = ("[rank29]:[W114 12:02:28.872705088 compiler_depend.ts:83] Warning: [Check][offset] Check input "
               "storage_offset[%ld] = 0 failed, result is untrustworthy128 (function operator())")  # 1078, line 1155
    assert is_warning_level(_line(warning))
    error = ("[rank0]:[E405 03:51:41.286127773 ProcessGroupNCCL.cpp:2277] [PG ID 3 PG GUID 4 Rank 0]  failure "
             "detected by watchdog at work sequence id: 404")  # 914
    assert level_of(_line(error)) == "error"
    assert not is_warning_level(_line("[rank0]: Traceback (most recent call last):"))
