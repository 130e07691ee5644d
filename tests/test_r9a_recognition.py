"""Recognition round 9 (r9a): engines that never finish starting, and the trainer's OOM in Ascend's CANN wording.

A start that hangs or crawls is often reported with nothing but the front end's wait lines: vLLM V1's API server
repeats "Waiting for 1 local, 0 remote core engine proc(s) to start." every 10 s (real-extra 812, HAMi-core issue 261,
vLLM 0.25 with TP=2; vllm issue 24133), TGI's launcher "Waiting for shard to be ready... rank=N" (real-extra 813, TGI
issue 1838; issue 1804 in its JSON output) and "Waiting for shard 0 to be ready..." (0.x, issue 81). The same lines
followed by a ready line are a healthy start. On Ascend NPUs the device allocation fails in CANN's words before
torch_npu's: "EL0004 ... Failed to allocate memory", "rtMalloc execute failed, reason=[driver error:out of memory]"
(real-extra 814, LLaMA-Factory issue 6816; vllm-ascend issue 4026)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, by_rule, knob_names, top, triage_dir, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK

EXTRA = FIXTURES / "real-extra"

# TGI issue 1804 (TGI 2.0.1, JSON_OUTPUT=true, GKE with 2 x L4): the launcher's wait line as a JSON record, as pasted
# (the reporter says the records go on "all the time"; the test adds one with its time three minutes later to stand
# for them).
TGI_JSON_WAITS = [
    '{"timestamp":"2024-04-25T09:28:16.112934Z","level":"INFO","fields":{"message":"Waiting for shard to be ready..."},'
    '"target":"text_generation_launcher","span":{"rank":0,"name":"shard-manager"},"spans":[{"rank":0,"name":"shard-manager"}]}',
]

# TGI issue 81 (TGI 0.x, google/flan-t5-xxl, one shard): the older wording, as pasted.
TGI_0X_WAIT = "2023-02-20T16:45:24.091665Z  INFO text_generation_launcher: Waiting for shard 0 to be ready..."

# vllm issue 24133 (GLM-4.5, TP=8, DEBUG logging): the V1 API server's wait, as pasted.
VLLM_WAIT = ("(APIServer pid=300606) DEBUG 09-02 17:29:06 [utils.py:777] Waiting for 1 local, 0 remote core engine "
             "proc(s) to start.")


def _vllm_waits(start_min: int, stop_min: int) -> str:
    """The 24133 wait line every 10 s from 17:`start_min`:00 to 17:`stop_min`:00 (the cadence of vLLM's loop)."""
    out = []
    for t in range(start_min * 60, stop_min * 60 + 1, 10):
        out.append(VLLM_WAIT.replace("17:29:06", f"17:{t // 60:02d}:{t % 60:02d}") + "\n")
    return "".join(out)


def test_vllm_engine_core_wait_that_never_ends_is_a_cold_start_warning():
    report = triage_dir(EXTRA / "812-vllm-025-hami-vgpu-tp2-waiting-for-core-engine" / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-wait-unanswered", "warning")
    assert f.numbers["waited_seconds"] == 80.0  # 20:55:20 -> 20:56:40: the first, run-together line has no time
    assert f.numbers["waits"] == 9
    assert [(e.file, e.line) for e in f.evidence] == [("vllm.log", 2), ("vllm.log", 10)]
    assert "core engine proc(s) to start" in f.evidence[0].text
    assert "engine.startup_timeout" in knob_names(f)


def test_tgi_shards_still_waiting_after_one_is_ready_count_from_that_shards_start():
    report = triage_dir(EXTRA / "813-tgi-l40s-four-shards-rank0-ready-189s-others-waiting" / "input")
    f = top(report)
    assert (f.category, f.rule) == ("cold-start", "cold.startup-wait-unanswered")
    # rank 0 started 189.04 s before its 01:19:11.585 ready line (01:16:02); the last wait is 01:19:22
    assert f.numbers["waited_seconds"] == 200.04
    assert f.numbers["startup_phases"] == {"engine_init": 189.04}
    assert ("tgi.log", 5) in [(e.file, e.line) for e in f.evidence]
    assert "Shard ready in 189.037403751s" in " ".join(e.text for e in f.evidence)


def test_the_same_waits_answered_by_a_ready_line_are_a_healthy_start(tmp_path: Path):
    log = _vllm_waits(29, 33) + ("(APIServer pid=300606) INFO 09-02 17:33:04 [api_server.py:1880] Starting vLLM API "
                                 "server 0 on http://0.0.0.0:8000\n")
    report = triage_files(tmp_path, {"vllm.log": log})
    assert "cold.startup-wait-unanswered" not in by_rule(report)
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


def test_a_short_wait_is_no_finding_and_a_long_one_is(tmp_path: Path):
    short = triage_files(tmp_path / "short", {"vllm.log": _vllm_waits(29, 29) + VLLM_WAIT.replace("17:29:06", "17:29:56") + "\n"})
    assert "cold.startup-wait-unanswered" not in by_rule(short)
    long = triage_files(tmp_path / "long", {"vllm.log": _vllm_waits(29, 35)})
    f = by_rule(long)["cold.startup-wait-unanswered"]
    assert f.numbers["waited_seconds"] == 360.0 and f.numbers["waits"] == 37


# How vLLM's CLI ends when the engine core dies in its start: the head of HAMi issue 1230's traceback (vLLM 0.9, TP=2
# on HAMi vGPUs) and the exception line SkyRL PR 2051 quotes (vLLM 0.26, an engine start OOM), both as pasted.
VLLM_START_CRASH = """Traceback (most recent call last):
  File "/home/test/miniconda3/envs/dev/bin/vllm", line 10, in <module>
    sys.exit(main())
             ^^^^^^
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_a_crash_explains_the_wait(tmp_path: Path):
    log = _vllm_waits(29, 33) + VLLM_START_CRASH
    report = triage_files(tmp_path, {"vllm.log": log})
    assert "cold.startup-wait-unanswered" not in by_rule(report)


def test_tgi_wait_wordings_are_read_as_waits(tmp_path: Path):
    """The 0.x wording and the JSON record of a later TGI both feed the wait signal (the info summary counts them)."""
    log = TGI_0X_WAIT + "\n" + TGI_0X_WAIT.replace("16:45:24", "16:47:34") + "\n"
    f = by_rule(triage_files(tmp_path / "old", {"tgi.log": log}))["cold.startup-wait-unanswered"]
    assert f.numbers["waited_seconds"] == 130.0
    json_log = "\n".join(TGI_JSON_WAITS + [TGI_JSON_WAITS[0].replace("09:28:16", "09:31:16")]) + "\n"
    f = by_rule(triage_files(tmp_path / "json", {"tgi.log": json_log}))["cold.startup-wait-unanswered"]
    assert f.numbers["waited_seconds"] == 180.0 and f.numbers["waits"] == 2


def test_startup_warmup_with_the_shm_broadcast_notice_is_healthy():
    report = triage_dir(EXTRA / "811-vllm-club3090-dual-3090-startup-shm-broadcast-warmup" / "input")
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert by_rule(report)["cold.startup-phases"].numbers["startup_phases"]["profile"] == 57.52


def test_cann_el0004_allocation_failure_is_a_trainer_oom():
    report = triage_dir(EXTRA / "814-llamafactory-npu-ds3-offload-el0004-rtmalloc-oom" / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("trainer-oom", "trainer.cuda-oom", "error")
    # the OOM record and its rtMalloc line, then the runtime's trail that followed it (folded in since s14)
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 3), ("train.log", 7), ("train.log", 11),
                                                      ("train.log", 12)]
    assert "EL0004" in f.evidence[0].text
    assert {"trainer.micro_batch_size", "trainer.activation_recompute"} <= set(knob_names(f))


def test_cann_wordings_of_other_versions_and_a_failed_npu_task_alone(tmp_path: Path):
    # vllm-ascend issue 4026 (the PID-prefixed CANN record, as pasted in its title)
    pid = "EL0004: [PID: 14004] 2025-11-06-01:17:59.527.855 Failed to allocate memory.\n"
    assert top(triage_files(tmp_path / "pid", {"train.log": pid})).category == "trainer-oom"
    # a stream synchronise that failed for another reason (vllm-ascend issue 5661's exception line) is no OOM
    other = "RuntimeError: ACL stream synchronize failed, error code:507015\n"
    report = triage_files(tmp_path / "other", {"train.log": other})
    assert not [f for f in report.findings if f.category == "trainer-oom"]


def test_slime_logprob_oom_quoted_by_skypilot():
    f = top(triage_dir(EXTRA / "810-slime-skypilot-14b-tp4-logprob-vocab-softmax-oom" / "input"))
    assert (f.category, f.rule) == ("trainer-oom", "trainer.oom-logprobs")
    assert f.numbers["tried"] == 3.84  # GiB
    assert "miles.log_probs_chunk_size" in knob_names(f)
