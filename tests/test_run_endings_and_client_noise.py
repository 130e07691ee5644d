"""Recognition round 8 (r8a): how complete runs end and what surrounds them. A torch elastic agent stopped by a
hang-up (signal 1) is stopped from outside, not a crash; a Go client's deadline or timeout "exceeded" is a call that
timed out, not a prompt over its budget; the wandb client's own logs are skipped wherever the run directory was
copied; a threshold check's first and last occurrence are by place; publications are expected only of trainers that
log them. Real lines: the sources are in the comments and in fixtures/real-extra/75N-*/expect.yaml."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import FIXTURES, triage_dir, triage_files

from triage.cli import exit_code
from triage.library.rules import Library

EXTRA = FIXTURES / "real-extra"

# torch elastic agent (torch 2.5, a TRL GRPO job under torchrun, nohup'ed; the login session hung up at step
# 935/936): Ning-Guo/hotpotqa-agent logs/grpo_v2.log (fixtures/real-extra/752)
AGENT_SIGHUP = (
    "100%|█████████▉| 935/936 [44:56:16<02:48, 168.94s/it]W0608 08:11:06.999000 12152 "
    "torch/distributed/elastic/agent/server/api.py:704] Received 1 death signal, shutting down workers\n"
    "W0608 08:11:07.000000 12152 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 12227 closing "
    "signal SIGHUP\n"
    "Traceback (most recent call last):\n"
    '  File "/root/venv_train/bin/torchrun", line 8, in <module>\n'
    "    sys.exit(main())\n"
    '  File "/root/venv_train/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py", line 84, '
    "in _terminate_process_handler\n"
    '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)\n'
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12152 got signal: 1\n"
)
# The same family in torch 1.x's logging format (a public project's notes on closing the ssh window of a torchrun
# job, GitHub code index file id 38962283678), with the worker's SignalException as torch prints it.
OLD_AGENT_SIGHUP = (
    "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers\n"
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 3187 got signal: 1\n"
)


def test_a_torchrun_agent_hung_up_at_the_last_step_is_stopped_not_crashed(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": AGENT_SIGHUP})
    assert exit_code(report.worst(), "error") == 0
    stop = [f for f in report.findings if f.rule == "other.orderly-shutdown"]
    assert stop and stop[0].numbers["signal"] == "SIGHUP"
    assert "other.fatal-exit" not in [f.rule for f in report.findings]


def test_the_older_agent_wording_of_the_hang_up_does_not_gate_either(tmp_path: Path) -> None:
    report = triage_files(tmp_path, {"train.log": OLD_AGENT_SIGHUP})
    assert exit_code(report.worst(), "error") == 0
    assert [f.rule for f in report.findings] == ["other.orderly-shutdown"]


def test_the_whole_sighup_run_exits_0() -> None:
    (case,) = EXTRA.glob("752-*")
    report = triage_dir(case / "input")
    assert exit_code(report.worst(), "error") == 0
    assert [f.rule for f in report.findings if f.severity in ("error", "critical")] == []


def _vocabulary_prompt(lib: Library) -> list[re.Pattern[str]]:
    rule = lib.rule("vocabulary.prompt-over-budget")
    assert rule is not None
    return rule.match


def test_a_go_deadline_or_client_timeout_is_not_a_prompt_over_budget(lib: Library) -> None:
    lines = [
        # wandb client debug-internal.log (fixtures/real-extra/755)
        '{"time":"2025-12-05T16:24:51.555683048+08:00","level":"ERROR","msg":"sender: sendStopStatus: failed to get '
        'run stopped status: context deadline exceeded (Client.Timeout or context cancellation while reading body)"}',
        # a Kubernetes event of an LLM proxy's readiness probe (GitHub code index file id 62912639903)
        '24m     Warning   Unhealthy                      pod/llm-proxy-7dc458997b-q65tb      Readiness probe failed: '
        'Get "http://10.244.1.4:8000/health": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
        # docker pull behind a broken DNS (GitHub code index file id 1266344258)
        "Get https://registry-1.docker.io/v2/: net/http: request canceled while waiting for connection "
        "(Client.Timeout exceeded while awaiting headers)",
    ]
    pats = _vocabulary_prompt(lib)
    assert not [ln for ln in lines if any(p.search(ln) for p in pats)]
    # a prompt over its budget still reads as one: TRL/transformers generate() (the rule's own example)
    assert any(p.search("ValueError: Input length of input_ids is 14317, but `max_length` is set to 8192.") for p in pats)
    # and so does a request whose prompt exceeds the context (vLLM's OpenAI server, 2024-2026)
    assert any(p.search("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
                        "(3000 in the messages, 2000 in the completion). Please reduce the length of the messages or "
                        "completion.") for p in pats)


def test_the_wandb_clients_own_log_is_skipped_outside_a_run_directory_name(tmp_path: Path) -> None:
    line = ('{"time":"2025-12-05T11:01:06.120228776+08:00","level":"ERROR","msg":"sender: sendStopStatus: failed to get '
            'run stopped status: net/http: request canceled (Client.Timeout or context cancellation while reading body)"}\n')
    report = triage_files(tmp_path, {"logs/debug-internal.log": line, "logs/debug-core.log": line})
    assert report.findings == []
    assert sorted((f.rel, f.status) for f in report.files) == [("logs/debug-core.log", "skipped"),
                                                               ("logs/debug-internal.log", "skipped")]


def test_a_long_cap_hit_run_cites_the_worst_step_and_spans_first_to_last() -> None:
    (case,) = EXTRA.glob("755-*")
    report = triage_dir(case / "input")
    f = report.findings[0]
    assert (f.rule, f.category) == ("gen.cap-hit-rate", "generation-tail")
    # worst step 226 (0.254), the first step at 0.2 or more (159) and the last (238): first before last
    assert [e.line for e in f.evidence] == [367, 257, 385]
    assert (f.first.line, f.last.line) == (257, 385)
    assert [g.rule for g in report.findings if g.category == "prompt-budget"] == []


def test_trl_steps_without_a_publication_line_are_no_evidence_of_a_missing_one(tmp_path: Path) -> None:
    # TRL GRPOTrainer metric dicts (fixtures/real-extra/751): TRL generates with the model it trains
    rec = ("{'loss': 0.0043, 'grad_norm': 4.302247524261475, 'learning_rate': 4.994369396289063e-06, "
           "'rewards/combined_reward': 0.7255576837807893, 'reward': 0.7255576837807893, 'reward_std': "
           "0.09798035061685369, 'completion_length': 117.809375, 'kl': 0.08682649958900583, 'epoch': 0.04}\n")
    report = triage_files(tmp_path, {"train.log": rec * 5})
    assert "health.publication-missing" not in [f.rule for f in report.findings]


def test_the_response_cap_is_named_in_the_trainers_own_terms() -> None:
    # verl step lines (755): a Hydra override; TRL GRPOTrainer dicts (710): TrlParser's flag; slime keeps its own
    (verl,) = EXTRA.glob("755-*")
    (trl,) = EXTRA.glob("710-*")
    for case, alias in ((verl, "data.max_response_length="), (trl, "--max_completion_length")):
        f = triage_dir(case / "input").findings[0]
        k = next(k for k in f.knobs if k.name == "inference.max_response_length")
        assert k.aliases[0] == alias
        assert "--rollout-max-response-len" in k.aliases  # the other programs' names stay, after it


def test_a_slime_run_keeps_the_slime_flag(tmp_path: Path) -> None:
    # slime's RolloutManager perf dict with 46% truncated (THUDM/slime#1837, 2026-04)
    text = ("(RolloutManager pid=1805485) [2026-04-15 07:57:53] rollout.py:1193 - perf 0: {'rollout/response_len/mean': "
            "2773.71484375, 'rollout/response_len/median': 2837.5, 'rollout/response_len/max': 4096, "
            "'rollout/response_len/min': 593, 'rollout/zero_std/count_0': 12, 'rollout/zero_std/count_1': 14, "
            "'rollout/repetition_frac': 0.0, 'rollout/truncated_ratio': 0.46484375, 'perf/rollout_time': 371.1796889305115, "
            "'perf/tokens_per_gpu_per_sec': 239.12643295688667, 'perf/longest_sample_tokens_per_sec': 11.035086568992766, "
            "'perf/effective_tokens_per_gpu_per_sec': 239.12643295688667, "
            "'perf/longest_effective_sample_tokens_per_sec': 11.035086568992766}\n")
    f = next(f for f in triage_files(tmp_path, {"rollout.log": text}).findings if f.rule == "gen.cap-hit-rate")
    k = next(k for k in f.knobs if k.name == "inference.max_response_length")
    assert k.aliases[0] == "--rollout-max-response-len"


def test_cap_hits_that_stopped_are_info_and_say_so() -> None:
    # verl PPO, Qwen3-0.6B at a 512 cap (756): 79% clipped at step 1, under 20% from step ~40, 4-12% at the end
    (case,) = EXTRA.glob("756-*")
    f = next(f for f in triage_dir(case / "input").findings if f.rule == "gen.cap-hit-rate")
    assert (f.severity, f.category) == ("info", "generation-tail")
    assert f.title.startswith("Responses hit the response-length cap early, then stopped")
    assert f.numbers["max"] == 0.79296875 and f.numbers["recent_max"] < 0.2
    assert (f.first.line, f.last.line) == (844, 1049)  # steps 1 and 46: the first and the last over 0.2


def test_cap_hits_still_going_at_the_end_stay_a_warning() -> None:
    # verl OPD (755): 0.14-0.25 over the last 20 steps
    (case,) = EXTRA.glob("755-*")
    f = next(f for f in triage_dir(case / "input").findings if f.rule == "gen.cap-hit-rate")
    assert f.severity == "warning" and "recent_max" not in f.numbers
