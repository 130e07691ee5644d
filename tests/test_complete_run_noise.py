"""Complete run logs (fixtures/real-extra 601-609) carry noise a short excerpt does not: per-item errors a program
logs and goes on from, and a slow start-up phase the engine paid once before it served. Neither ends or fails
the run; each is tested here on the real wordings, with the case that must still gate beside it."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, triage_dir, triage_files

from triage.report.gate import scan_exit

EXTRA = FIXTURES / "real-extra"
GUI = EXTRA / "605-verl-gui-cursor-agent-loop-format-errors-two-steps" / "input" / "verl_demo.log"


def rules(report) -> dict[str, object]:
    return {f.rule: f for f in report.findings}


# -- a logged, handled exception that recurs is not the end of the process ---------------------------------------

def test_recurring_logged_parse_error_at_the_end_of_a_copied_log_does_not_gate() -> None:
    """yuzhaouoe/GUI-Cursor-Moving: the env logs `ERROR:...:Traceback` + `TypeError: cannot unpack non-iterable
    NoneType object` for every unparsable answer, survives it (step:1 and step:2 follow), and the file stops 15
    lines after the last one."""
    report = triage_dir(GUI.parent)
    assert "other.fatal-exit" not in rules(report)
    assert scan_exit(report.findings, "error") == 0


def test_the_same_traceback_printed_once_at_the_end_still_ends_the_process(tmp_path: Path) -> None:
    """Only the last logged traceback of that file, without the earlier survived ones: nothing says it was handled."""
    lines = GUI.read_bytes().decode("utf-8").split("\n")  # tqdm bars hold bare carriage returns: split on newlines only
    tail = [ln + "\n" for ln in lines[2532:2545]]  # 'ERROR:...Traceback' (line 2533) to the TypeError and the text after it
    assert "ERROR:2026-03-26 22:35:46,212:Traceback" in tail[0]
    report = triage_files(tmp_path, {"verl_demo.log": "".join(tail)})
    f = rules(report)["other.fatal-exit"]
    assert f.severity == "error" and "cannot unpack non-iterable NoneType object" in f.title
    assert scan_exit(report.findings, "error") == 1


# uvicorn's logger prints `ERROR:    Exception in ASGI application` and the traceback for each failing request and
# keeps serving; SGLang decode rows (fixtures/real-extra/608) between two of them are the server's progress.
ASGI = (
    "INFO:     127.0.0.1:57560 - \"POST /generate HTTP/1.1\" 500 Internal Server Error\n"
    "ERROR:    Exception in ASGI application\n"
    "Traceback (most recent call last):\n"
    "  File \"/usr/local/lib/python3.10/site-packages/uvicorn/protocols/http/httptools_impl.py\", line 419, in run_asgi\n"
    "    result = await app(  # type: ignore[func-returns-value]\n"
    "  File \"/srv/app/handlers.py\", line 88, in parse_request\n"
    "    raise ValueError(\"bad request body\")\n"
    "ValueError: bad request body\n"
)
ROW = ("[2025-12-17 02:20:2{n} DP0 TP0 EP0] Decode batch, #running-req: 21, #token: 98816, token usage: 0.46, "
       "accept len: 3.17, accept rate: 0.79, cpu graph: True, gen throughput (token/s): 838.54, #queue-req: 0, \n")


def test_a_request_error_the_server_survived_before_does_not_end_it(tmp_path: Path) -> None:
    text = ASGI + "".join(ROW.format(n=n) for n in range(6)) + ASGI
    report = triage_files(tmp_path, {"sglang.log": text})
    assert "other.fatal-exit" not in rules(report)


def test_an_uncaught_traceback_repeated_by_restarts_still_ends_the_process(tmp_path: Path) -> None:
    """A plain traceback (no error-level logger header): a crash, then a restart that made progress and crashed
    again the same way; the last one ends the run."""
    crash = ASGI.split("\n", 2)[2]  # from 'Traceback' on: no `ERROR:` logger line before it
    text = crash + "".join(ROW.format(n=n) for n in range(6)) + crash
    f = rules(triage_files(tmp_path, {"sglang.log": text}))["other.fatal-exit"]
    assert f.evidence[-1].line == 6 + 6 + 6  # the second chain's final line


# -- a slow start-up phase the engine served after is information ------------------------------------------------

CAPTURE = "(VllmWorkerProcess pid=533) INFO 07-23 20:50:06 model_runner.py:1535] Graph capturing finished in 31 secs, took 0.36 GiB\n"
READY = "(APIServer pid=17544) INFO 07-23 20:50:33 [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8001\n"
SERVED = ("(APIServer pid=1) INFO 07-23 20:51:39 [loggers.py:271] Engine 000: Avg prompt throughput: 6335.3 tokens/s, "
          "Avg generation throughput: 4.8 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 62.8%, "
          "Prefix cache hit rate: 0.0%\n")


def test_slow_capture_then_ready_and_serving_is_info(tmp_path: Path) -> None:
    f = rules(triage_files(tmp_path, {"vllm-server.log": CAPTURE + READY + SERVED * 3}))["cold.startup-capture-slow"]
    assert (f.severity, f.numbers["seconds"], f.numbers["served_after_ready"]) == ("info", 31.0, True)


def test_slow_capture_without_serving_is_a_warning(tmp_path: Path) -> None:
    f = rules(triage_files(tmp_path, {"vllm-server.log": CAPTURE + READY}))["cold.startup-capture-slow"]
    assert (f.severity, f.numbers["served_after_ready"]) == ("warning", False)


def test_ascend_capture_of_107s_before_a_healthy_serving_run_is_info() -> None:
    """fixtures/real-extra/608: SGLang on Ascend (DP4, EP16, MTP) captures 6 batch sizes in 107 s, then serves for
    50 minutes; nothing waited on it."""
    report = triage_dir(EXTRA / "608-sglang-ascend-dp-ep-mtp-serving-drains" / "input")
    f = rules(report)["cold.startup-capture-slow"]
    assert (f.severity, f.numbers["capture_sizes"], f.evidence[0].line) == ("info", 6, 796)
    assert scan_exit(report.findings, "error") == 0
