"""Round-2 serving families on real lines (fixtures/real-extra 101-114, fixtures/lines): the engine's wake-up
OOM under torch_memory_saver, vLLM's negative KV budget, and what must stay quiet (healthy admission bursts)."""

from __future__ import annotations

from conftest import FIXTURES, top, triage_dir
from domain import SIX

from triage.model import SEVERITY_RANK

EXTRA = FIXTURES / "real-extra"


def _case(prefix: str):
    (d,) = [p for p in EXTRA.iterdir() if p.name.startswith(prefix)]
    return triage_dir(d / "input")


def test_memory_saver_resume_oom_is_the_engines_wake_up() -> None:
    f = top(_case("104-"))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "serving.memory-saver-resume-oom", "error")
    assert (f.evidence[0].file.rsplit('/', 1)[-1], f.evidence[0].line) == ("rollout.log", 1)
    assert f.count == 8  # one line plus `[repeated 7x across cluster]`
    assert "inference.sglang_mem_fraction_static" in [k.name for k in f.knobs]


def test_vllm_negative_kv_budget_names_the_memory_share() -> None:
    f = top(_case("106-"))
    assert (f.rule, f.severity, f.evidence[0].line) == ("serving.vllm-kv-memory-negative", "error", 7)
    assert f.numbers["kv_gib"] == -2.14
    assert [k.name for k in f.knobs][0] == "inference.sglang_mem_fraction_static"


def test_vllm_v0_preemption_in_a_verl_worker() -> None:
    f = top(_case("101-"))
    assert (f.rule, f.evidence[0].line) == ("serving.vllm-preemption", 3)


def test_full_pool_at_one_with_a_queue_is_pressure_even_on_a_hybrid_swa_model() -> None:
    f = top(_case("102-"))
    assert (f.category, f.rule) == ("serving-oom-retraction", "serving.kv-pool-saturated")


def test_admission_bursts_with_a_queue_and_a_low_pool_stay_quiet() -> None:
    for prefix in ("112-", "113-", "114-"):
        findings = _case(prefix).findings
        assert not [f for f in findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1], prefix
