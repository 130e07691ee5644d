"""Round-4 serving families on fresh real cases (fixtures/real-extra 421-430): vLLM-Ascend's zero KV budget in
bytes, vLLM V1 schedulers naming a preempted request, a `raise` statement a traceback echoes when the paste is cut
before the exception line, and what must stay quiet (a healthy SGLang startup under slime, V0 stats run together)."""

from __future__ import annotations

from conftest import FIXTURES, top, triage_dir, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK

EXTRA = FIXTURES / "real-extra"


def _case(prefix: str):
    (d,) = [p for p in EXTRA.iterdir() if p.name.startswith(prefix)]
    return triage_dir(d / "input")


def test_vllm_ascend_zero_available_memory_is_no_kv_budget() -> None:
    f = top(_case("425-"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-kv-memory-negative", "error")
    assert f.evidence[0].line == 1
    assert (f.numbers["kv_bytes"], f.numbers["total_bytes"]) == (0, 65452113920)
    assert [k.name for k in f.knobs][0] == "inference.sglang_mem_fraction_static"


def test_vllm_v1_preempted_request_is_the_retraction_family() -> None:
    f = top(_case("426-"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.vllm-v1-preempted-request", "warning")
    assert f.evidence[0].line == 2
    assert "inference.sglang_max_running_requests" in [k.name for k in f.knobs]


def test_echoed_raise_statement_names_the_exception_of_a_cut_traceback() -> None:
    f = top(_case("427-"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-kv-capacity")
    assert f.evidence[0].line == 7


def test_an_echoed_source_line_that_is_not_a_raise_stays_context(tmp_path) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/app/check.py", line 12, in check',
        '    if "No available memory for the cache blocks" in message:',
        "KeyError: 'message'",
    ]
    rep = triage_files(tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert not [f for f in rep.findings if f.rule == "serving.vllm-kv-capacity"]


def test_healthy_engine_logs_stay_quiet() -> None:
    for prefix in ("428-", "429-"):
        findings = _case(prefix).findings
        assert not [f for f in findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1], prefix
