"""Recognition round 20 (r20b): agent-episode and model-call timeouts, health windows shorter than a cold start
(real-extra 1900-1906).

- Harbor's AgentTimeoutError (trial.py wraps the agent phase in asyncio.wait_for; result.json, exception_stats,
  adapters' "harbor agent failure: AgentTimeoutError: Agent execution timed out after N seconds") and the agents'
  own "Agent execution timed out after Ns": gen.agent-episode-timeout, a warning, knob the rollout/agent timeout
  (1903 stella, 1904 agenc-core). Source text defining, catching or raising the class is no run's log; Harbor's
  AgentSetupTimeoutError and VerifierTimeoutError are other failures.
- A model call cut by the client's clock and reported as a provider error ("ProviderError: Request timed out",
  verifiers v1's 600 s httpx default): gen.model-call-timeout (1906), not a verifier timeout.
- A launcher probing /health for a fixed window ("apr serve did not answer /health within 90s"):
  cold.engine-not-ready, folded into cold.startup-not-ready with the 90 s deadline (1900).
- Blind right, by the health-poll signal only (info): kubelet "Startup probe failed: ... connection refused" (1901,
  1902). 1905 (a table of killed trials with no timeout wording) is a known miss.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files


def test_apr_serve_health_window_is_a_startup_deadline():
    f = top(triage_dir(extra_input("1900")))
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-not-ready", "error")
    assert [(e.file, e.line) for e in f.evidence] == [("model-ladder.log", 1)]
    assert f.numbers["deadline"] == 90.0
    assert knob_names(f)[0] == "engine.startup_timeout"


@pytest.mark.parametrize("case, file, line", [
    ("1901", "kubectl-describe-pod.txt", 9),
    ("1902", "kubectl-describe-rag-nim-llm-0.txt", 1),
])
def test_kubelet_startup_probe_refused_is_a_cold_start(case: str, file: str, line: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-phases")
    assert [(e.file, e.line) for e in f.evidence] == [(file, line)]
    assert knob_names(f)[0] == "engine.startup_timeout"


@pytest.mark.parametrize("case, file", [
    ("1903", "arena-trials-summary.md"),
    ("1904", "terminal-bench-4.0-summary.md"),
])
def test_harbor_agent_timeouts_are_the_generation_tail(case: str, file: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.agent-episode-timeout", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [(file, 1)]
    assert knob_names(f) == ["rollout.timeout"]


@pytest.mark.parametrize("line, seconds", [
    ("- recorded agent error: `harbor agent failure: AgentTimeoutError: Agent execution timed out after 900.0 "
     "seconds`", 900.0),
    ('{"exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "Agent execution timed out '
     'after 1800.0 seconds"}}', None),
    ("ERROR [IP-EXEC] Agent execution timed out after 600s: ws-42", 600.0),
])
def test_other_agent_timeout_wordings(tmp_path: Path, line: str, seconds: float | None):
    f = top(triage_files(tmp_path, {"job.log": line + "\n"}))
    assert (f.category, f.rule) == ("generation-tail", "gen.agent-episode-timeout")
    if seconds is not None:
        assert f.numbers["seconds"] == seconds


@pytest.mark.parametrize("line", [
    "class AgentTimeoutError(asyncio.TimeoutError): pass",
    "        except AgentTimeoutError:",
    "AgentSetupTimeoutError: Agent setup timed out after 360.0 seconds",
])
def test_agent_timeout_source_and_setup_are_not_episode_timeouts(tmp_path: Path, line: str):
    fs = triage_files(tmp_path, {"job.log": line + "\n"}).findings
    assert all(f.rule != "gen.agent-episode-timeout" for f in fs)


def test_a_ci_summary_with_a_verifier_timeout_still_blames_the_verifier():
    # 1846 (mux#1680): ten tolerated AgentTimeoutErrors beside the VerifierTimeoutError that failed the job
    f = top(triage_dir(extra_input("1846")))
    assert (f.category, f.rule) == ("verifier", "verifier.trial-timeout")


def test_provider_error_request_timed_out_is_a_model_call_timeout():
    f = top(triage_dir(extra_input("1906")))
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.model-call-timeout", "warning")
    assert [(e.file, e.line) for e in f.evidence] == [("pr-2304-what-broke.md", 5)]
    assert knob_names(f)[0] == "rollout.timeout"


def test_a_judge_provider_timeout_is_not_a_model_call_timeout(tmp_path: Path):
    text = "judge call failed for sample 12\nProviderError: Request timed out\n"
    fs = triage_files(tmp_path, {"eval.log": text}).findings
    assert all(f.rule != "gen.model-call-timeout" for f in fs)


@pytest.mark.parametrize("line, deadline", [
    ("ERROR: vLLM server did not respond to health check within 600 seconds", 600.0),
    ("sglang server never answered /health within 300s", 300.0),
])
def test_other_health_window_wordings(tmp_path: Path, line: str, deadline: float):
    f = top(triage_files(tmp_path, {"launcher.log": line + "\n"}))
    assert (f.category, f.rule) == ("cold-start", "cold.startup-not-ready")
    assert f.numbers["deadline"] == deadline


# round 2 (1907-1910: families the round-1 fixes generalise to, scored before the round-2 changes)

def test_terminal_bench_harness_agent_timed_out_for_task():
    # coder/xum#1539: the harness prints the configured global timeout although a 180 s per-command default fired
    f = top(triage_dir(extra_input("1907")))
    assert (f.category, f.rule) == ("generation-tail", "gen.agent-episode-timeout")
    assert [(e.file, e.line) for e in f.evidence] == [("nightly-harness.log", 2), ("nightly-harness.log", 3)]
    assert f.count == 2
    assert (f.numbers["seconds"], f.numbers["task"]) == (1800.0, "build-linux-kernel-qemu")


def test_lm_eval_api_timeouts_at_the_end_of_mmlu_pro():
    f = top(triage_dir(extra_input("1908")))
    assert (f.category, f.rule) == ("generation-tail", "gen.eval-client-timeout")
    assert [(e.file, e.line) for e in f.evidence] == [("evals.log", 2), ("evals.log", 7)]


def test_aiohttp_socket_timeout_under_litellm_is_a_rollout_timeout():
    # aiohttp 3.10+'s SocketTimeoutError (a ServerTimeoutError) joins httpx's TimeoutException as evidence
    f = top(triage_dir(extra_input("1909")))
    assert (f.category, f.rule) == ("generation-tail", "gen.rollout-timeout")
    assert ("harbor-grep.log", 5) in [(e.file, e.line) for e in f.evidence]
    assert knob_names(f)[0] == "rollout.timeout"


def test_deepgemm_jit_after_ready_is_a_cold_start():
    f = top(triage_dir(extra_input("1910")))
    assert (f.category, f.rule) == ("cold-start", "cold.deepgemm-jit-compile")
    assert knob_names(f)[0] == "compile.cache"


@pytest.mark.parametrize("key", ["train/agg/all/is_truncated/mean", "effective/math-env/is_truncated/mean",
                                 "is_truncated/mean"])
def test_prime_rl_truncation_share_is_the_cap_hit_series(tmp_path: Path, key: str):
    # key names as prime-rl/verifiers write them (orchestrator metrics.jsonl, verifiers eval); the records are made up
    rows = "".join(f'{{"step": {i}, "{key}": {1.0 if i > 1 else 0.9}, "time/step": 30.0}}\n' for i in range(8))
    f = top(triage_files(tmp_path, {"metrics.jsonl": rows}))
    assert (f.category, f.rule) == ("generation-tail", "gen.cap-hit-rate")
    assert f.numbers["metric"] == key
