"""Engine stats as one signal: SGLang and vLLM rows of several versions (fixtures/lines/engine-stats, sources in
fixtures/lines/SOURCES.md) parsed into the same fields, KV-pressure episodes, stats-based stragglers, vLLM engine
configuration under canonical knobs, and the pool as the knob."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from conftest import FIXTURES, top, triage_dir, triage_files

from triage.model import Line
from triage.parsers import sglang, vllm
from triage.parsers.engine_stats import row_time

STATS = FIXTURES / "lines" / "engine-stats"
CORPUS = Path("/work/shared/corpus")


def _first(name: str, n: int = 0) -> str:
    return (STATS / name).read_text().splitlines()[n]


def _parse(text: str):
    from triage.scan.origins import split_ray

    msg, actor, pid, repeat = split_ray(text)
    line = Line("x.log", 1, text, msg, actor, pid, repeat)
    return sglang.parse(line) or vllm.parse(line)


def _case(prefix: str) -> Path:
    found = sorted(CORPUS.glob(prefix + "-*"))
    if not found:
        pytest.skip(f"corpus case {prefix} not on this machine")
    return found[0] / "input"


# -- one row, whatever printed it: (file, row) -> running, waiting, usage, throughput
ROWS = {
    ("vllm-v0-pending-82.log", 0): (2, 3, 0.821, 44.9),  # V0 metrics.py, no final period (2024-02)
    ("vllm-v0-stuck-pending.log", 0): (35, 115, 0.99, 118.5),  # V0 llm_engine.py with iteration-time fields (0.3)
    ("vllm-v0-python-logging.log", 2): (1, 3, 0.031, 45.7),  # V0 under a Python logging format
    ("vllm-v1-mtp-pressure.log", 0): (18, 43, 0.959, 1055.3),  # V1 `Engine 000:` (2026)
    ("vllm-v1-iso-docker.log", 1): (9, 1, 0.688, 7.2),  # V1 behind ISO container stamps
    ("sglang-time-only-lone.log", 3): (1, 0, 0.0, 333.97),  # SGLang D1 with an `[HH:MM:SS TP0]` stamp
    ("sglang-dp-attention-mtp.log", 0): (8, 0, 0.13, 171.01),  # SGLang D2, DP attention, accept len
}


@pytest.mark.parametrize("name,n", sorted(ROWS))
def test_stats_rows_of_every_engine_give_the_same_fields(name: str, n: int) -> None:
    ev = _parse(_first(name, n))
    running, waiting, usage, tput = ROWS[(name, n)]
    assert ev is not None and ev.kind == "stats"
    f = ev.fields
    assert (f["#running-req"], f["#queue-req"]) == (running, waiting)
    assert f["usage"] == pytest.approx(usage)
    assert f["gen throughput (token/s)"] == pytest.approx(tput)


def test_v1_row_with_mm_cache_and_first_v1_row_without_usage() -> None:
    # vLLM V1 with the multimodal cache field (Sandermage/genesis-vllm-patches issue 24, 2026-05)
    mm = _parse("(APIServer pid=92107) INFO 05-08 16:21:55 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 "
                "tokens/s, Avg generation throughput: 28.4 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache "
                "usage: 0.0%, Prefix cache hit rate: 0.0%, MM cache hit rate: 0.0%")
    assert mm is not None and (mm.fields["#running-req"], mm.fields["usage"], mm.fields["engine_index"]) == (0, 0.0, "000")
    # the first V1 logger (vllm/v1/metrics/loggers.py, 0.7.x), built from its format string: no usage printed at all
    first = _parse("INFO 02-10 10:00:00 [loggers.py:72] Avg prompt throughput: 0.0 tokens/s, Avg generation "
                   "throughput: 41.5 tokens/s, Running: 3 reqs, Waiting: 2 reqs ")
    assert first is not None and (first.fields["#running-req"], first.fields["#queue-req"]) == (3, 2)
    assert "usage" not in first.fields


def test_newest_v1_row_with_deferred_and_preemptions() -> None:
    # vllm/v1/metrics/loggers.py after PR 28522 (late 2025): `Deferred: %d reqs` and `Preemptions: %d` appear when
    # non-zero, between Waiting and the cache usage (line built from that format string)
    ev = _parse("(APIServer pid=7) INFO 01-20 10:00:00 [loggers.py:257] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                "Avg generation throughput: 812.4 tokens/s, Running: 64 reqs, Waiting: 30 reqs, Deferred: 2 reqs, "
                "Preemptions: 5, GPU KV cache usage: 99.1%, Prefix cache hit rate: 12.0%")
    assert ev is not None
    f = ev.fields
    assert (f["#running-req"], f["#queue-req"], f["preempted"], f["usage"]) == (64, 30, 5, pytest.approx(0.991))


@pytest.mark.parametrize("text,seconds", [
    ("[2025-12-12 08:43:59 TP0] Decode batch, #running-req: 6", "2025-12-12 08:43:59"),
    ("INFO 12-13 10:31:12 engine.py:280] Added request", "2001-12-13 10:31:12"),
    ("(APIServer pid=5150) INFO 07-14 21:33:52 [loggers.py:273] Engine 000: Avg", "2001-07-14 21:33:52"),
    ("2024-12-23 18:28:10 - vllm.engine.metrics - INFO - Avg prompt", "2024-12-23 18:28:10"),
])
def test_row_times(text: str, seconds: str) -> None:
    from datetime import datetime

    assert row_time(text) == datetime.fromisoformat(seconds).replace(tzinfo=UTC).timestamp()


def test_row_time_of_the_old_sglang_stamp_and_of_no_stamp() -> None:
    assert row_time(_first("sglang-time-only-lone.log")) == 4 * 3600 + 40 * 60 + 55
    assert row_time("Decode batch. #running-req: 1010, #token: 55006") == -1


def test_one_timeline_per_dp_group_and_per_vllm_engine() -> None:
    rep = triage_dir(STATS / "sglang-dp-attention-mtp.log")
    assert sorted(t.source for t in rep.timelines) == [f"sglang-dp-attention-mtp.log DP{i}" for i in (0, 2, 5, 6, 7)]
    rep = triage_dir(STATS / "vllm-v1-iso-docker.log")
    assert [(t.source, t.rows) for t in rep.timelines] == [("vllm-v1-iso-docker.log pid=1 Engine 000", 4)]


# -- KV pressure: usage >= 0.9 while requests wait, episodes per engine, severity by share of the run
def test_vllm_v1_pressure_is_a_warning_with_its_episodes() -> None:
    f = top(triage_dir(STATS / "vllm-v1-mtp-pressure.log"))
    assert (f.rule, f.category, f.severity) == ("serving.kv-pool-saturated", "serving-oom-retraction", "warning")
    assert [e.line for e in f.evidence] == [1, 5]
    n = f.numbers
    assert (n["pressure_rows"], n["rows"], n["episodes"], n["peak_usage"], n["peak_queue"]) == (4, 5, 2, 0.984, 43)
    assert n["seconds_under_pressure"] == 20 and n["program"] == "vllm"


def test_vllm_v0_pressure_with_old_fields() -> None:
    f = top(triage_dir(STATS / "vllm-v0-stuck-pending.log"))
    assert (f.rule, f.severity, f.evidence[0].line, f.numbers["peak_queue"]) == ("serving.kv-pool-saturated",
                                                                                  "warning", 1, 115)


@pytest.mark.parametrize("name", ["vllm-v1-high-usage-no-queue.log", "vllm-v0-pending-82.log", "vllm-v1-iso-docker.log",
                                  "sglang-dp-attention-mtp.log"])
def test_no_pressure_without_a_queue_or_below_090(name: str) -> None:
    assert not [f for f in triage_dir(STATS / name).findings if f.rule == "serving.kv-pool-saturated"]


def test_a_lone_pressure_row_in_a_long_healthy_log_is_info(tmp_path: Path) -> None:
    rows = [_first("vllm-v0-pending-82.log")] * 160  # 160 real rows below 0.9, then one real pressure row
    rep = triage_files(tmp_path, {"vllm.log": "\n".join(rows + [_first("vllm-v0-stuck-pending.log")]) + "\n"})
    f = next(f for f in rep.findings if f.rule == "serving.kv-pool-saturated")
    assert (f.severity, f.numbers["pressure_rows"], f.numbers["rows"]) == ("info", 1, 161)


@pytest.mark.parametrize("case,lines,peak", [
    ("062", [1, 5], 0.94),  # SGLang D5 decode rows with the trailing comma, 0.94 with 5 queued
    ("107", [1, 3], 0.95),  # SGLang PD prefill rows (#unbootstrapped-req, #transferring-req)
    ("121", [1], 0.93),  # SGLang D0/D1 row with no prefix at all
])
def test_corpus_pressure_cases(case: str, lines: list[int], peak: float) -> None:
    f = top(triage_dir(_case(case)))
    assert (f.rule, f.category, f.severity) == ("serving.kv-pool-saturated", "serving-oom-retraction", "warning")
    assert [e.line for e in f.evidence] == lines and f.numbers["peak_usage"] == pytest.approx(peak)
    assert {k.name for k in f.knobs} >= {"inference.sglang_mem_fraction_static", "inference.sglang_max_total_tokens",
                                         "inference.sglang_max_running_requests"}


def test_pd_decode_preallocation_queue_counts_as_waiting() -> None:
    # SGLang PD decode row (format of log-formats.md §A.d D2: `pre-allocated usage`, `#prealloc-req`), built
    ev = _parse("[2025-06-20 10:00:00 TP0] Decode batch. #running-req: 64, #token: 120000, token usage: 0.97, "
                "pre-allocated usage: 0.02, #prealloc-req: 12, #transfer-req: 3, cuda graph: True, gen throughput "
                "(token/s): 2100.00, #queue-req: 0")
    assert ev is not None and (ev.fields["#queue-req"], ev.fields["usage"]) == (12, 0.97)


def test_preemptions_counted_in_v1_rows_are_a_finding_even_below_090(tmp_path: Path) -> None:
    # rows built from the format of vllm/v1/metrics/loggers.py (late 2025 ->): `Preemptions: N` per interval
    row = ("(APIServer pid=7) INFO 01-20 10:00:{s} [loggers.py:257] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
           "Avg generation throughput: 812.4 tokens/s, Running: 64 reqs, Waiting: 0 reqs, Preemptions: {p}, "
           "GPU KV cache usage: 84.0%, Prefix cache hit rate: 12.0%")
    rep = triage_files(tmp_path, {"vllm.log": "\n".join(row.format(s=f"{10 * i:02d}", p=p) for i, p in
                                                         enumerate((3, 4))) + "\n"})
    f = top(rep)
    assert (f.rule, f.severity, f.count, [e.line for e in f.evidence]) == ("serving.kv-pool-saturated", "warning", 7,
                                                                          [1, 2])
    assert rep.figures["retractions"] == 7


# -- retractions and preemptions as counted signals
def test_retractions_are_counted_per_file() -> None:
    from triage.checks.base import Run
    from triage.checks.serving import pressure_seen

    rep_events = []
    for n, text in enumerate((STATS / "sglang-runaway-usage-1-retract.log").read_text().splitlines(), 1):
        ev = _parse(text)
        if ev is not None and ev.kind == "retraction":
            ev.line.lineno = n
            rep_events.append(ev)
    assert [e.fields["count"] for e in rep_events] == [1] * 5
    assert pressure_seen(Run(events=rep_events)) == (-1.0, 0, 5)
    v0 = _parse((FIXTURES / "lines" / "vllm-preemption.log").read_text().splitlines()[0])
    assert v0 is not None and (v0.kind, v0.fields["mode"], v0.fields["cumulative"]) == ("retraction", "RECOMPUTE", 101)


def test_usage_one_without_a_queue_is_not_pressure_but_the_retraction_is_reported() -> None:
    rules = [f.rule for f in triage_dir(STATS / "sglang-runaway-usage-1-retract.log").findings]
    assert rules[0] == "serving.kv-retraction" and "serving.kv-pool-saturated" not in rules


# -- stragglers from stats: one or two requests decoding alone, nothing waiting, for minutes
def test_corpus_060_single_request_decoding_for_five_minutes() -> None:
    f = top(triage_dir(_case("060")))
    assert (f.rule, f.category, f.severity) == ("tail.stats-lone-decode", "generation-tail", "warning")
    assert [e.line for e in f.evidence] == [2, 5]
    assert (f.numbers["longest_s"], f.numbers["running"]) == (326, 1)
    assert {k.name for k in f.knobs} == {"inference.max_response_length", "rollout.timeout"}


@pytest.mark.parametrize("name", ["vllm-v1-sequential-single.log", "sglang-time-only-lone.log",
                                  "sglang-runaway-usage-1-retract.log"])
def test_no_straggler_for_requests_one_after_another_or_short_tails(name: str) -> None:
    assert not [f for f in triage_dir(STATS / name).findings if f.rule == "tail.stats-lone-decode"]


# -- engine configuration: vLLM args, engine config and capacity lines under canonical knobs
def test_vllm_non_default_args_and_capacity() -> None:
    rep = triage_dir(STATS / "vllm-v1-nondefault-args.log")
    cfg = {k: v["value"] for k, v in rep.config.items()}
    assert cfg == {"inference.max_context_length": 262144, "inference.sglang_max_running_requests": 2,
                   "inference.sglang_max_total_tokens": 620944, "miles.sglang_chunked_prefill_size": 8192,
                   "inference.tensor_parallel_size": 2}
    assert rep.config["inference.sglang_max_total_tokens"]["origin"] == "resolved"


def test_vllm_engine_config_line_and_v0_blocks() -> None:
    cfg = triage_dir(STATS / "vllm-v1-engine-config-083.log").config
    assert (cfg["inference.max_context_length"]["value"], cfg["inference.max_context_length"]["origin"]) == (102400,
                                                                                                            "resolved")
    cfg = triage_dir(STATS / "vllm-v0-python-logging.log").config
    assert cfg["inference.sglang_max_total_tokens"]["value"] == 50231 * 16
    assert cfg["inference.max_context_length"]["value"] == 32768


def test_a_vllm_finding_names_vllm_flags_and_their_values(tmp_path: Path) -> None:
    args = _first("vllm-v1-nondefault-args.log")
    rep = triage_files(tmp_path, {"vllm.log": args + "\n" + (STATS / "vllm-v1-mtp-pressure.log").read_text()})
    f = top(rep)
    running = next(k for k in f.knobs if k.name == "inference.sglang_max_running_requests")
    assert (running.aliases[0], running.current) == ("--max-num-seqs", 2)


def test_vllm_serve_command_line_with_underscore_flags() -> None:
    # vllm-project/vllm issue 28228 (2025-11): underscores and dashes mixed on one `vllm serve` line
    ev = _parse("      vllm serve cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit --port 8111 --gpu-memory-utilization 0.95 "
                "--max_model_len 120000 --tensor_parallel 2 --enable_prefix_caching --max_num_batched_tokens 64000 "
                "--max-num-seqs 8 --trust-remote-code")
    assert ev is not None and ev.kind == "settings"
    f = ev.fields
    assert (f["--gpu-memory-utilization"], f["--max-model-len"], f["--max-num-batched-tokens"], f["--max-num-seqs"]) == (
        0.95, 120000, 64000, 8)


# -- the pool as the knob
def test_pool_below_context_from_vllm_v0_capacity_lines() -> None:
    rep = triage_dir(FIXTURES / "lines" / "vllm-kv-too-small.log")
    f = next(f for f in rep.findings if f.rule == "config.pool-below-context")
    assert (f.severity, f.numbers["pool_tokens"], f.numbers["context_length"]) == ("warning", 1478 * 16, 29000)
    assert f.knobs[0].name == "inference.sglang_mem_fraction_static"


def test_a_pool_risk_the_stats_show_never_materialised_is_info(tmp_path: Path) -> None:
    capacity = (FIXTURES / "lines" / "vllm-kv-too-small.log").read_text().splitlines()[2:4]  # blocks, concurrency
    rows = (STATS / "vllm-v1-iso-docker.log").read_text().splitlines()
    rep = triage_files(tmp_path, {"vllm.log": "\n".join(capacity + rows) + "\n"})
    f = next(f for f in rep.findings if f.rule == "config.pool-below-context")
    assert f.severity == "info" and "0.80 usage" in f.numbers["not_materialised"]


def test_the_pool_is_the_input_limit(tmp_path: Path) -> None:
    # the SGLang capacity line is built from its format (log-formats.md §A.b); the rejection is a real line
    # (sgl-project/sglang issue 4048)
    log = ("[2025-03-03 06:40:00 TP0] max_total_num_tokens=59863, chunked_prefill_size=4096, max_prefill_tokens=16384, "
           "max_running_requests=2048, context_len=163840, available_gpu_mem=4.10 GB\n"
           "[2025-03-03 06:49:28 TP5] Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens). "
           "Use a shorter input or enable --allow-auto-truncate.\n")
    f = top(triage_files(tmp_path, {"sglang.log": log}))
    assert (f.rule, f.category, f.evidence[0].line) == ("config.pool-is-input-limit", "prompt-budget", 2)
    assert [k.name for k in f.knobs][:2] == ["inference.sglang_mem_fraction_static", "inference.sglang_max_total_tokens"]
    assert (f.numbers["max_allowed"], f.numbers["pool_tokens"], f.numbers["context_length"]) == (59862, 59863, 163840)


@pytest.mark.parametrize("native", ["", "1"])
def test_pressure_counts_stay_exact_in_a_large_log_on_both_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  native: str) -> None:
    # 3.6 MB of real V1 rows (over fastscan's sample-everything size), 4 of every 5 under pressure
    rows = (STATS / "vllm-v1-mtp-pressure.log").read_text().splitlines()
    monkeypatch.setenv("TRIAGE_NO_NATIVE", native)
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    rep = triage_files(tmp_path, {"vllm.log": "\n".join(rows * 3000) + "\n"})
    f = next(f for f in rep.findings if f.rule == "serving.kv-pool-saturated")
    assert (f.numbers["pressure_rows"], f.numbers["rows"], f.numbers["episodes"]) == (12000, 15000, 3001)
    assert (f.evidence[0].line, f.evidence[-1].line) == (1, 15000)
