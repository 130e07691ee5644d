"""Recognition round 21 (r21a): complete public run logs (real-extra 2020-2031).

- A hybrid sliding-window model whose window-layer KV pool is no larger than one page never admits a request: SGLang
  puts it back in the queue forever and prints nothing (DeepSeek-V4 on Ascend, SGLang 0.5.12.post2, 2020: "DSV4 pool
  sizes: full=4096, swa=256" with page_size 256). config.swa-pool-below-admission-floor reads the last pool line of
  the file and the page size (a new fact), and names the pool size, not admission.
- A batch-size configuration that does not divide: TRL's "global train batch size (A x B) must be evenly divisible by
  the number of generations per prompt", verl's normalisation assertions, and verl's ZeroDivisionError when the
  micro batch divided by the data-parallel size comes out as zero (MEM1's verl fork, 2030; blind, only the process-end
  fallback caught it).
- Ray's "Failed to establish connection to the metrics exporter agent" (GCS, raylet, every core worker, at Ray's E
  level) is a start-up notice, not an unexplained error.
- Complete healthy logs stay quiet: the DeepSeek-V4 PASS log with a requested 2-token length finish (2021), its 5-step
  weight-sync loop (2022), TRT-LLM serving (2023), vLLM 0.13 NV and 0.19.1 WSL servers (2025, 2026), a clip-ratio
  measurement log (2029).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files
from domain import SIX

from triage.model import SEVERITY_RANK

# -- the sliding-window pool below the admission floor ---------------------------------------------------------------


def test_dsv4_window_pool_of_one_page_is_the_hang():
    f = top(triage_dir(extra_input("2020-")))
    assert (f.category, f.rule, f.severity) == ("serving-oom-retraction", "config.swa-pool-below-admission-floor",
                                                "error")
    assert [(e.file, e.line) for e in f.evidence][:2] == [("v4_engine_log.txt", 56), ("v4_engine_log.txt", 64)]
    assert (f.numbers["swa_pool_tokens"], f.numbers["full_pool_tokens"], f.numbers["page_size"]) == (256, 4096, 256)
    assert knob_names(f)[0] == "inference.sglang_max_total_tokens"


POOL_LOG = ("[2026-06-01 04:32:52] server_args=ServerArgs(model_path='/m', page_size={page}, max_total_tokens=4096)\n"
            "[2026-06-01 04:33:09] DSV4 pool sizes: full=14263552, swa=1426176, c4=3565888, c128=111434\n"
            "[2026-06-01 04:33:09] DSV4 pool sizes: full={full}, swa={swa}, c4=1024, c128=32\n")


def test_only_the_last_pool_line_counts(tmp_path: Path):
    # the first line is what memory allows; the second, kept after --max-total-tokens, is big enough here
    report = triage_files(tmp_path, {"engine.log": POOL_LOG.format(page=256, full=65536, swa=32768)})
    assert "config.swa-pool-below-admission-floor" not in by_rule(report)


def test_generic_swa_pool_line_below_one_page(tmp_path: Path):
    text = ("[2025-08-10 10:00:00] server_args=ServerArgs(model_path='/m', page_size=64)\n"
            "[2025-08-10 10:00:05 TP0] Use Sliding window memory pool. full_layer_tokens=1024, swa_layer_tokens=64\n")
    f = by_rule(triage_files(tmp_path, {"engine.log": text}))["config.swa-pool-below-admission-floor"]
    assert f.numbers["swa_pool_tokens"] == 64


def test_no_page_size_no_claim(tmp_path: Path):
    text = "[2026-06-01 04:33:09] DSV4 pool sizes: full=4096, swa=256, c4=1024, c128=32\n"
    assert "config.swa-pool-below-admission-floor" not in by_rule(triage_files(tmp_path, {"engine.log": text}))


def test_the_dsv4_pool_lines_do_not_set_the_kv_pool_size(tmp_path: Path):
    # the first of the two lines (14 M tokens) is not the pool the engine kept: the capacity line's 4096 is
    report = triage_files(tmp_path, {"engine.log": POOL_LOG.format(page=256, full=4096, swa=256)
                                     + "[2026-06-01 04:33:11] max_total_num_tokens=4096, chunked_prefill_size=1024, "
                                       "max_prefill_tokens=1024, max_running_requests=1, context_len=2048\n"})
    f = by_rule(report)["config.swa-pool-below-admission-floor"]
    assert any("max_total_num_tokens=4096" in e.text for e in f.evidence)


# -- batch sizes that do not divide -----------------------------------------------------------------------------------


def test_verl_micro_batch_normalised_to_zero():
    f = top(triage_dir(extra_input("2030-")))
    assert (f.category, f.rule, f.severity) == ("other", "other.batch-size-zero-division", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("grpo_train.log", 283)
    assert knob_names(f) == ["trainer.micro_batch_size"]


@pytest.mark.parametrize("line, numbers", [
    ("[rank1]: ValueError: The global train batch size (7 x 1) must be evenly divisible by the number of generations "
     "per prompt (8). Given the current train batch size, the valid values for the number of generations are: [7].",
     {"num_generations": 8}),
    ("ValueError: The global eval batch size (1 * 2) must be divisible by the number of generations used for "
     "evaluation (4).", {"num_generations": 4}),
    ("ValueError: generation_batch_size (12) must be divisible by num_generations (8).", {"num_generations": 8}),
    ("AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization", {}),
    ("(WorkerDict pid=2211) AssertionError: normalized ppo_mini_batch_size 32 should be divisible by "
     "ppo_micro_batch_size_per_gpu 3", {}),
    ("AssertionError: real_train_batch_size (4) must be divisible by minimal possible batch size (8)", {}),
])
def test_batch_size_checks_of_trl_and_verl(tmp_path: Path, line: str, numbers: dict[str, int]):
    text = "Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n" + line + "\n"
    f = top(triage_files(tmp_path, {"train.log": text}))
    assert (f.category, f.rule) == ("other", "other.batch-size-indivisible")
    for k, v in numbers.items():
        assert f.numbers[k] == v


def test_a_zero_division_in_a_reward_function_is_not_a_batch_size(tmp_path: Path):
    text = ("Traceback (most recent call last):\n"
            "  File \"/work/reward.py\", line 12, in compute_score\n"
            "    return correct / total\n"
            "ZeroDivisionError: integer division or modulo by zero\n")
    report = triage_files(tmp_path, {"train.log": text})
    assert "other.batch-size-zero-division" not in by_rule(report)


def test_zero_division_under_the_batch_assert_python_312(tmp_path: Path):
    text = ("  File \"/verl/workers/actor/dp_actor.py\", line 219, in update_policy\n"
            "    assert self.config.ppo_mini_batch_size % self.config.ppo_micro_batch_size == 0\n"
            "           ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
            "ZeroDivisionError: integer modulo by zero\n")
    assert top(triage_files(tmp_path, {"train.log": text})).rule == "other.batch-size-zero-division"


# -- Ray's metrics exporter agent ------------------------------------------------------------------------------------


def test_ray_metrics_exporter_agent_is_a_notice():
    report = triage_dir(extra_input("2030-"))
    notice = by_rule(report)["other.benign-startup-notice"]
    assert notice.severity == "info"
    assert not [f for f in report.findings if f.rule == "unclassified"]


# -- complete runs that must stay quiet ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["2021-", "2022-", "2023-", "2025-", "2026-", "2029-"])
def test_healthy_complete_runs_raise_nothing(case: str):
    report = triage_dir(extra_input(case))
    assert not [f.rule for f in report.findings if f.category in SIX and SEVERITY_RANK[f.severity] <= 1]


def test_agent_run_dir_context_rejections_from_the_engine_file():
    f = top(triage_dir(extra_input("2024-")))
    assert (f.category, f.rule) == ("prompt-budget", "prompt.context-length-exceeded")
    assert f.evidence[0].file == "vllm.log.gz"
    assert "inference.max_context_length" in knob_names(f)
