"""Recognition round 10 (r10b): complete public run logs, healthy ones included, and the families their misses and
their noise belonged to.

- vLLM's message queue to its workers blocked a minute at a time ("No available shared memory broadcast block found
  in 60 seconds", shm_broadcast.py): after the engine's ready line (an API server up, the offline "Processed
  prompts" bar) with nothing after, a hang while serving (real-extra 868, vllm-ascend issue 3717); before it, warm-up
  (811, club-3090 issue 295); beside a dead worker, the worker's death (373, OpenPipe ART issue 201).
- Kernels not built or not compilable for the GPU: "device kernel image is invalid" and Triton's "PassManager::run
  failed" / "LLVM ERROR: Unsupported rounding mode for conversion." (865, 866: vLLM 0.11 built for CUDA 11.8 on a
  Tesla T4), "no kernel image is available for execution on the device" (372, vLLM 0.7.3 docker image).
- Noise on whole runs: the prompts a vLLM server echoes with request logging (860, vLLM 0.9.2, and 208, V1), the
  header vLLM logs before a refused request's traceback (860), vLLM's "Failed to read commit hash" warning of a
  source install (602, 603, 604, 861: verl and Logic-RL logs of 2025), wandb's "git root error" (861) and vLLM 0.17's
  SageMaker adapter probing for optional handlers (869).
"""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, knob_names, top, triage_dir, triage_files, warnings_or_worse
from conftest import extra_case as case
from domain import SIX

from triage.model import SEVERITY_RANK
from triage.report.gate import scan_exit


def lines_of(prefix: str, name: str) -> list[str]:
    return (case(prefix) / "input" / name).read_text(encoding="utf-8").splitlines()




def exit_of(report) -> int:
    return scan_exit(report.findings, "error", complete=report.coverage_complete)


# -- 860: a vLLM 0.9.2 server refusing requests over its 8192-token context -------------------------------------

def test_vllm_server_context_rejections_are_the_prompt_budget_and_its_echoed_prompts_are_not_failures() -> None:
    report = triage_dir(case("860-") / "input")
    f = top(report)
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert f.count == 32
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm_server.log", 167)
    assert "you requested 8205 tokens (149 in the messages, 8056 in the completion)" in f.evidence[0].text
    assert {"inference.max_context_length", "inference.max_response_length"} <= set(knob_names(f))
    assert exit_of(report) == 1
    rules = by_rule(report)
    # the echoed debate prompts ("judge", "error" in the text) are content: info, never a verifier warning
    assert rules["other.request-log-echo"].severity == "info"
    assert "vocabulary.reward-path-error" not in rules
    # the traceback header of each refusal is claimed as information; its final line is the finding above
    header = rules["other.engine-request-error-header"]
    assert header.severity == "info" and header.count == 32
    assert (header.evidence[0].file, header.evidence[0].line) == ("vllm_server.log", 151)
    assert not [u for u in report.findings if u.rule == "unclassified"]


def test_request_log_echo_covers_the_vllm_v1_params_form_and_sglang_receive(tmp_path: Path) -> None:
    v1 = [ln for ln in lines_of("208-", "vllm-server.log") if "Received request chatcmpl-a269" in ln]
    sglang = [ln for ln in lines_of("607-", "sglang.log") if "Receive: obj=GenerateReqInput" in ln][:1]
    assert len(v1) == 1 and len(sglang) == 1
    report = triage_files(tmp_path, {"server.log": "\n".join(v1 + sglang) + "\n"})
    echo = by_rule(report)["other.request-log-echo"]
    assert echo.severity == "info" and echo.count == 2
    assert [e.line for e in echo.evidence][:2] == [1, 2]


# -- 861 and the same notices in 602-604: start-up notices that are not failures --------------------------------

def test_a_logic_rl_start_with_vllm_and_wandb_notices_raises_no_warning() -> None:
    report = triage_dir(case("861-") / "input")
    assert warnings_or_worse(report) == []
    notice = by_rule(report)["other.benign-startup-notice"]
    assert notice.severity == "info" and notice.count == 5
    assert (notice.evidence[0].file, notice.evidence[0].line) == ("log.log", 110)
    assert notice.last is not None and notice.last.line == 262  # wandb's "git root error"
    assert exit_of(report) == 0


def test_the_commit_hash_warning_is_a_notice_in_every_verl_version_that_prints_it() -> None:
    for prefix in ("602-", "603-", "604-"):
        report = triage_dir(case(prefix) / "input")
        assert not [f for f in report.findings
                    if f.rule == "unclassified" and "Failed to read commit hash" in f.title], prefix
        assert by_rule(report)["other.benign-startup-notice"].severity == "info", prefix


