"""Real excerpts of failure families the corpus lacks (fixtures/lines, sources in its SOURCES.md): the top
finding's rule, evidence line and extracted numbers."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, top, triage_dir

LINES = FIXTURES / "lines"

EXPECTED = {
    "disk-full-torch-save.log": ("other.disk-full", 7, {}),
    "judge-rate-limit.judge.log": ("verifier.judge-api-error", 1, {}),
    "nccl-ib-completion-error.log": ("other.nccl-error", 1, {"status": 12}),
    "openrlhf-remote-rm-refused.judge.log": ("verifier.judge-api-error", 5, {"attempts": 5}),
    "ray-host-oom.log": ("other.host-oom", 1, {"killed": 1}),
    "sandboxfusion-timeout.verifier.log": ("verifier.timeout", 1, {"seconds": 70}),
    "sglang-alloc-req-slots.log": ("serving.request-slots-exhausted", 1, {}),
    "sglang-decode-alloc-failed.log": ("serving.decode-alloc-failed", 2, {}),
    "sglang-decode-oom-retract.log": ("serving.kv-retraction", 1, {"retracted": 1, "ratio_before": 0.1474, "ratio_after": 0.1845}),
    "sglang-graph-capture-oom-compose.log": ("serving.graph-capture-oom", 5, {"tried": 1.5}),
    "sglang-kv-pool-full-retract.log": ("serving.kv-retraction", 5, {"retracted": 1, "tokens_gained": 646}),
    "sglang-mamba-ping-pong.log": ("serving.mamba-slots-exhausted", 5, {}),
    "slime-torch-memory-saver-resume-oom.log": ("serving.memory-saver-resume-oom", 1, {}),
    "slime-torch-memory-saver-trainer.log": ("trainer.cuda-oom", 4, {}),
    "torch21-capacty-typo.log": ("trainer.cuda-oom", 2, {"tried": 55.57, "capacity": 12.0, "free": 9.02}),
    "verl-overlong-prompt.log": ("prompt.framework-length-check", 12, {"input_tokens": 1081, "max_length": 1024}),
    "vllm-kv-too-small.log": ("serving.vllm-kv-capacity", 5, {"context_length": 29000, "pool_tokens": 23648}),
    "vllm-preemption.log": ("serving.vllm-preemption", 1, {"mode": "RECOMPUTE"}),
    "vllm-v0-gpu-blocks-zero.log": ("serving.vllm-kv-memory-negative", 2, {"cpu_blocks": 256}),
    "vllm-v1-no-cache-blocks.log": ("serving.vllm-kv-capacity", 3, {}),
}


def test_every_excerpt_has_an_expectation() -> None:
    assert sorted(p.name for p in LINES.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_excerpt(name: str) -> None:
    rule, line, numbers = EXPECTED[name]
    f = top(triage_dir(LINES / name))
    assert (f.rule, f.evidence[0].line) == (rule, line)
    for key, value in numbers.items():
        assert f.numbers[key] == value


def test_ray_dedup_count_is_the_finding_count() -> None:
    f = top(triage_dir(LINES / "slime-torch-memory-saver-trainer.log"))
    assert f.count == 18  # `[repeated 18x across cluster]`


def test_the_retraction_storm_also_shows_the_saturated_pool() -> None:
    rules = [f.rule for f in triage_dir(LINES / "sglang-kv-pool-full-retract.log").findings]
    assert rules == ["serving.kv-retraction", "serving.kv-pool-saturated"]
