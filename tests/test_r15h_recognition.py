"""Recognition round 15 (r15h): the other RL frameworks' threads (ART, TRL, verl, AReaL, prime-rl, NeMo-Aligner,
Trinity-RFT).

- A traceback frame glued to the prose before it (a tracker post that ran text into the paste, verl issue 1710) is
  read as a frame, so its KeyError ends a traceback: real-extra 1362.
- torch's TCPStore client: "- timed out (try=N, timeout=Xms)" is the store rendezvous' failure; "- retrying (try=N,
  timeout=Xms, delay=Yms)" is a warning of its own (trl issue 3736, real-extra 1364), folded under the store's
  timeout when that follows (real-extra 900).
- TensorRT-LLM's raised "[TensorRT-LLM][ERROR] Assertion failed: ..." (NeMo-Aligner issue 264, real-extra 1367), not
  the same words an autotuner logs after skipping a tactic.
- Trinity-RFT's explorer scheduler "Timeout when running task ..." is a rollout timeout, its Explorer actor the
  rollout side, though the task's repr names reward_fn (issue 403, real-extra 1368).
- A traceback pasted without its frames: the raising statement's echo (`assert ...`, `raise X(...)`) or Python
  3.11's caret line, then its exception line, end a chain (rllm issues 158 and 147, R1-V PR 44: real-extra 1369-1371).
"""

from __future__ import annotations

from conftest import FIXTURES, knob_names, top, triage_dir, triage_files

from triage.report.gate import scan_exit
from triage.scan.origins import split_ray

EXTRA = FIXTURES / "real-extra"


def _case(name: str):
    return triage_dir(next(EXTRA.glob(name + "-*")) / "input")


def _rules(report) -> list[str]:
    return [f.rule for f in report.findings]


def _paste(tmp_path, name: str, *lines: str):
    """A pasted log of `lines`, one file, triaged."""
    return triage_files(tmp_path, {name: "".join(line + "\n" for line in lines)})


# -- a frame glued to prose -----------------------------------------------------------------------------------

def test_a_frame_glued_to_prose_ends_a_traceback_in_its_keyerror():
    f = top(_case("1362"))
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    assert [(e.file, e.line) for e in f.evidence][:1] == [("issue.log", 4)]
    assert f.numbers["exception"] == "KeyError"
    assert f.numbers["frames"] == "models/qwen2.py:405 in load_weights"


def test_a_glued_frame_reads_as_python_prints_it():
    frame = 'File "/usr/lib/python3.11/site-packages/vllm/worker.py", line 12, in load_model'
    assert split_ray("the job stopped with: " + frame)[0] == "  " + frame
    assert split_ray("一直出现" + frame)[0] == "  " + frame


def test_a_frame_quoted_in_a_string_or_cut_before_its_function_stays_prose():
    quoted = 'raise ValueError("File "/a/b.py", line 3, in f")'
    assert split_ray(quoted)[0] == quoted
    no_func = 'see File "/a/b.py", line 3'
    assert split_ray(no_func)[0] == no_func
    kwarg = 'Frame(file=File "/a/b.py", line 3, in f'
    assert split_ray(kwarg)[0] == kwarg


def test_prose_glued_frame_in_a_fresh_paste(tmp_path):
    report = _paste(tmp_path, "issue.log", 'I run the example and got:File "/opt/app/train.py", line 88, in main',
                    "    trainer.fit()", "ZeroDivisionError: division by zero")
    assert (top(report).rule, top(report).numbers["exception"]) == ("other.fatal-exit", "ZeroDivisionError")
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


# -- torch's TCPStore client ----------------------------------------------------------------------------------

def test_a_store_client_retrying_after_its_timeout_is_a_warning_of_its_own():
    report = _case("1364")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.store-connect-retrying", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert (f.numbers["host"], f.numbers["port"], f.numbers["ms"], f.numbers["try"]) == ("0.0.0.0", 51216, 300000, 0)
    assert knob_names(f) == []
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_the_retry_warning_folds_under_the_store_timeout_that_follows():
    f = top(_case("900"))
    assert f.rule == "other.store-rendezvous-timeout"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1), ("train.log", 2)]
    assert f.numbers["symptoms"] == ["other.store-connect-retrying"]


