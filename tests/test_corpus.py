"""Every real case of the development corpus (fixtures/real, copied from ../shared/corpus): the top finding's
rule, category, evidence file:line, the numbers it extracted, and a knob from the case's expected list."""

from __future__ import annotations

import pytest
import yaml
from conftest import REAL, top, triage_dir
from domain import SIX

from triage.model import SEVERITY_RANK

# case -> (rule id, evidence "file:line", {number: value})
EXPECTED = {
    "004-slime-retool-logprobs-inductor-oom-h200": ("trainer.cuda-oom", "train.log:10",
                                                    {"tried": 29.39, "capacity": 139.81, "reserved_unallocated": 20.79}),
    "008-sglang-engine-input-longer-than-context": ("prompt.context-length-exceeded", "rollout.log:1",
                                                    {"input_tokens": 85050, "context_length": 32768}),
    "011-vllm-2026-max-context-prompt-plus-output": ("prompt.context-length-exceeded", "rollout.log:1",
                                                     {"input_tokens": 4096, "context_length": 4096, "response_tokens": 1}),
    "014-sglang-deepgemm-precompile-dp-ep-prefix": ("cold.deepgemm-jit-compile", "sglang-engine-0.log:1", {}),
    "020-verl-default-compute-score-empty-data-source": ("verifier.reward-not-implemented", "train.log:3", {}),
    "025-nccl-watchdog-allreduce-timeout-torch26-pg-guid": ("other.nccl-watchdog-timeout", "train.log:1",
                                                            {"op": "ALLREDUCE", "timeout_ms": 600000, "ran_ms": 600020}),
    "028-sglang-segfault-ncclcomminitrank-startup": ("other.segfault", "sglang-engine-0.log:3", {}),
    "031-sglang-overlap-thread-cuda-error-oom-1p5b": ("serving.engine-cuda-oom", "sglang-engine-0.log:14", {}),
    "036-sglang-swa-full-token-usage-1-queue-growing": ("serving.kv-pool-saturated", "sglang-engine-0.log:1",
                                                        {"saturated_rows": 2, "peak_queue": 3.0}),
    "038-rlinf-fsdp-sync-model-to-rollout-oom": ("trainer.oom-weight-sync", "train.log:1",
                                                 {"capacity": 23.64, "allocated": 21.35, "process_in_use": 22.14}),
    "040-verl-step-response-clip-ratio-0p52": ("gen.cap-hit-rate", "train.log:1",
                                               {"metric": "response_length/clip_ratio", "max": 0.521}),
    "044-sglang-lmcache-prealloc-indices-valueerror": ("other.engine-crash", "sglang-engine-0.log:2", {"process": "Scheduler"}),
    "046-vllm-slow-safetensors-shard-loading": ("cold.slow-weight-loading", "vllm-engine-0.log:1",
                                                {"elapsed": 267, "remaining": 175, "total": 96}),
    "052-open-instruct-local-judge-context-window-exceeded": ("verifier.judge-context-length", "judge.log:1",
                                                              {"context_length": 8192, "input_tokens": 8792}),
    "055-vllm-longcontext-eval-prompt-plus-completion": ("prompt.context-length-exceeded", "rollout.log:9",
                                                         {"input_tokens": 9591, "response_tokens": 10000, "context_length": 16384}),
    "058-verl-agent-loop-slowest-sample-long-tail": ("gen.slowest-sample-tail", "train.log:2",
                                                     {"slowest_response_length": 3072.0, "max_response_length": 3072.0}),
    "059-verl-sglang-build-rollout-nccl-watchdog-mesh-tp": ("other.nccl-watchdog-timeout", "train.log:8", {"seq": 3}),
    "063-sglang-rocm-negative-profiled-kv-tokens-dp8": ("serving.kv-pool-profiled-negative", "sglang-engine-0.log:2",
                                                        {"requested": 131072, "profiled": -561981}),
    "067-olmocr-sglang-server-never-ready": ("cold.startup-not-ready", "launcher.log:19", {"phase": "unknown"}),
    "069-deepspeed-chat-step3-rlhf-oom-v100": ("trainer.cuda-oom", "train.log:1",
                                               {"tried": 2.72, "capacity": 31.75, "allocated": 23.68, "free": 2.36}),
    "070-verl-prime-reward-task-failed-cant-pickle": ("verifier.reward-task-failed", "train.log:1", {}),
    "071-sglang-retracted-request-e2e-latency-792s": ("gen.straggler-request", "rollout.log:5", {"seconds": 791.9391989707947}),
    "077-multi-slime-trainer-illegal-memory-access-plus-miles-engine": ("other.cuda-error", "train.log:18", {}),
}
CASES = sorted(p.name for p in REAL.iterdir() if (p / "expect.yaml").is_file())


def _expect(case: str) -> dict:
    return yaml.safe_load((REAL / case / "expect.yaml").read_text())


def test_every_case_has_an_expectation_here() -> None:
    healthy = {c for c in CASES if _expect(c)["category"] == "none"}
    assert set(CASES) - healthy == set(EXPECTED)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_top_finding(case: str) -> None:
    exp = _expect(case)
    report = triage_dir(REAL / case / "input")
    f = top(report)
    rule, where, numbers = EXPECTED[case]
    assert f.rule == rule
    if exp["category"] == "other":
        assert f.category not in SIX
    else:
        assert f.category == exp["category"]
    assert f"{f.evidence[0].file}:{f.evidence[0].line}" == where
    for key, value in numbers.items():
        assert f.numbers[key] == pytest.approx(value) if isinstance(value, float) else f.numbers[key] == value
    if exp["category"] in SIX:
        names = {k.name for k in f.knobs}
        assert names & set(exp["knobs"]), f"none of {sorted(names)} in {exp['knobs']}"
        texts = [e.text for e in f.evidence]
        assert any(s in t for s in exp["evidence"] for t in texts)


@pytest.mark.parametrize("case", [c for c in CASES if _expect(c)["category"] == "none"])
def test_healthy_runs_raise_nothing_in_the_six(case: str) -> None:
    report = triage_dir(REAL / case / "input")
    serious = [f for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]
    assert serious == []
