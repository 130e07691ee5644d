"""Noise on whole runs: error-like lines that are not the failure.

- A line its own program printed as a warning (a Python `warnings` record and the source line Python echoes under it,
  pip's `WARNING: Retrying`, torch_npu's `[W1217 ...] Warning:`) caught what it reports and went on: an unexplained
  one is info, not a warning (real-extra 756: verl's "Failed to create processor" UserWarning on a healthy
  200-step run; 608: a healthy SGLang Ascend serve).
- A line that says what its program fell back to ("Failed to get GPU memory capacity from nvidia-smi. Falling back
  to torch.cuda.mem_get_info()", SGLang 0.5.16, 652/653) handled what it reports: info as well.
- Lines that wrap an exception raised elsewhere (Hydra's "Error executing job with overrides", Ray's
  `RayTaskError(X): ray::A.m()` header, Ray's and transformers' import wrappers) are `other.exception-wrapper-header`
  (info); the wrapped exception stays the finding (603, 604, 775, 776).
- One or two aborted requests are a client that went away, not a rollout timeout cutting long generations (860).
- SGLang's request log echoes each finished request ("Finish: obj=GenerateReqInput(...)") as it does each received
  one (607).
"""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, top, triage_dir, triage_files, warnings_or_worse
from conftest import extra_case as case


def unexplained(report) -> dict[tuple[str, int], str]:
    """(file, line) of each unclassified finding's first evidence -> its severity."""
    return {(f.evidence[0].file, f.evidence[0].line): f.severity for f in report.findings if f.rule == "unclassified"}


def test_a_healthy_verl_run_whose_tokenizer_warns_on_every_worker_raises_no_warning() -> None:
    report = triage_dir(case("756-") / "input")
    assert warnings_or_worse(report) == []
    seen = unexplained(report)
    # the UserWarning record and the `warnings.warn(` source line under it, both still listed, as info
    assert seen[("slurm-6231820.out", 602)] == "info"
    assert seen[("slurm-6231820.out", 603)] == "info"
    f = next(f for f in report.findings if f.rule == "unclassified" and f.evidence[0].line == 603)
    assert f.count == 17
    assert f.numbers["warned"].startswith("every line was printed as a warning by its own program")


def test_pip_and_torch_npu_warnings_on_a_healthy_ascend_serve_are_info() -> None:
    report = triage_dir(case("608-") / "input")
    seen = unexplained(report)
    assert seen[("sglang.log", 5)] == "info"  # WARNING: Retrying (Retry(total=4, ...)) after connection broken
    assert seen[("sglang.log", 731)] == "info"  # [rank7]:[W1217 01:28:11.167 compiler_depend.ts:83] Warning: ...


def test_an_unexplained_error_line_not_printed_as_a_warning_stays_a_warning(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": (
        "step 1 loss 0.5\n"
        "RuntimeError: widget exploded while frobbing the gizmo\n"
        "/opt/x/tok.py:107: UserWarning: widget failed to load, falling back\n"
        "WARNING: widget retry failed\n"
        "step 2 loss 0.4\n")})
    seen = unexplained(report)
    assert seen[("train.log", 2)] == "warning"
    assert seen[("train.log", 3)] == "info"
    assert seen[("train.log", 4)] == "info"


def test_lines_of_one_family_half_warned_stay_a_warning(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": (
        "WARNING:root:request 17 failed after retries\n"
        "step 1 loss 0.5\n"
        "ERROR:root:request 18 failed after retries\n")})
    (f,) = [f for f in report.findings if f.rule == "unclassified"]
    assert (f.severity, f.count) == ("warning", 2)


def test_hydra_and_ray_wrapper_lines_are_headers_and_the_wrapped_exception_stays_the_finding() -> None:
    report = triage_dir(case("603-") / "input")
    f = top(report)
    assert (f.category, f.rule) == ("verifier", "verifier.reward-exception")
    w = by_rule(report)["other.exception-wrapper-header"]
    assert w.severity == "info"
    assert (w.evidence[0].file, w.evidence[0].line) == ("verl_demo.log", 264)
    assert w.evidence[0].text.startswith("Error executing job with overrides:")
    assert warnings_or_worse(report) == ["verifier.reward-exception"]


def test_ray_and_transformers_import_wrappers_fold_under_the_import_error() -> None:
    report = triage_dir(case("604-") / "input")
    assert top(report).rule == "other.import-error"
    assert warnings_or_worse(report) == ["other.import-error"]
    w = by_rule(report)["other.exception-wrapper-header"]
    lines = {e.line for e in w.evidence}
    assert 143 in lines  # "The actor with name WorkerDict failed to import on the worker"
    assert w.count == 6


def test_a_ray_wrapped_host_oom_keeps_its_rule_and_the_ray_header_is_not_unexplained() -> None:
    report = triage_dir(case("775-") / "input")
    assert top(report).rule == "other.host-oom"
    assert warnings_or_worse(report) == ["other.host-oom"]
    assert ("driver.log", 364) not in unexplained(report)


def test_a_ray_wrapped_cause_no_rule_knows_still_ends_the_run_as_an_error() -> None:
    report = triage_dir(case("776-") / "input")
    f = top(report)
    assert (f.rule, f.severity) == ("other.fatal-exit", "error")
    assert "other.exception-wrapper-header" in by_rule(report)


def test_sglang_request_log_echoes_finished_requests_too() -> None:
    report = triage_dir(case("607-") / "input")
    echo = by_rule(report)["other.request-log-echo"]
    assert echo.severity == "info"
    # the last echo is the "Finish:" of line 239; both finishes (175, 239) were unexplained warnings before
    assert echo.last.line == 239 and echo.last.text.startswith("[2026-02-09 13:43:02] Finish: obj=GenerateReqInput(")
    assert top(report).rule == "config.pool-is-input-limit"
    assert "unclassified" not in warnings_or_worse(report)


def test_one_client_abort_among_hundreds_of_requests_is_info_not_a_generation_tail() -> None:
    report = triage_dir(case("860-") / "input")
    assert top(report).rule == "prompt.context-length-exceeded"
    f = by_rule(report)["gen.vllm-aborted-requests"]
    assert (f.severity, f.count) == ("info", 1)
    assert warnings_or_worse(report) == ["prompt.context-length-exceeded"]


def test_a_line_that_says_what_its_program_fell_back_to_is_info() -> None:
    # SGLang 0.5.16 on a GB10 (no nvidia-smi memory figure): handled, the start goes on
    report = triage_dir(case("653-") / "input")
    assert unexplained(report)[("sglang.log", 10)] == "info"
    assert "Falling back to torch.cuda.mem_get_info()" in next(
        f for f in report.findings if f.rule == "unclassified" and f.evidence[0].line == 10).evidence[0].text
