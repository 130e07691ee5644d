"""Recognition round 21 (r21d): responses that ran to the output cap, as reports and engine fields say it
(real-extra 2080-2094).

- A share of the responses at the cap, in a report's words: "55% of samples hit the 8,192-token cap" (Marin's
  SkyRL run on Qwen3-235B, 2080), "19-37% of their responses are cut off" (olmo-eval on vLLM 0.19.1, 2081),
  "50–74% of steps exceed 1024" (OEL on verl, 2091), a table row "| Pinned at exactly 4096 | ... | 851 (75.9%) |"
  (2092): gen.cap-hit-share-reported, from a fifth of the responses up.
- The outputs at the cap: a mean "(98% of cap)" (2082), a length marked "512 (hitting limit)" / "1024 (capped)"
  (2084, 2086), "truncated before its boxed answer" (2089), "exactly `output_tokens: 2000`" (2088):
  gen.output-at-cap-reported.
- The engine's finish reason "length" beside a lost answer (empty content, budget run out while thinking):
  gen.finish-reason-length (2087); a warmup request at its 8-token cap is not one.
- Hard negatives: a healthy NeMo-RL async step (2085), a SkyRL launch report (2094), olmo-eval's parity table with
  0-10.8% at the ceiling (2093), and NeMo-RL's 16k junk tokens after vLLM sleep level 2 (2090): not a tail but the
  weights gone, health.weights-discarded-by-sleep (other), also vLLM#29341, ms-swift PR 7017, NeMo-RL#2631.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse


def _top(prefix: str):
    return top(triage_dir(extra_input(prefix)))


# -- a share of the responses at the cap ----------------------------------------------------------------------------

@pytest.mark.parametrize("prefix, file, line, pct", [
    ("2080", "issue-8653.md", 2, 55),
    ("2081", "issue-399.md", 4, 37),
    ("2091", "issue-441.md", 8, 74),
    ("2092", "issue-3490-comment.md", 22, 75.9),
])
def test_share_of_responses_at_the_cap(prefix: str, file: str, line: int, pct: float):
    f = _top(prefix)
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.cap-hit-share-reported", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert f.numbers["pct"] == pct
    assert knob_names(f) == ["inference.max_response_length"]


@pytest.mark.parametrize("line", [
    # trl PR 5759 (TRL GRPO quickstart, 2026-05)
    "The default `max_completion_length=256` truncates 97-99% of completions on DeepMath-103K before the model can "
    "emit `\\boxed{...}`, so `accuracy_reward` scores everything 0.",
    # claude-mem#3490 (the title, 2026-08)
    "`max_tokens` hardcoded to 4096 silently truncates 76% of observation responses",
    # marin#8653's timing comment
    "Generation dominates at 60% — consistent with the >50% of samples running to the 8,192-token cap",
])
def test_other_wordings_of_a_share_at_the_cap(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"notes.md": line + "\n"}))
    assert (f.category, f.rule) == ("generation-tail", "gen.cap-hit-share-reported")


@pytest.mark.parametrize("line", [
    "Only 4% of responses hit the 8,192-token cap.",
    "90% of requests exceed 2000 ms at this concurrency",
    "10% of requests hit the prefix cache",
    "| `meta-llama/llama-3.3-70b-instruct` | 9,129 | 290 | 3.2% |",
])
def test_small_shares_and_other_limits_are_not_cap_hits(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"notes.md": line + "\n"})
    assert all(f.rule != "gen.cap-hit-share-reported" for f in report.findings)


def test_a_healthy_parity_table_with_a_tenth_at_the_ceiling_raises_nothing():
    assert warnings_or_worse(triage_dir(extra_input("2093"))) == []


# -- outputs at the cap ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("prefix, file, line", [
    ("2082", "pr-33.md", 10),
    ("2084", "pr-203.md", 17),
    ("2086", "issue-45-comment.md", 27),
    ("2088", "issue-512.md", 5),
    ("2089", "pr-8315.md", 6),
])
def test_outputs_at_the_cap(prefix: str, file: str, line: int):
    f = _top(prefix)
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.output-at-cap-reported", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == (file, line)
    assert knob_names(f) == ["inference.max_response_length"]


def test_numbers_of_outputs_at_the_cap():
    assert _top("2082").numbers["share"] == 98
    assert _top("2086").numbers["tokens"] == 1024
    assert _top("2088").numbers["tokens"] == 2000


@pytest.mark.parametrize("line", [
    "KV cache usage reached 95% of the cap",
    "The log line was truncated before the timestamp",
])
def test_memory_caps_and_truncated_log_lines_are_not_outputs_at_the_cap(tmp_path: Path, line: str):
    report = triage_files(tmp_path, {"notes.md": line + "\n"})
    assert all(f.rule != "gen.output-at-cap-reported" for f in report.findings)


# -- finish reason "length" -----------------------------------------------------------------------------------------

def test_finish_reason_length_beside_an_empty_answer():
    f = _top("2087")
    assert (f.category, f.rule, f.severity) == ("generation-tail", "gen.finish-reason-length", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("issue-21-comment.md", 4)
    assert knob_names(f) == ["inference.max_response_length"]


@pytest.mark.parametrize("line", [
    # lmstudio-bug-tracker#1990 (llama.cpp llama-server, 2026-09)
    "the model consumed its entire completion budget on internal reasoning and returned empty `content` with "
    "`finish_reason: \"length\"` — even at 20,000 completion tokens",
    # ollama#17561 (2026)
    "Three of its twelve LCB failures ran 174,897 characters of thinking and ended at the context wall with no code "
    "emitted at all — `done_reason: length`.",
    # omlx#3796 (2026-09)
    "[Bug] Qwen3.6-35B-A3B: truncated thinking (finish_reason=length) dumped into content; reasoning_content empty",
])
def test_other_engines_finish_reason_length(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"notes.md": line + "\n"}))
    assert (f.category, f.rule) == ("generation-tail", "gen.finish-reason-length")


def test_a_warmup_request_at_its_tiny_cap_is_no_finding(tmp_path: Path):
    # SGLang PD prefill warmup (real-extra 985): the warmup request asks for 8 tokens and ends at them by design
    line = ("[2026-01-04 01:59:26] INFO:     End of prefill disaggregation mode warmup with status 200, resp: "
            "[{'text': 'gg.gg/13nbn', 'output_ids': [0, 2023, 16, 2023, 17, 907, 80, 18892], 'meta_info': {'id': "
            "'07e7d75b4ee84269bbbf639d4e534286', 'finish_reason': {'type': 'length', 'length': 8}, "
            "'prompt_tokens': 4, 'completion_tokens': 8, 'cached_tokens': 0}}]")
    report = triage_files(tmp_path, {"sglang.log": line + "\n"})
    assert all(f.rule != "gen.finish-reason-length" for f in report.findings)


def test_a_bare_finish_reason_length_is_no_finding(tmp_path: Path):
    text = '{"id": "cmpl-1", "choices": [{"index": 0, "finish_reason": "length"}]}\n'
    report = triage_files(tmp_path, {"response.log": text})
    assert all(f.rule != "gen.finish-reason-length" for f in report.findings)


def test_the_agent_timeout_outranks_the_probes_finish_reason():
    report = triage_dir(extra_input("2083"))
    assert warnings_or_worse(report)[:2] == ["gen.agent-episode-timeout", "gen.finish-reason-length"]
    assert knob_names(report.findings[0]) == ["rollout.timeout"]


# -- hard negatives -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["2085", "2094"])
def test_healthy_steps_raise_no_warning(prefix: str):
    assert warnings_or_worse(triage_dir(extra_input(prefix))) == []


def test_junk_to_16k_tokens_after_vllm_sleep_level_2_is_lost_weights_not_a_tail():
    report = triage_dir(extra_input("2090"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "health.weights-discarded-by-sleep", "warning")
    assert (f.evidence[0].file, f.evidence[0].line) == ("issue-1443.md", 23)
    assert not [g for g in report.findings if g.category == "generation-tail"]


@pytest.mark.parametrize("lines", [
    # vLLM#29341 (2025-11)
    ["[Bug]: sleep level 2 causes gibberish outputs"],
    # ms-swift PR 7017 (2025-12)
    ["## Fix vllm sleep_level 2 causes gibberish outputs",
     "vllm sleep_level=2 will discard the model weights. When waking up the weights later, they may not be fully "
     "restored in some cases, leading to gibberish outputs."],
    # NeMo-RL#2631 (2026-05): the garbage two lines before the sleep level
    ["Colocated GRPO on `google/gemma-4-E4B-it` (a Gemma-4 VLM with vision + audio",
     "towers) produces garbage rollouts starting on the first refit cycle, with",
     "`gen_kl_error` exploding from step 2. Isolated the cause to **vLLM's sleep",
     "level-2 discard itself** — not the NeMo-RL refit path and not any particular"],
])
def test_sleep_level_2_beside_garbage_output(tmp_path: Path, lines: list[str]):
    f = top(triage_files(tmp_path, {"notes.md": "\n".join(lines) + "\n"}))
    assert (f.category, f.rule) == ("other", "health.weights-discarded-by-sleep")


def test_sleep_level_2_without_garbage_is_no_finding(tmp_path: Path):
    text = ("(EngineCore_DP0 pid=105994) INFO 11-25 03:26:13 [abstract.py:306] It took 0.052879 seconds to fall asleep.\n"
            "llm.sleep(level=2)\nllm.wake_up(tags=[\"weights\"])\nllm.collective_rpc(\"reload_weights\")\n")
    report = triage_files(tmp_path, {"run.log": text})
    assert all(f.rule != "health.weights-discarded-by-sleep" for f in report.findings)
