"""Recognition round 23 (r23b): serving OOM/retraction and generation tail, SGLang and vLLM (real-extra 2270-2283; 2279, 2281, 2282 were prose, not logs, and were dropped).

- A shared (kvcached) KV pool that had fewer free pages than a request needed, with the engine core dying beside
  the allocator's warning ("available_size()=9.0 < need_size=30", kvcached issues 191 and 262), is the engine's
  KV pool running dry: serving.kvcached-pool-exhausted, not an unexplained engine crash (2270, 2271). The warning
  alone (kvcached since its fix preempts instead) is not claimed.
- vLLM V1's BlockPool "Cannot get N free blocks from the pool" is the KV block pool exhausted
  (serving.kv-blocks-exhausted), its leased variant is not.
- SGLang's idle-time KV-pool bookkeeping check ("KV cache pool leak detected!" in 0.1.x, "token_to_kv_pool_allocator
  memory leak detected!" 2025-2026, 0.5.18's "pool memory leak detected!") is an engine bug, other, however much
  of the line reads as memory (2276-2278, 2283); the radix-cache workaround is named, not the pool size.
- vLLM V0's failed-execution dump right after a preemption is the engine dying on the preemption path
  (serving.vllm-preemption-crashed); 2275's thread blames priority scheduling (label other, a known miss).
- Blind-right cases pinned: SGLang prefill allocation failures in 2026 and in a paste whose newlines were lost
  (2273, 2274), a preemption followed by an offline traceback (2272).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

# -- a shared KV pool that ran dry ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case, line, free, needed", [
    ("2270", 2, 9.0, 30),
    ("2271", 1, 71, 76),
])
def test_kvcached_pool_short_with_engine_death_is_the_kv_pool(case: str, line: int, free: float, needed: int) -> None:
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.kvcached-pool-exhausted", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm-kvcached.log", line)
    assert any("(EngineCore" in e.text or "EngineCore encountered" in e.text for e in f.evidence[1:])  # its death
    assert (f.numbers["pages_free"], f.numbers["pages_needed"]) == (free, needed)
    assert "inference.sglang_max_running_requests" in knob_names(f)
    assert "other.engine-crash" in f.numbers["symptoms"]


def test_kvcached_warning_alone_is_not_claimed(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"engine.log": (
        "(EngineCore_DP0 pid=10311) [kvcached][WARNING][2025-10-25 11:17:27][kv_cache_manager.py:164] "
        "available_size()=9.0 < need_size=30\n"
        "(APIServer pid=1) INFO 10-25 11:17:37 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s\n")})
    assert "serving.kvcached-pool-exhausted" not in by_rule(report)


@pytest.mark.parametrize("text, asked", [
    ("ValueError: Cannot get 31 free blocks from the pool", 31),
    ("(EngineCore_DP0 pid=7) ERROR 03-01 10:00:00 [core.py:720] ValueError: Cannot get 1 free blocks from the pool", 1),
])
def test_vllm_block_pool_without_free_blocks(tmp_path: Path, text: str, asked: int) -> None:
    f = by_rule(triage_files(tmp_path, {"engine.log": text + "\n"}))["serving.kv-blocks-exhausted"]
    assert (f.category, f.severity) == ("serving-oom-retraction", "error")
    assert f.numbers["blocks_asked"] == asked


def test_a_leased_block_variant_is_not_the_kv_pool(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"engine.log": "GMSKVLeaseUnavailable: Cannot get 4 leased free blocks from the pool\n"})
    assert "serving.kv-blocks-exhausted" not in by_rule(report)


# -- the KV pool's bookkeeping check: an engine bug -------------------------------------------------------------------


@pytest.mark.parametrize("case, file, line", [
    ("2276", "sglang-server.log", 2),
    ("2277", "run.log", 1),
    ("2278", "sglang-server.log", 5),
    ("2283", "sglang-server.log", 1),
])
def test_kv_pool_leak_check_is_an_engine_bug(case: str, file: str, line: int) -> None:
    report = triage_dir(extra_input(case))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.engine-kv-pool-leak-check", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert knob_names(f) == ["inference.sglang_disable_radix_cache"]
    # no serving or trainer memory failure is claimed for the leak (2277's graph-size note is a config warning)
    assert not [g for g in report.findings if g.category in SIX and g.severity == "error"]


def test_sglang_2277_over_free_still_names_the_sigquit_as_its_symptom() -> None:
    f = top(triage_dir(extra_input("2277")))
    assert {"other.engine-crash", "other.killed-sigkill"} <= set(f.numbers["symptoms"])


# -- vLLM preemption, then the engine died ------------------------------------------------------------------------------


def test_failed_execution_dump_after_a_preemption_is_the_preemption_path() -> None:
    f = top(triage_dir(extra_input("2275")))
    assert (f.rule, f.severity) == ("serving.vllm-preemption-crashed", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("vllm-server.log", 8)
    assert f.numbers["mode"] == "RECOMPUTE"


def test_offline_preemption_then_traceback_is_a_preemption() -> None:
    f = top(triage_dir(extra_input("2272")))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.vllm-preemption")
    assert (f.evidence[0].file, f.evidence[0].line, f.numbers["group"]) == ("offline.log", 1, 147)


# -- blind-right: prefill allocation failures, a cap-hit share in prose ----------------------------------------------


@pytest.mark.parametrize("case", ["2273", "2274"])
def test_sglang_prefill_allocation_failure(case: str) -> None:
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.prefill-alloc-failed", "error")
    assert (f.evidence[0].file, f.evidence[0].line) == ("sglang-server.log", 1)
    assert "miles.sglang_chunked_prefill_size" in knob_names(f)