# -- 862-864, 867, 869: healthy or stopped whole runs ----------------------------------------------------------------

def test_healthy_and_operator_stopped_complete_runs_give_no_warning_and_exit_0() -> None:
    for prefix in ("862-", "863-", "864-", "867-", "869-"):
        report = triage_dir(case(prefix) / "input")
        assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1], prefix
        assert exit_of(report) == 0, prefix
    stopped = triage_dir(case("864-") / "input")
    assert [f.rule for f in stopped.findings] == ["other.orderly-shutdown"]


def test_the_sagemaker_adapters_optional_handler_probe_is_a_start_up_notice() -> None:
    report = triage_dir(case("869-") / "input")
    assert warnings_or_worse(report) == []
    notice = by_rule(report)["other.benign-startup-notice"]
    assert notice.count == 2 and [e.line for e in notice.evidence] == [72, 79]


# -- 865, 866, 372: kernels not built or not compilable for the GPU ---------------------------------------------

def test_triton_kernel_image_invalid_on_a_t4_names_the_gpu_not_the_engine_init_failure() -> None:
    report = triage_dir(case("865-") / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.gpu-arch-unsupported", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("verify_qwen3vl.log", 99)
    assert "Triton Error [CUDA]: device kernel image is invalid" in f.evidence[0].text
    assert not [u for u in report.findings if u.rule == "unclassified"]
    assert exit_of(report) == 1


def test_triton_lowering_failure_on_a_t4_is_the_same_family() -> None:
    report = triage_dir(case("866-") / "input")
    f = top(report)
    assert f.rule == "other.gpu-arch-unsupported"
    assert (f.evidence[0].line, f.evidence[0].text) == (41, "LLVM ERROR: Unsupported rounding mode for conversion.")
    assert f.count == 4
    assert not [u for u in report.findings if u.rule == "unclassified"]
    assert exit_of(report) == 1


def test_no_kernel_image_for_the_device_is_the_same_family() -> None:
    f = top(triage_dir(case("372-") / "input"))
    assert f.rule == "other.gpu-arch-unsupported"
    assert "no kernel image is available for execution on the device" in f.evidence[0].text


# -- 868, 811, 373: vLLM's shared-memory broadcast stalls, read against the ready line ---------------------------

def test_stalls_after_the_offline_generate_bar_are_a_hang_after_ready() -> None:
    report = triage_dir(case("868-") / "input")
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.engine-stall-after-ready", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("vllm.log", 2), ("vllm.log", 4), ("vllm.log", 1)]
    assert f.numbers["waits"] == 3 and f.numbers["blocked_seconds"] == 180.0
    assert "engine.startup_timeout" not in knob_names(f)


def test_stalls_followed_by_progress_were_one_long_step(tmp_path: Path) -> None:
    stalled = lines_of("868-", "vllm.log")
    done = [ln for ln in lines_of("834-", "exp1.log") if ln.startswith("Processed prompts: 100%")][:1]
    assert len(done) == 1
    report = triage_files(tmp_path, {"vllm.log": "\n".join(stalled + done) + "\n"})
    assert "other.engine-stall-after-ready" not in by_rule(report)
    assert warnings_or_worse(report) == []


def test_stalls_after_an_api_server_ready_line_are_a_hang_too(tmp_path: Path) -> None:
    ready = [ln for ln in lines_of("860-", "vllm_server.log") if "Starting vLLM API server" in ln]
    stalls = [ln for ln in lines_of("868-", "vllm.log") if "shm_broadcast" in ln]
    report = triage_files(tmp_path, {"vllm.log": "\n".join(ready[:1] + stalls) + "\n"})
    f = by_rule(report)["other.engine-stall-after-ready"]
    assert f.numbers["waits"] == 3
    # the same stalls alone (no ready line, no startup phase in the file) say nothing of when they came
    alone = triage_files(tmp_path / "alone", {"vllm.log": "\n".join(stalls) + "\n"})
    assert warnings_or_worse(alone) == []


def test_a_stall_during_warm_up_before_the_ready_line_is_not_a_finding() -> None:
    report = triage_dir(case("811-") / "input")
    assert warnings_or_worse(report) == []


def test_stalls_beside_a_dead_worker_are_the_worker_death() -> None:
    report = triage_dir(case("373-") / "input")
    assert "other.engine-stall-after-ready" not in by_rule(report)
    assert "Worker proc VllmWorker-1 died unexpectedly" in top(report).evidence[0].text
