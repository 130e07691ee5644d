"""Every rule's own examples (patterns/*.yaml): `match` lines match, `no_match` lines do not; check rules fire
on their example logs. Adding a rule adds its test here with no Python edit."""

from __future__ import annotations

import pytest

from triage.library.rules import load_library
from triage.rulecheck import rule_problems

LIB = load_library()


@pytest.mark.parametrize("rule_id", sorted(r.id for r in LIB.rules))
def test_rule_examples(rule_id: str) -> None:
    rule = LIB.rule(rule_id)
    assert rule is not None
    assert rule.examples.get("match"), "every rule carries at least one example that must match"
    assert rule_problems(LIB, rule) == []


def test_every_category_has_rules_and_every_rule_knob_is_catalogued() -> None:
    cats = {r.category for r in LIB.rules}
    assert {"prompt-budget", "serving-oom-retraction", "trainer-oom", "cold-start", "generation-tail", "verifier",
            "other"} <= cats
    for r in LIB.rules:
        for k in r.knobs:
            assert k in LIB.knobs


def test_knob_catalogue_holds_every_canonical_name() -> None:
    canonical = {
        "inference.max_context_length", "inference.max_response_length", "miles.rollout_max_prompt_len",
        "trainer.micro_batch_size", "trainer.sequence_packing", "trainer.packing_max_tokens",
        "trainer.activation_recompute", "miles.log_probs_chunk_size", "inference.sglang_server_concurrency",
        "inference.sglang_max_running_requests", "inference.sglang_max_total_tokens",
        "inference.sglang_max_mamba_cache_size", "miles.sglang_chunked_prefill_size",
        "inference.sglang_cuda_graph_max_bs_decode", "inference.sglang_mem_fraction_static",
        "inference.sglang_disable_radix_cache", "PYTORCH_CUDA_ALLOC_CONF", "verifier.timeout",
        "verifier.reward_function", "judge.max_context_length", "judge.rate_limit", "rollout.timeout",
        "engine.startup_timeout", "engine.load_format", "compile.cache",
    }
    assert canonical <= set(LIB.knobs)
    assert LIB.knob("--sglang-max-running-requests").name == "inference.sglang_max_running_requests"
    assert LIB.knob("--mem-fraction-static").name == "inference.sglang_mem_fraction_static"
