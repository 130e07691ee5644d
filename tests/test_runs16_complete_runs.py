"""Whole public run logs of session 16 (real-extra 1460-1489) and what they taught:

- An HTTP 4xx answer is the server refusing a request as its API says it should. In the log of an engine that said
  it was ready and went on serving, a few of them among the requests it answered are the clients' mistakes, not a
  failed run (real-extra 1166: 9 "400 Bad Request" among some 8,700 "200 OK" in a day-long vLLM serve): the rule
  `other.engine-http-client-errors` is information there (`if_served`). Where no engine served (slime's abort
  requests answered 422, real-extra 1321) the same answers stay a warning; 5xx answers keep their own rule.
- vLLM's "Error with model ..." is a request for a model the server does not serve (a 404), not an engine failure.
- A traceback a Ray worker's logger printed as one error record, after which the same worker logged another record
  of its own, was caught: the worker went on (verl GUI-agent rollouts failing to parse one model answer, real-extra
  1470/1471), so it is no process's end; quoted model prose ("I need to verify ...", "I misjudged ...") in such a
  line is not the reward path.
- A multi-node nightly benchmark whose server nodes end "OK" while the benchmark node's throughput assertion fails is
  a failed run: the assertion is the finding, the gloo resets of the teardown are its echoes (real-extra 1463).
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES, triage_dir
from domain import SIX

from triage.library.rules import LibraryError, load_library
from triage.model import SEVERITY_RANK, Line
from triage.parsers import signals
from triage.report.gate import scan_exit
from triage.scan.origins import split_ray

EXTRA = FIXTURES / "real-extra"


def _case(num: str):
    return next(EXTRA.glob(f"{num}-*")) / "input"


def _rule(rid: str):
    rule = load_library().rule(rid)
    assert rule is not None
    return rule


def _symptoms(report) -> set[str]:
    return {s for f in report.findings for s in f.numbers.get("symptoms", [])}


def test_a_few_4xx_answers_of_a_day_long_serve_are_information() -> None:
    report = triage_dir(_case("1166"))
    assert "other.engine-http-client-errors" in _symptoms(report)  # read, and folded as information
    assert all(SEVERITY_RANK[f.severity] > SEVERITY_RANK["warning"] for f in report.findings)
    assert scan_exit(report.findings, "warning", complete=report.coverage_complete) == 0


@pytest.mark.parametrize("num", ["653", "921", "992"])
def test_three_400s_in_a_served_benchmark_do_not_warn(num: str) -> None:
    report = triage_dir(_case(num))
    assert not [f for f in report.findings if f.rule == "other.engine-http-client-errors"
                and SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


def test_422s_where_no_engine_served_still_warn() -> None:
    report = triage_dir(_case("1321"))
    f = next(f for f in report.findings if f.rule == "other.engine-http-client-errors")
    assert (f.severity, f.count) == ("warning", 3)
    assert (f.evidence[0].file, f.evidence[0].line) == ("ray.log", 4)
    assert f.numbers["status"] == 422 and f.numbers["path"] == "/abort_request"
    assert "served" not in f.numbers


@pytest.mark.parametrize(("line", "status"), [
    ('INFO:     127.0.0.1:53826 - "POST /generate HTTP/1.1" 400 Bad Request', "400"),
    ('INFO:     10.0.0.2:5512 - "POST /v1/chat/completions HTTP/1.1" 429 Too Many Requests', "429"),
    ('[2025-07-15 17:11:34] INFO:     172.16.216.111:45418 - "POST /abort_request HTTP/1.1" 422 Unprocessable Entity',
     "422"),
])
def test_client_errors_are_not_server_errors(line: str, status: str) -> None:
    m = _rule("other.engine-http-client-errors").search(line)
    assert m is not None and m.group("status") == status
    assert _rule("other.engine-http-error-responses").search(line) is None


def test_a_server_error_is_not_a_client_error() -> None:
    line = 'INFO:     10.0.0.1:45400 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error'
    assert _rule("other.engine-http-client-errors").search(line) is None
    assert _rule("other.engine-http-error-responses").search(line).group("status") == "500"


def test_vllm_request_for_a_model_not_served_is_explained() -> None:
    report = triage_dir(_case("923"))
    assert not [f for f in report.findings if f.category == "unclassified"]
    assert "other.engine-model-not-served" in _symptoms(report)
    m = _rule("other.engine-model-not-served").search(
        "ERROR 05-12 02:47:14 [serving_chat.py:136] Error with model object='error' message='The model "
        "`deepseek-r1-14b` does not exist.' type='NotFoundError' param=None code=404")
    assert m.group("status") == "404" and "deepseek-r1-14b" in m.group("message")


def test_if_served_must_be_a_severity(tmp_path) -> None:
    (tmp_path / "x.yaml").write_text(
        "rules:\n  - id: x.y\n    category: other\n    severity: warning\n    if_served: quiet\n    title: t\n"
        "    anchor: [abcd]\n    match: abcd\n    knobs: []\n    explain: e\n    examples: {match: [abcd]}\n")
    with pytest.raises(LibraryError, match="if_served 'quiet'"):
        load_library([tmp_path])


def test_benchmark_node_assertion_outranks_the_teardown_echoes_of_the_server_nodes() -> None:
    report = triage_dir(_case("1463"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("other.fatal-exit", "other", "error")
    assert "AssertionError: 218.97 not greater than or equal to 496.3225806451613" in top.title
    files = {e.file for e in top.evidence}
    assert "test_ascend_deepseek_v3.2_w8a8_1p1d_32p_in64k_out1k_30ms.py-router.log_error" in files
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 1


@pytest.mark.parametrize(("num", "line", "text"), [
    ("1464", 1166, "AssertionError: 19.34 not less than or equal to 18.9"),
    ("1466", 1671, "AssertionError: 50.17 not less than or equal to 50"),
])
def test_nightly_latency_threshold_missed_is_other(num: str, line: int, text: str) -> None:
    report = triage_dir(_case(num))
    top = report.findings[0]
    assert (top.rule, top.category) == ("other.fatal-exit", "other")
    assert any(e.line == line and text in e.text for e in top.evidence)


@pytest.mark.parametrize("num", ["1460", "1461", "1462", "1467", "1468", "1469"])
def test_healthy_whole_logs_stay_quiet(num: str) -> None:
    report = triage_dir(_case(num))
    assert not [f for f in report.findings if SEVERITY_RANK[f.severity] <= SEVERITY_RANK["warning"]]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


@pytest.mark.parametrize("num", ["1470", "1471"])
def test_caught_per_item_traceback_of_a_rollout_worker_that_went_on_is_no_process_end(num: str) -> None:
    report = triage_dir(_case(num))
    assert not [f for f in report.findings if f.rule == "other.fatal-exit"]
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert scan_exit(report.findings, "error", complete=report.coverage_complete) == 0


def test_the_caught_exception_stays_visible_as_an_unexplained_line() -> None:
    report = triage_dir(_case("1471"))
    f = next(f for f in report.findings if f.category == "unclassified" and "TypeError" in f.title)
    assert (f.severity, f.evidence[0].file, f.evidence[0].line) == ("warning", "verl_demo.log", 918)


def _line(text: str, lineno: int) -> Line:
    """A candidate line as the scanner makes it: the Ray actor and pid and the logger prefixes split off."""
    msg, actor, pid, repeat = split_ray(text)
    return Line("w.log", lineno, text, msg, actor=actor, pid=pid, repeat=repeat)


def _chain(lines: list[Line]) -> signals.Chain:
    found = signals.chains(lines)
    assert len(found) == 1
    return found[0]


HEAD = "(CursorLoopWorker pid=7) ERROR:2025-12-25 23:46:30,691:Traceback (most recent call last):"
FRAME = '(CursorLoopWorker pid=7)   File "/x/env_and_state.py", line 270, in _extract_action_and_update_cursor'
EXC = "(CursorLoopWorker pid=7) TypeError: cannot unpack non-iterable NoneType object"


def test_went_on_needs_a_later_record_of_the_same_process() -> None:
    lines = [_line(HEAD, 10), _line(FRAME, 11), _line(EXC, 13),
             _line("(CursorLoopWorker pid=7) ERROR:2025-12-25 23:46:30,692:Error extracting action for item 49873", 15)]
    assert signals.went_on(_chain(lines), lines)
    other = [*lines[:3], _line("(CursorLoopWorker pid=8) ERROR:2025-12-25 23:46:30,692:Error extracting action", 15)]
    assert not signals.went_on(_chain(other), other)  # another process's record says nothing of this one


def test_went_on_is_not_a_dying_process_logging_its_way_out() -> None:
    lines = [_line(HEAD, 10), _line(FRAME, 11), _line(EXC, 13),
             _line("(CursorLoopWorker pid=7) ERROR:2025-12-25 23:46:31,000:Fatal error, exiting", 15)]
    assert not signals.went_on(_chain(lines), lines)


def test_went_on_is_not_an_uncaught_traceback() -> None:
    lines = [_line("(CursorLoopWorker pid=7) Traceback (most recent call last):", 10), _line(FRAME, 11),
             _line(EXC, 13), _line("(CursorLoopWorker pid=7) ERROR:2025-12-25 23:46:30,692:Error extracting", 15)]
    assert not signals.went_on(_chain(lines), lines)


def test_went_on_skips_the_source_lines_a_logger_prefixes_on_every_traceback_line() -> None:
    p = "(Worker pid=32199) ERROR 03-18 15:48:56 [multiproc_executor.py:880] "
    lines = [_line(p + "Traceback (most recent call last):", 1),
             _line(p + '  File "/opt/vllm/v1/executor/multiproc_executor.py", line 875, in worker_busy_loop', 2),
             _line(p + "    output = func(*args, **kwargs)", 3), _line(p + "             ^^^^^^^^^^^^^^^^^^^^^", 4)]
    found = signals.chains(lines)
    assert found and found[-1].cut
    assert not signals.went_on(found[-1], lines)


@pytest.mark.parametrize("line", [
    "(CursorLoopWorker pid=2036792) ValueError: step 0 - extract action failed from: Thought: It seems that I need to "
    "verify the VISA payment option.",
    "(CursorLoopWorker pid=2036795) ValueError: step 1 - extract action failed from: Thought: I just clicked on the "
    "menu icon but it seems I misjudged the target position",
])
def test_quoted_model_prose_is_not_the_reward_path(line: str) -> None:
    assert _rule("vocabulary.reward-path-error").search(line) is None


@pytest.mark.parametrize("line", [
    "ERROR: LLMJudge request failed: 429 Too Many Requests",
    "ERROR: verify() raised on sample 3: ZeroDivisionError",
    "ERROR: judge_client timed out after 60 s",
])
def test_reward_path_words_still_count(line: str) -> None:
    assert _rule("vocabulary.reward-path-error").search(line) is not None


def test_decode_node_npu_graph_capture_oom_names_the_graph_sizes_and_the_static_fraction() -> None:
    report = triage_dir(_case("1474"))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("serving.engine-oom-graph-capture", "serving-oom-retraction",
                                                      "error")
    assert (top.evidence[0].file, top.evidence[0].line) == ("d.txt", 1116)
    assert top.numbers["tried"] == pytest.approx(4.0) and top.numbers["capacity"] == pytest.approx(61.28)
    knobs = {k.name: k.current for k in top.knobs}
    assert knobs["inference.sglang_cuda_graph_max_bs_decode"] == 24
    assert knobs["inference.sglang_mem_fraction_static"] == pytest.approx(0.8)


@pytest.mark.parametrize("num", ["1472", "1473"])
def test_npu_moe_dispatch_kernel_failure_is_an_engine_crash(num: str) -> None:
    report = triage_dir(_case(num))
    top = report.findings[0]
    assert (top.rule, top.category, top.severity) == ("other.engine-crash", "other", "error")
    assert "Scheduler hit an exception" in top.evidence[0].text
    assert not [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
