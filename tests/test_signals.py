"""The error signals (triage/signals.py): a line's level, the exception that ended a process, orderly shutdowns,
the callee of a failed request, and OOM in any wording. Real excerpts in fixtures/signals (sources in its
SOURCES.md); the inline logs below are real lines (sources in the comments) arranged into the situations that
matter (a shutdown after a crash, a traceback the run survived)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, top, triage_dir, triage_files

from triage.cli import exit_code
from triage.model import Line
from triage.parsers.signals import callee_of, chains, exception_name, level_of
from triage.scan.origins import split_ray

SIGNALS = FIXTURES / "signals"

# file: (rule, evidence line, numbers, a knob the finding names or None, gates at --fail-on error)
EXPECTED = {
    "ttrl-reward-manager-keyerror.log": ("verifier.reward-exception", 12, {"ended_process": "ttrl-reward-manager-keyerror.log:12"},
                                         "verifier.reward_function", True),
    # the traceback has no `Traceback` header (Ray's "Pushed Error" line stands for it): the exception line leads
    "rllib-rollout-worker-keyerror.log": ("other.fatal-exit", 14, {"exception": "KeyError", "message": "3 at time: 1.65088e+09"},
                                          None, True),
    "vllm-v0-aborted-requests.vllm.log": ("gen.vllm-aborted-requests", 3, {}, "rollout.timeout", False),
    "mcp-tool-timeout.log": ("gen.agent-tool-timeout", 1, {"tool": "browser_type", "seconds": 5}, "rollout.timeout", False),
    "easydel-tpu-hbm-oom.log": ("trainer.cuda-oom", 2, {"memory_space": "hbm"}, "trainer.packing_max_tokens", True),
    "slurm-oom-kill.log": ("other.host-oom-killer", 2, {"events": 1}, None, True),
    "torchrun-exitcode-9.log": ("other.killed-sigkill", 1, {}, None, True),
    "slime-engine-http-500.sglang.log": ("other.engine-http-error-responses", 1, {"status": 500, "path": "/v1/chat/completions"},
                                         None, False),
    "vllm-shutdown-sigint.vllm.log": ("other.orderly-shutdown", 1, {"signal": "SIGINT"}, None, False),
}


def gates(report) -> bool:
    return exit_code(report.worst(), "error") == 1


def test_every_excerpt_has_an_expectation() -> None:
    assert sorted(p.name for p in SIGNALS.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_excerpt(name: str) -> None:
    rule, line, numbers, knob, gate = EXPECTED[name]
    report = triage_dir(SIGNALS / name)
    f = top(report)
    assert (f.rule, f.evidence[0].line) == (rule, line)
    for key, value in numbers.items():
        assert f.numbers[key] == value
    if knob is not None:
        assert knob in [k.name for k in f.knobs]
    assert gates(report) is gate


def test_counted_aborts_and_http_errors() -> None:
    assert top(triage_dir(SIGNALS / "vllm-v0-aborted-requests.vllm.log")).count == 8
    assert top(triage_dir(SIGNALS / "slime-engine-http-500.sglang.log")).count == 4  # the 200s are not counted


def test_the_sigkill_folds_into_the_oom_killer_report() -> None:
    f = top(triage_dir(SIGNALS / "slurm-oom-kill.log"))
    assert f.numbers["symptoms"] == ["other.killed-sigkill"]
    assert [e.line for e in f.evidence] == [2, 1]


def test_the_unexplained_end_names_its_innermost_frames() -> None:
    f = top(triage_dir(SIGNALS / "rllib-rollout-worker-keyerror.log"))
    assert f.numbers["frames"].startswith("baselines/rllib_wrapper.py:305 in on_episode_end")
    assert f.title == "A process ended with KeyError: 3 at time: 1.65088e+09"


def test_the_ray_wrapper_of_a_reward_failure_is_not_counted_twice() -> None:
    assert top(triage_dir(SIGNALS / "ttrl-reward-manager-keyerror.log")).count == 1


# -- levels -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,level", [
    # tensorflow logging basic and absl/glog (google-research/albert#168)
    ("ERROR:tensorflow:Error recorded from outfeed: Step was cancelled by an explicit call to `Session::Close()`.", "error"),
    ("E0221 21:23:45.654859 139752372131584 error_handling.py:75] Error recorded from outfeed: Step was cancelled", "error"),
    # Ray core worker (NeuralMMO/baselines#7)
    ("[2022-04-25 18:24:10,728 E 4497 4497] core_worker.cc:1274: Pushed Error with JobID: 01000000 of type: task", "error"),
    # vLLM worker (vllm-project/vllm#11737)
    ("(VllmWorker rank=0 pid=1068781) ERROR 01-04 17:21:04 multiproc_executor.py:401] WorkerProc hit an exception: %s", "error"),
    ("INFO 06-25 03:14:08 [engine.py:333] Aborted request cmpl-1dac86b037d24bbe97d7ce0f776e9250-0.", ""),
    ("time=2026-01-02T10:00:00Z level=error msg=\"upstream connect error\"", "error"),
])
def test_level(text: str, level: str) -> None:
    msg, actor, pid, repeat = split_ray(text)
    assert level_of(Line("x.log", 1, text, msg, actor, pid, repeat)) == level


def test_a_line_at_error_level_is_a_candidate_whatever_its_words(tmp_path: Path) -> None:
    line = "ERROR:tensorflow:Error recorded from outfeed: Step was cancelled by an explicit call to `Session::Close()`."
    f = top(triage_files(tmp_path, {"train.log": "step 1\n" + line + "\n"}))
    assert (f.rule, f.evidence[0].line) == ("unclassified", 2)


# -- process ends and shutdowns -----------------------------------------------------------------------------
SGLANG_SIGTERM = "[2025-09-01 10:00:00] SIGTERM received. signum=15 frame=None. Draining requests and shutting down..."
ACTOR_DIED = "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."
# torch.distributed.elastic cleaning up after a worker failed (PKU-YuanGroup/Open-Sora-Plan#512)
CLOSING = "[2024-10-28 06:14:36,059] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 598579 closing signal SIGTERM"
FAILED_9 = "[2024-10-28 06:14:37,244] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 598577) of binary: /usr/bin/python"
TRACE = ('Traceback (most recent call last):\n  File "/app/train.py", line 12, in <module>\n    main()\n'
         '  File "/app/train.py", line 9, in main\n    run()\n')


def test_what_an_orderly_shutdown_prints_does_not_gate(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"sglang-engine-0.log": f"{SGLANG_SIGTERM}\n{ACTOR_DIED}\n"})
    assert [(f.rule, f.severity) for f in report.findings] == [("other.orderly-shutdown", "info")]
    assert report.findings[0].numbers["quiet"] == 1
    assert not gates(report)


def test_ctrl_c_is_a_shutdown_not_a_crash(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": "step:1 - critic/score/mean:0.5\n" + TRACE + "KeyboardInterrupt\n"})
    assert not gates(report)
    assert "other.orderly-shutdown" in [f.rule for f in report.findings]


def test_a_sigterm_after_a_crash_is_cleanup_and_the_crash_still_gates(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": TRACE + "ValueError: bad batch\n" + SGLANG_SIGTERM + "\n" + ACTOR_DIED + "\n"})
    assert gates(report)
    assert top(report).rule == "other.fatal-exit"
    assert "other.orderly-shutdown" not in [f.rule for f in report.findings]


def test_torchrun_closing_signal_is_not_an_orderly_shutdown(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": f"{CLOSING}\n{FAILED_9}\n"})
    assert gates(report)
    assert top(report).rule == "other.killed-sigkill"


def test_children_ended_by_sigterm_are_not_crashes(tmp_path: Path) -> None:
    # SGLang SubprocessWatchdog wording (log-formats.md A.h) with a signal exit code
    line = "Subprocess scheduler_0 (pid=4242) crashed with exit code -15. Triggering SIGQUIT for cleanup..."
    report = triage_files(tmp_path, {"sglang-engine-0.log": line + "\n"})
    assert not gates(report)


def test_an_unknown_exception_that_ends_the_log_gates(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": "step:1 - critic/score/mean:0.5\n" + TRACE + "ValueError: bad batch\n"})
    f = top(report)
    assert (f.rule, f.severity, f.evidence[-1].line) == ("other.fatal-exit", "error", 7)
    assert gates(report)


def test_a_traceback_the_run_survived_does_not_end_it(tmp_path: Path) -> None:
    text = TRACE + "ValueError: bad batch\n" + "".join(f"step:{i} - critic/score/mean:0.5\n" for i in range(2, 5))
    report = triage_files(tmp_path, {"train.log": text})
    assert "other.fatal-exit" not in [f.rule for f in report.findings]


def test_an_exception_the_event_loop_logged_does_not_end_the_process(tmp_path: Path) -> None:
    text = ("Task exception was never retrieved\nfuture: <Task finished name='Task-1' coro=<f() done>>\n" + TRACE
            + "ValueError: bad batch\n")
    assert "other.fatal-exit" not in [f.rule for f in triage_files(tmp_path, {"x.log": text}).findings]


def test_a_known_finding_ranks_above_an_unexplained_end_that_still_gates(tmp_path: Path) -> None:
    mcp = ("ERROR:2026-02-18 04:35:13,188:Error invoking MCP tool retrieve: Timed out while waiting for response to "
           "ClientRequest. Waited 60.0 seconds.")  # microsoft/agent-lightning#504
    report = triage_files(tmp_path, {"train.log": mcp + "\n" + TRACE + "ValueError: bad batch\n"})
    assert [f.rule for f in report.findings[:2]] == ["gen.agent-tool-timeout", "other.fatal-exit"]
    assert gates(report)


def test_chains_follow_chained_exceptions_to_the_last_one() -> None:
    text = (TRACE + "KeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\n" + TRACE
            + "RuntimeError: wrapped\n")
    lines = [Line("x", i, t, t) for i, t in enumerate(text.splitlines(), 1) if t]
    [chain] = chains(lines)
    assert exception_name(chain.final) == ("RuntimeError", "wrapped")


# -- callees ------------------------------------------------------------------------------------------------
# OpenRLHF remote_rm_utils (OpenRLHF/OpenRLHF, fixtures/lines/openrlhf-remote-rm-refused.judge.log), as verl's
# TaskRunner would print the same urllib3 error of its reward call.
REMOTE_RM = ("(TaskRunner pid=98924) Request error, please check: HTTPConnectionPool(host='127.0.0.1', port=5000): Max "
             "retries exceeded with url: /get_reward (Caused by NewConnectionError('<urllib3.connection.HTTPConnection "
             "object at 0x7f624347cc70>: Failed to establish a new connection: [Errno 111] Connection refused'))")
# MILES http_utils retry line (log-formats.md B.k)
MILES_RETRY = ("Error: Client error '400 Bad Request' for url 'http://10.0.0.1:30000/generate', retrying... (attempt 3/60, "
               "url=http://10.0.0.1:30000/generate, response={\"error\":{\"message\":\"Requested token count exceeds the "
               "model's maximum context length of 32768 tokens. You requested a total of 40960 tokens: 8192 tokens from "
               "the input messages and 32768 tokens for the completion.\"}})")


def test_callee_of() -> None:
    assert callee_of(REMOTE_RM) == "verifier"
    assert callee_of(MILES_RETRY) == "engine"
    assert callee_of("(TaskRunner pid=1) step:1 - critic/rewards/mean:0.1 - timing_s/gen:3") == ""


def test_a_failed_reward_call_printed_by_the_driver_is_the_verifiers(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"driver.log": REMOTE_RM + "\n"}))
    assert (f.category, f.rule) == ("verifier", "verifier.judge-api-error")


def test_a_rejected_engine_call_is_classified_by_its_message(tmp_path: Path) -> None:
    f = top(triage_files(tmp_path, {"driver.log": MILES_RETRY + "\n"}))
    assert (f.category, f.numbers["context_length"]) == ("prompt-budget", 32768)


def test_failed_engine_calls_without_a_cause_are_counted(tmp_path: Path) -> None:
    line = "aiohttp.client_exceptions.ClientResponseError: 500, message='Internal Server Error', url='http://10.0.0.1:30000/generate'"
    f = top(triage_files(tmp_path, {"driver.log": "\n".join([line] * 5) + "\n"}))
    assert (f.rule, f.count, f.severity, f.numbers["status"]) == ("other.engine-request-errors", 5, "warning", 500)


def test_an_escaped_json_error_body_is_read(tmp_path: Path) -> None:
    # the 009 wording (QwenLM/Qwen3#1321) with its escaped apostrophe, from a judge's reward worker
    body = ('{"object":"error","message":"The input (61709 tokens) is longer than the model\\\'s context length (40960 '
            'tokens).","type":"BadRequestError","param":null,"code":400}')
    f = top(triage_files(tmp_path, {"judge.log": "(RewardLoopWorker pid=7) " + body + "\n"}))
    assert (f.rule, f.numbers["input_tokens"], f.numbers["context_length"]) == ("verifier.judge-context-length", 61709, 40960)


# -- OOM by process -----------------------------------------------------------------------------------------
def test_an_xla_oom_in_the_engine_is_a_serving_oom(tmp_path: Path) -> None:
    line = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 25769803776 bytes."
    f = top(triage_files(tmp_path, {"sglang-engine-0.log": line + "\n"}))
    assert f.category == "serving-oom-retraction"


def test_a_scheduler_cancel_after_an_oom_kill_is_not_an_orderly_stop(tmp_path: Path) -> None:
    # hafs-community/HAFS#101 (Slurm srun job step killed by the cgroup OOM handler, then cancelled)
    text = ("slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have "
            "been killed by the cgroup out-of-memory handler.\n"
            "srun: error: Orion-01-01: task 4: Out Of Memory\n"
            "srun: Terminating job step 3495064.0\n"
            "slurmstepd: error: *** STEP 3495064.0 ON orion-01-01 CANCELLED AT 2021-10-27T19:35:36 ***\n")
    report = triage_files(tmp_path, {"job.log": text})
    f = top(report)
    assert (f.rule, f.count, f.evidence[0].line) == ("other.host-oom-killer", 2, 1)
    assert "other.orderly-shutdown" not in [x.rule for x in report.findings]
    assert gates(report)


def test_a_torchrun_worker_stopped_by_sigterm_does_not_gate(tmp_path: Path) -> None:
    # torch/distributed/elastic/multiprocessing/api.py _terminate_process_handler: SignalException(f"Process
    # {os.getpid()} got signal: {sigval}") ends the traceback of a worker the agent was told to stop
    text = (TRACE + "torch.distributed.elastic.multiprocessing.api.SignalException: Process 76 got signal: 15\n")
    report = triage_files(tmp_path, {"train.log": text})
    assert not gates(report)
    assert [f.rule for f in report.findings] == ["other.orderly-shutdown"]


def test_a_vllm_warmup_oom_without_torchs_wording_is_the_engines(tmp_path: Path) -> None:
    # vllm-project/vllm#14452 (V1 engine, 2025-03)
    line = ("(VllmWorker rank=7 pid=10948) ERROR 03-16 06:12:38 [multiproc_executor.py:375] RuntimeError: CUDA out of "
            "memory occurred when warming up sampler with 1024 dummy requests. Please try lowering `max_num_seqs` or "
            "`gpu_memory_utilization` when initializing the engine.")
    f = top(triage_files(tmp_path, {"vllm-engine-0.log": line + "\n"}))
    # the warm-up's own rule (r17b) names it; before it, the engine's generic CUDA OOM did
    assert (f.rule, f.category) == ("serving.vllm-warmup-oom", "serving-oom-retraction")
    assert f.numbers["dummy_requests"] == 1024
    assert [k.name for k in f.knobs][:2] == ["inference.sglang_max_running_requests", "inference.sglang_mem_fraction_static"]


def test_the_same_xla_oom_in_the_trainer_is_a_trainer_oom(tmp_path: Path) -> None:
    line = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 25769803776 bytes."
    assert top(triage_files(tmp_path, {"train.log": line + "\n"})).category == "trainer-oom"
