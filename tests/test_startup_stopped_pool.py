"""A static KV-pool risk on an engine whose log stops inside its startup (never ready, never served) is not what
happened to the run: it is information, and the start-up findings lead (real-extra 652: SGLang 0.5.16 on a DGX Spark,
618 s weight load, the log ends inside prefill CUDA-graph capture)."""

from __future__ import annotations

from conftest import FIXTURES, triage_dir

CASE = FIXTURES / "real-extra" / "652-sglang-0516-nvfp4-first-capture-step-abandoned" / "input"


def test_the_start_up_leads_and_the_unused_pool_is_info() -> None:
    findings = triage_dir(CASE).findings
    assert findings[0].category == "cold-start"
    # the start that never got past its capture gates (cold.startup-abandoned, round 7; it led as a warning before)
    assert (findings[0].rule, findings[0].severity) == ("cold.startup-abandoned", "error")
    pool = [f for f in findings if f.rule in ("config.pool-below-context", "config.pool-fits-few-sequences")]
    assert pool and all(f.severity == "info" for f in pool)
    assert all("stops inside its startup" in f.numbers["not_materialised"] for f in pool)
    assert pool[0].numbers["pool_tokens"] == 32997  # the full-attention layers' pool, not the window layers' 26397


def test_a_hybrid_window_models_pool_is_its_full_layer_pool() -> None:
    """SGLang sizes a hybrid sliding-window model's cache as two pools (`Use sliding window memory pool.
    full_layer_tokens=185897, swa_layer_tokens=148717`, then a `KV Cache is allocated` line per pool): a whole
    sequence must fit the full-attention layers' pool, so that is the pool the capacity arithmetic uses."""
    case = FIXTURES / "real-extra" / "653-sglang-0516-laguna-int4-bench-serve-then-sigterm" / "input"
    (f,) = [f for f in triage_dir(case).findings if f.rule == "config.pool-fits-few-sequences"]
    assert (f.numbers["pool_tokens"], f.evidence[0].line) == (185897, 151)


def test_harmless_and_silent_engine_warnings_are_named() -> None:
    """vLLM's reasoning parser without delimiters is named, as information: vLLM prints it by design for parsers
    that split on token ids or choose per request, and the start-up line alone shows no empty answer (runs15b);
    SGLang's missing generation_config.json is information, not an unexplained warning."""
    rules = {f.rule: f for f in triage_dir(FIXTURES / "real-extra" / "654-vllm-0251-laguna-int4-262k-serve-bench-shutdown"
                                           / "input").findings}
    assert rules["other.reasoning-parser-no-delimiters"].severity == "info"
    assert rules["other.reasoning-parser-no-delimiters"].evidence[0].line == 24
    info = {f.rule: f for f in triage_dir(CASE).findings}["other.no-generation-config"]
    assert (info.severity, info.evidence[0].line) == ("info", 33)


def test_a_load_that_only_projects_minutes_is_not_slow() -> None:
    """tqdm's projection from the first shard (1/15 [00:29<06:47]) is no evidence: the load took 109 s (653, SGLang)
    and 115 s (654, vLLM); only the time a load has actually taken counts."""
    for case in ("653-sglang-0516-laguna-int4-bench-serve-then-sigterm",
                 "654-vllm-0251-laguna-int4-262k-serve-bench-shutdown"):
        rules = {f.rule for f in triage_dir(FIXTURES / "real-extra" / case / "input").findings}
        assert "cold.slow-weight-loading" not in rules, case
