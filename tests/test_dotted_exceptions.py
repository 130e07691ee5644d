"""A traceback whose final exception class has none of the usual endings (Error, Exception, ...) but is named with its
module, as CPython prints it: `subprocess.TimeoutExpired: Command '[...]' timed out after 10 seconds` (CPython 3.x
subprocess), `requests.exceptions.ConnectTimeout: ...` (requests). The traceback is the process's end and is
reported; before, the chain had no final line and the run read as healthy. The timeout of a client on an SGLang
engine's own endpoint is not a verifier timeout, and urllib3's "Max retries exceeded" is no prompt over budget."""

from __future__ import annotations

from pathlib import Path

from conftest import by_rule, triage_files

TRACE = """step 12: rewards computed for 64 samples
Traceback (most recent call last):
  File "/workspace/rewards/code_exec.py", line 40, in compute_score
    out = subprocess.run(cmd, timeout=10, capture_output=True)
  File "/usr/lib/python3.10/subprocess.py", line 505, in run
    stdout, stderr = process.communicate(input, timeout=timeout)
  File "/usr/lib/python3.10/subprocess.py", line 1209, in _check_timeout
    raise TimeoutExpired(
subprocess.TimeoutExpired: Command '['python3', '/tmp/sol_17.py']' timed out after 10 seconds
"""


def places(finding) -> set[tuple[str, int]]:
    return {(e.file, e.line) for e in finding.evidence}


def fatal_exit(tmp_path: Path, name: str, text: str):
    """The report of one file, and its fatal-exit finding (asserted present)."""
    report = triage_files(tmp_path, {name: text})
    fatal = by_rule(report).get("other.fatal-exit")
    assert fatal is not None, [f.rule for f in report.findings]
    return report, fatal


def test_a_subprocess_timeout_ending_a_reward_traceback_is_found(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"reward.log": TRACE})
    assert report.findings, "the traceback's end was not read"
    f = report.findings[0]
    assert f.category == "verifier"
    assert ("reward.log", 9) in places(f)


def test_a_connect_timeout_ending_a_driver_traceback_is_its_fatal_exit(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/app/driver.py", line 88, in <module>\n'
        "    main()\n"
        '  File "/usr/local/lib/python3.11/site-packages/requests/adapters.py", line 688, in send\n'
        "    raise ConnectTimeout(e, request=request)\n"
        "requests.exceptions.ConnectTimeout: HTTPConnectionPool(host='10.0.0.5', port=30000): Max retries exceeded "
        "with url: /health\n"
    )
    report, fatal = fatal_exit(tmp_path, "driver.log", text)
    assert ("driver.log", 6) in places(fatal)
    assert "ConnectTimeout" in fatal.title
    # an engine's own endpoint (/health) timing out is neither a grader's timeout nor a prompt over its budget
    assert [f.category for f in report.findings if f.severity != "info"] == ["other"]


def test_an_echoed_source_line_under_a_frame_does_not_end_the_traceback(tmp_path: Path) -> None:
    # The source line Python echoes under a frame is indented; `np.Inf` alone there is code, not the exception.
    text = (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 10, in <module>\n'
        "    np.Inf\n"
        "ValueError: the loss is not finite\n"
    )
    _, fatal = fatal_exit(tmp_path, "train.log", text)
    assert ("train.log", 4) in places(fatal)


# vllm#12498 (vLLM 0.7's engine on a 64 KiB-shared-memory GPU, the fp8 block matmul kernel): Triton's OutOfResources
# carries no usual ending and no error word; the rule for kernels that do not fit the GPU reads it, with its numbers.
TRITON = """ERROR 01-28 03:21:01 engine.py:387] Traceback (most recent call last):
ERROR 01-28 03:21:01 engine.py:387]   File "/opt/conda/envs/vllm_python12/lib/python3.10/site-packages/triton/compiler/compiler.py", line 374, in _init_handles
ERROR 01-28 03:21:01 engine.py:387]     raise OutOfResources(self.metadata.shared, max_shared, "shared memory")
ERROR 01-28 03:21:01 engine.py:387] triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 66560, Hardware limit: 65536. Reducing block sizes or `num_stages` may help.
"""


def test_a_triton_kernel_that_needs_more_shared_memory_than_the_gpu_has(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"engine-0.log": TRITON})
    f = report.findings[0]
    assert (f.category, f.rule, f.severity) == ("other", "other.gpu-arch-unsupported", "error")
    assert (f.numbers["required"], f.numbers["limit"]) == (66560, 65536)
    assert ("engine-0.log", 4) in places(f)
    assert f.knobs == [] and any("memory or length knobs" in n for n in f.not_knobs)
