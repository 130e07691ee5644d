"""Round 3, cold start / serving memory / trainer OOM in other versions and launchers: real excerpts
(fixtures/lines/v3-cold, fixtures/real-extra/391-405) asserted by rule, severity, evidence line, numbers, knob and
exit code."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import FIXTURES, knob_names, top, triage_dir
from domain import SIX

from triage.model import SEVERITY_RANK, Line
from triage.parsers import startup, vllm
from triage.scan.origins import split_ray

LINES = FIXTURES / "lines" / "v3-cold"
EXTRA = FIXTURES / "real-extra"


def _line(text: str) -> Line:
    msg, actor, pid, repeat = split_ray(text)
    return Line("<t>", 1, text, msg, actor, pid, repeat)


def _case(prefix: str):
    (path,) = [p for p in EXTRA.iterdir() if p.name.startswith(prefix + "-")]
    return path / "input"


# -- line excerpts ---------------------------------------------------------------------------------------------------

EXPECTED = {  # file: (top rule, severity, evidence line, numbers)
    "vllm-v1-ci-free-memory-short.log": ("serving.startup-free-memory-short", "error", 1,
                                         {"free_gib": 1.53, "total_gib": 22.05, "gpu_memory_utilization": 0.9,
                                          "requested_gib": 19.84}),
    "vllm-v1-torch211-free-memory-short.log": ("serving.startup-free-memory-short", "error", 1,
                                               {"free_gib": 19.77, "requested_gib": 19.84}),
    "vllm-ascend-v1-engines-handshake-timeout.log": ("cold.startup-not-ready", "error", 3, {"phase": "unknown"}),
    # Ray Serve's "taken more than 30s to be scheduled": the replica waits for resources (r23i: a placement wait,
    # knob ray.placement_resources; the start-up summary still counts it as a wait, below it at info)
    "ray-llm-serve-replica-slow-to-schedule.log": ("cold.ray-placement-wait", "warning", 1, {"seconds": 30}),
    "ray-serve-replica-slow-to-schedule.log": ("cold.ray-placement-wait", "warning", 1, {"seconds": 30}),
    "touchnet-npu-trainer-oom.log": ("trainer.cuda-oom", "error", 1, {"tried": 5.03, "gpu": 3}),
}
QUIET = ("sglang-capture-52-sizes-fast.log", "vllm-v0-stats-head-cut.log")


def test_every_excerpt_has_an_expectation() -> None:
    assert sorted(p.name for p in LINES.glob("*.log")) == sorted([*EXPECTED, *QUIET])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_excerpt(name: str) -> None:
    rule, severity, line, numbers = EXPECTED[name]
    f = top(triage_dir(LINES / name))
    assert (f.rule, f.severity, f.evidence[0].line) == (rule, severity, line)
    for key, value in numbers.items():
        assert f.numbers[key] == value


@pytest.mark.parametrize("name", QUIET)
def test_healthy_excerpts_raise_nothing_at_warning(name: str) -> None:
    assert not [f for f in triage_dir(LINES / name).findings if SEVERITY_RANK[f.severity] <= 1]


def test_the_free_memory_guard_reveals_the_memory_share() -> None:
    f = top(triage_dir(LINES / "vllm-v1-ci-free-memory-short.log"))
    assert knob_names(f) == ["inference.sglang_mem_fraction_static"]
    assert f.category == "serving-oom-retraction"


# -- parsers ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,sizes,what", [
    ("[2025-11-20 17:55:16] Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32]", 8, ""),
    ("[2026-06-08 07:20:54 TP0] Capture cuda graph bs [1, 2, 4, 8, 10]", 5, ""),
    ("[2026-03-17 07:16:11 TP0] Capture draft cuda graph bs [1, 2]", 2, "draft"),
])
def test_capture_batch_sizes_are_counted(text: str, sizes: int, what: str) -> None:
    ev = startup.parse(_line(text))
    assert ev is not None and ev.fields["mark"] == "sizes"
    assert (ev.fields["sizes"], ev.fields["what"]) == (sizes, what)


@pytest.mark.parametrize("text,deadline", [
    ("[2026-01-26 17:33:48]   ⚠️  vLLM not ready after 30 minutes", 1800.0),
    ("SGLang server still not healthy after 600 seconds", 600.0),
    ("Error: timed out waiting for llama runner to start - progress 1.00 -", None),
])
def test_launcher_deadlines_in_other_words_and_units(text: str, deadline: float | None) -> None:
    ev = startup.parse(_line(text))
    assert ev is not None and ev.fields["phase"] == "timeout"
    assert ev.fields.get("deadline") == deadline


def test_still_loading_progress_is_no_deadline() -> None:
    ev = startup.parse(_line("[2026-01-26 16:57:25]   ⏳ Still loading... (1m 14s) - this is normal for large models"))
    assert ev is None


def test_a_wrapped_vllm_stats_row_is_read_from_its_tail() -> None:
    head = ("2025-10-15T00:07:38.764529167Z (APIServer pid=1) INFO 10-14 17:07:38 [loggers.py:123] Engine 000: "
            "Avg prompt throughput: 0.0 tokens/s, Avg generation throughpu")
    tail = ("t: 569.6 tokens/s, Running: 27 reqs, Waiting: 62 reqs, GPU KV cache usage: 99.7%, "
            "Prefix cache hit rate: 46.3%")
    assert vllm.parse(_line(head)) is None
    ev = vllm.parse(_line(tail))
    assert ev is not None and ev.kind == "stats"
    assert (ev.fields["#running-req"], ev.fields["#queue-req"], ev.fields["usage"]) == (27.0, 62.0, 0.997)


def test_a_head_cut_v0_stats_row_is_still_a_row() -> None:
    ev = vllm.parse(_line((LINES / "vllm-v0-stats-head-cut.log").read_text().splitlines()[0]))
    assert ev is not None and ev.kind == "stats"
    assert (ev.fields["#running-req"], ev.fields["#queue-req"], ev.fields["usage"]) == (30.0, 0.0, 0.019)


# -- the fresh cases: rule, evidence, knob, exit code ----------------------------------------------------------------

CASES = {  # case prefix: (top rule, severity, evidence line, knob among the top finding's, exit code)
    "391": ("serving.startup-free-memory-short", "error", 7, "inference.sglang_mem_fraction_static", 1),
    "392": ("serving.engine-cuda-oom", "error", 1, "inference.sglang_mem_fraction_static", 1),
    "394": ("serving.engine-cuda-oom", "error", 5, "inference.sglang_mem_fraction_static", 1),
    # loading checkpoint shards onto one NPU: the model-init OOM (r18c), whose knobs are sharding/offload
    "395": ("trainer.oom-model-init", "error", 7, "trainer.optimizer_offload", 1),
    "397": ("trainer.cuda-oom", "error", 4, "trainer.micro_batch_size", 1),
    "398": ("serving.kv-pool-saturated", "warning", 2, "inference.sglang_mem_fraction_static", 0),
    "402": ("serving.warmup-no-memory", "error", 1, "miles.sglang_chunked_prefill_size", 1),
    "404": ("cold.startup-not-ready", "error", 11, "engine.startup_timeout", 1),
    "406": ("trainer.cuda-oom", "error", 7, "miles.log_probs_chunk_size", 1),
}


@pytest.mark.parametrize("prefix", sorted(CASES))
def test_fresh_case(prefix: str) -> None:
    rule, severity, line, knob, code = CASES[prefix]
    f = top(triage_dir(_case(prefix)))
    assert (f.rule, f.severity, f.evidence[0].line) == (rule, severity, line)
    assert knob in knob_names(f)
    rc = subprocess.run([sys.executable, "-m", "triage", str(_case(prefix))], capture_output=True).returncode
    assert rc == code


def test_the_launcher_deadline_is_read_in_minutes() -> None:
    f = top(triage_dir(_case("404")))
    assert f.numbers["deadline"] == 1800.0


def test_a_checkpoint_load_oom_is_not_a_weight_sync() -> None:
    rules = [f.rule for f in triage_dir(_case("395")).findings]
    assert "trainer.oom-weight-sync" not in rules


def test_a_normal_paced_capture_of_many_sizes_is_information() -> None:
    findings = triage_dir(_case("399")).findings
    assert not [f for f in findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    f = top(triage_dir(_case("399")))
    assert (f.rule, f.severity, f.numbers["startup_phases"]) == ("cold.startup-phases", "info", {"graph_capture": 37.99})