def test_the_store_clients_final_timed_out_line_is_the_rendezvous_failure(tmp_path):
    report = _paste(tmp_path, "worker.log", (
        "[E419 13:27:42.317323202 TCPStore.cpp:390] [c10d] TCP client failed to connect/validate to host "
        "nccl-master:29500 - timed out (try=0, timeout=120000ms): The client socket has timed out after 120000ms "
        "while trying to connect to (nccl-master, 29500)."))
    f = top(report)
    assert (f.rule, f.severity) == ("other.store-rendezvous-timeout", "error")
    assert (f.numbers["host"], f.numbers["port"], f.numbers["ms"]) == ("nccl-master", 29500, 120000)
    assert "other.store-connect-retrying" not in _rules(report)


# -- TensorRT-LLM's runtime checks ----------------------------------------------------------------------------

def test_a_raised_trtllm_assertion_names_the_check_and_its_source():
    report = _case("1367")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.trtllm-assertion", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("actor.log", 1)]
    assert f.numbers["what"] == "Failed to refit transformer.layers.0.input_layernorm.bias"
    assert (f.numbers["src"].rsplit("/", 1)[-1], f.numbers["srcline"]) == ("tllmRuntime.cpp", 229)
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_an_autotuner_skipping_a_tactic_is_no_trtllm_failure(tmp_path):
    report = _paste(tmp_path, "serve.log", "flashinfer.jit: [Autotuner]: Skipping tactic <MoERunner> 14, due to failure:",
                    "[TensorRT-LLM][ERROR] Assertion failed: Failed to initialize cutlass TMA WS grouped gemm.")
    assert "other.trtllm-assertion" not in _rules(report)


def test_the_kv_block_assertion_keeps_its_own_rule():
    f = top(_case("855"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.kv-blocks-exhausted")


# -- Trinity-RFT's explorer -----------------------------------------------------------------------------------

def test_trinity_scheduler_timeout_is_a_rollout_timeout_not_the_reward_path():
    report = _case("1368")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.rollout-timeout", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("explorer.log", 1)]
    assert (f.numbers["batch"], f.numbers["runner"], f.numbers["attempt"]) == (8, 159, 1)
    assert f.numbers["side"] == "rollout"
    assert knob_names(f)[:2] == ["rollout.timeout", "inference.max_response_length"]
    assert not [x for x in report.findings if x.category == "verifier"]


def test_trinity_older_scheduler_wording_without_batch(tmp_path):
    f = top(_paste(tmp_path, "explorer.log", (
        "(Explorer pid=2003) ERROR 06-12 10:01:02 scheduler.py:80] Timeout when running task at runner 3: "
        "Task(task_desc='2+2', reward_fn=None, reward_fn_args={})")))
    assert (f.rule, f.numbers["runner"], f.numbers["side"]) == ("gen.rollout-timeout", 3, "rollout")


# -- a traceback's tail without its frames --------------------------------------------------------------------

def test_an_assert_echo_then_its_assertion_error_is_a_process_end():
    report = _case("1369")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.fatal-exit", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 3)]
    assert f.numbers["exception"] == "AssertionError"
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


def test_a_caret_line_then_an_exception_behind_host_and_rank_prefixes_is_a_process_end():
    f = top(_case("1371"))
    assert (f.rule, f.numbers["exception"]) == ("other.fatal-exit", "AttributeError")
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 3)]


def test_a_raise_echo_ends_in_the_exception_it_names(tmp_path):
    f = top(_paste(tmp_path, "run.log", '    raise ValueError(f"unknown dataset {name}")',
                   "ValueError: unknown dataset gsm8k_v2"))
    assert (f.rule, f.numbers["exception"], f.evidence[0].line) == ("other.fatal-exit", "ValueError", 2)


def test_an_echo_followed_by_another_exception_or_far_away_is_no_traceback(tmp_path):
    report = _paste(tmp_path, "run.log", "    assert batch is not None", "ValueError: the batch is empty",
                    "    raise KeyError(name)", "step 3 done", "step 4 done", "KeyError: 'gsm8k'")
    assert "other.fatal-exit" not in _rules(report)
