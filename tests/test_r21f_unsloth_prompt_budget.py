"""Recognition round 21 (r21f): prompt budgets in RL and preference frameworks outside the engines
(real-extra 2120-2126).

- Unsloth cuts a batch longer than FastLanguageModel's max_seq_length itself and warns once, "Unsloth: Input IDs of
  length N > the model's max sequence length of M." (newer releases: "Input IDs of shape ... with length N > ...");
  the shape error that follows (GRPO's gather, ORPO's "size of tensor a (4096) ... (4144)") is its consequence:
  prompt.unsloth-input-over-max-seq-length (2120 GRPO, 2121 LLaMA-Factory ORPO, 2122 cut inside the sentence).
- Unsloth 2025.2's LlamaModel_fast_forward cut the ids but not the attention mask: "The size of tensor a (2048) must
  match the size of tensor b (4241)" with the masking line in the traceback: prompt.unsloth-attention-mask-longer-
  than-max-seq (2123). The same RuntimeError without that frame stays unexplained.
- Megatron-LM's text generation "Length of prompt + tokens_to_generate longer than allowed" joins
  prompt.framework-length-check (2126, HELM against a Megatron server).
- Blind right, kept right: verl's WorkerDict tokenizer warning 7500 > 4096 (2124), a VLM preference labeller's
  OpenAI 429 on tokens per minute (2125).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extra_input, knob_names, top, triage_dir, triage_files


@pytest.mark.parametrize("case, line, tokens, limit", [
    ("2120", 2, 2352, 2048),
    ("2121", 3, 4144, 4096),
])
def test_unsloth_truncation_warning_is_the_cause(case: str, line: int, tokens: int, limit: int):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.unsloth-input-over-max-seq-length")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", line)
    assert f.numbers["input_tokens"] == tokens
    assert f.numbers["context_length"] == limit
    assert knob_names(f)[0] == "inference.max_context_length"


def test_unsloth_warning_cut_inside_the_sentence_on_a_tqdm_line():
    f = top(triage_dir(extra_input("2122")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.unsloth-input-over-max-seq-length")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 5)
    assert f.numbers["input_tokens"] == 1025
    assert "context_length" not in f.numbers


@pytest.mark.parametrize("line", [
    "Unsloth: Input IDs of shape torch.Size([8, 4608]) with length 4608 > the model's max sequence length of 4096.",
    "Input IDs of shape torch.Size([1, 9000]) with length 9000 > the model's max sequence length of 8192.",
])
def test_unsloth_shape_wordings(tmp_path: Path, line: str):
    f = top(triage_files(tmp_path, {"train.log": line + "\n"}))
    assert f.rule == "prompt.unsloth-input-over-max-seq-length"
    assert f.category == "prompt-budget"


def test_unsloth_fast_forward_attention_mask_mismatch():
    f = top(triage_dir(extra_input("2123")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.unsloth-attention-mask-longer-than-max-seq")
    assert (f.evidence[0].file, f.evidence[0].line) == ("train.log", 13)
    assert (f.numbers["context_length"], f.numbers["input_tokens"]) == (2048, 4241)
    assert "inference.max_context_length" in knob_names(f)


def test_the_same_size_mismatch_without_the_unsloth_frame_is_not_a_length(tmp_path: Path):
    text = ("Traceback (most recent call last):\n"
            '  File "/app/model.py", line 10, in forward\n'
            "    x = a * b\n"
            "RuntimeError: The size of tensor a (2048) must match the size of tensor b (4241) at non-singleton "
            "dimension 1\n")
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert f.rule != "prompt.unsloth-attention-mask-longer-than-max-seq"
    assert f.category != "prompt-budget"


def test_megatron_prompt_plus_tokens_to_generate():
    f = top(triage_dir(extra_input("2126")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.framework-length-check")
    assert (f.evidence[0].file, f.evidence[0].line) == ("helm.log", 2)
    assert "inference.max_response_length" in knob_names(f)


@pytest.mark.parametrize("case, category, rule", [
    ("2124", "prompt-budget", "prompt.tokenizer-sequence-too-long"),
    ("2125", "verifier", "verifier.llm-client-error"),
])
def test_blind_right_cases_stay_right(case: str, category: str, rule: str):
    f = top(triage_dir(extra_input(case)))
    assert (f.category, f.rule) == (category, rule)
