"""Recognition round 20 (r20a): complete public run logs, whole files (real-extra 1880-1890).

- A healthy vLLM first start whose torch.compile took 67.71 s (vLLM 0.19, Gemma-4 E4B on Colab) is start-up cost the
  info summary shows, not a warning: cold.startup-compile-slow now starts at 120 s (healthy first boots print 30-113 s:
  1885, 1388, 1166; the starts whose compile was the problem took 447 s and 2222 s) (1885).
- A verl run whose responses are all 17-20 tokens (a fixed-format agent answer) and whose every step reports
  `response_length/clip_ratio:0.0`: the step's longest response is no cap, so gen.mean-length-at-cap does not fire
  when the cap is only inferred and the run's clip ratio is never above 0 (1888; the same warning beside 1887's
  checkpoint failure).
- A training progress bar's last update of a finished run (`300/300 [4:15:33<00:00, 1556.49s/it]`) carries the
  end-of-run work (verl's final validation took 5059 s): not a stalled step for gen.step-time-growth (1888).
- Round 2 (same repository, other runs, added after the rules changed): a 700-step run of the same setup and one
  copied at step 54 get no warning (1891, 1892); the library before this round gave them the same two warnings.
- A log that stops inside a weight load whose loading bar had run 9 min 32 s (SGLang `Multi-thread loading shards`,
  vLLM `Loading safetensors checkpoint shards`) is a start abandoned in its slow phase, as one stopped after a timed
  phase is: cold.startup-abandoned reads the bar's elapsed time of a phase begun and never ended (1890, exit 1).
- Blind right, kept right: Triton's LLVM failing on a T4 (1884), every GSM8K completion at a 256-token cap with
  zero reward (1886), a checkpoint write the filesystem refused (1887), an Ascend EAGLE draft graph capture's inner
  error (1889), an SGLang start stopped in a ten-minute weight load (1890), and healthy servers and finished
  trainings (1880-1883).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import by_rule, extra_input, knob_names, top, triage_dir, triage_files, warnings_or_worse


@pytest.mark.parametrize("case", ["1880", "1881", "1882", "1883", "1885", "1888", "1891", "1892"])
def test_healthy_whole_runs_raise_no_warning(case: str):
    assert warnings_or_worse(triage_dir(extra_input(case))) == []


def test_first_start_compile_of_68s_is_the_startup_summary_only():
    report = triage_dir(extra_input("1885"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-phases", "info")
    assert "cold.startup-compile-slow" not in by_rule(report)


def _vllm_start(compile_s: float) -> str:
    return "\n".join([
        "(EngineCore pid=1) INFO 04-25 08:52:38 [gpu_model_runner.py:4766] Starting to load model m...",
        "(EngineCore pid=1) INFO 04-25 08:53:29 [default_loader.py:384] Loading weights took 4.90 seconds",
        f"(EngineCore pid=1) INFO 04-25 08:54:39 [monitor.py:53] torch.compile took {compile_s} s in total",
        "(EngineCore pid=1) INFO 04-25 08:55:12 [core.py:299] init engine (profile, create kv cache, warmup model) "
        "took 40.21 s",
        "(APIServer pid=2) INFO 04-25 08:55:21 [api_server.py:602] Starting vLLM server on http://0.0.0.0:5001",
        "(APIServer pid=2) INFO:     Application startup complete.",
        '(APIServer pid=2) INFO:     127.0.0.1:33426 - "GET /health HTTP/1.1" 200 OK',
    ]) + "\n"


@pytest.mark.parametrize("seconds,flagged", [(67.71, False), (112.8, False), (130.5, True), (447.22, True)])
def test_compile_threshold(tmp_path: Path, seconds: float, flagged: bool):
    rules = by_rule(triage_files(tmp_path, {"vllm.log": _vllm_start(seconds)}))
    assert ("cold.startup-compile-slow" in rules) is flagged
    if flagged:
        f = rules["cold.startup-compile-slow"]
        assert (f.severity, f.numbers["seconds"], f.numbers["threshold"]) == ("warning", seconds, 120.0)


def test_fixed_length_responses_with_clip_ratio_zero_are_no_cap():
    report = triage_dir(extra_input("1888"))
    assert "gen.mean-length-at-cap" not in by_rule(report)
    assert "gen.step-time-growth" not in by_rule(report)
    assert top(report).rule == "health.summary"


def _verl_steps(clip: float, n: int = 6) -> str:
    return "".join(f"(TaskRunner pid=7) step:{i} - response_length/mean:19.0 - response_length/max:19.0 - "
                   f"response_length/min:19.0 - response_length/clip_ratio:{clip} - timing_s/step:33.2\n"
                   for i in range(1, n + 1))


def test_mean_at_the_longest_response_with_clipped_responses_still_flagged(tmp_path: Path):
    f = by_rule(triage_files(tmp_path, {"train.log": _verl_steps(1.0)}))["gen.mean-length-at-cap"]
    assert (f.category, f.severity, f.numbers["response_cap"]) == ("generation-tail", "warning", 19.0)


def test_mean_at_the_longest_response_never_clipped_is_not(tmp_path: Path):
    assert "gen.mean-length-at-cap" not in by_rule(triage_files(tmp_path, {"train.log": _verl_steps(0.0)}))


def _bar(seconds: list[float], total: int) -> str:
    lines, elapsed = [], 0.0
    for i, s in enumerate(seconds, 1):
        elapsed += s
        h, rem = divmod(int(elapsed), 3600)
        lines.append(f"Training Progress: {100 * i // total:3d}%|#| {i}/{total} [{h}:{rem // 60:02d}:{rem % 60:02d}"
                     f"<0:00:00, {s:.2f}s/it]")
    return "\n".join(lines) + "\n"


def test_the_closing_update_of_a_finished_bar_is_no_stall(tmp_path: Path):
    text = _bar([34.0] * 9 + [1556.49], total=10)
    assert "gen.step-time-growth" not in by_rule(triage_files(tmp_path, {"train.log": text}))


def test_a_stall_before_the_end_is_still_flagged(tmp_path: Path):
    text = _bar([34.0] * 5 + [1556.49] + [34.0] * 4, total=10)
    f = by_rule(triage_files(tmp_path, {"train.log": text}))["gen.step-time-growth"]
    assert (f.category, f.severity) == ("generation-tail", "warning")
    assert f.numbers["seconds"] == pytest.approx(1556.49)


def test_a_final_update_short_of_the_total_is_still_a_stall(tmp_path: Path):
    text = _bar([34.0] * 9 + [1556.49], total=20)
    assert "gen.step-time-growth" in by_rule(triage_files(tmp_path, {"train.log": text}))


def test_triton_llvm_failure_on_a_t4():
    f = top(triage_dir(extra_input("1884")))
    assert (f.category, f.rule, f.severity) == ("other", "other.gpu-arch-unsupported", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("verify_qwen3vl_flex.log", 41)


def test_every_completion_at_the_256_cap_with_zero_reward():
    report = triage_dir(extra_input("1886"))
    f = top(report)
    assert (f.category, f.rule) == ("generation-tail", "gen.mean-length-at-cap")
    assert (f.numbers["mean"], f.numbers["response_cap"], f.count) == (256.0, 256.0, 49)
    assert [(e.file, e.line) for e in f.evidence][0] == ("log_adq_seed42.txt", 40)
    assert knob_names(f)[0] == "inference.max_response_length"
    assert by_rule(report)["verifier.rewards-degenerate"].category == "verifier"


def test_checkpoint_write_refused_leads_without_a_cap_warning():
    report = triage_dir(extra_input("1887"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("other", "other.checkpoint-write-failed", "error")
    assert [(e.file, e.line) for e in f.evidence][0] == ("rl_train.log.gz", 6515)
    assert warnings_or_worse(report) == ["other.checkpoint-write-failed"]


def test_ascend_eagle_draft_capture_inner_error():
    f = top(triage_dir(extra_input("1889")))
    assert (f.category, f.rule) == ("other", "other.graph-capture-failed")
    assert f.count == 16
    assert [(e.file, e.line) for e in f.evidence][0] == (
        "test_ascend_qwen3_235b_w8a8_8p_in2k_out2k_50ms.py.log", 1369)


def test_start_stopped_in_a_ten_minute_weight_load():
    report = triage_dir(extra_input("1890"))
    f = top(report)
    assert (f.category, f.rule, f.severity) == ("cold-start", "cold.startup-abandoned", "error")
    assert (f.numbers["seconds"], f.numbers["phase_weight_load"]) == (572.0, 1)
    assert [(e.file, e.line) for e in f.evidence] == [("sglang.log", 42)]
    assert {"engine.startup_timeout", "engine.load_format"} <= set(knob_names(f))
    assert "cold.slow-weight-loading" in by_rule(report)


VLLM_ARGS = ("(APIServer pid=9) INFO 03-04 22:33:06 [utils.py:223] non-default args: {'model': 'Qwen/Qwen3-235B-A22B', "
             "'tensor_parallel_size': 8}\n")


def _vllm_load(bars: list[str]) -> str:
    return VLLM_ARGS + "".join(f"(EngineCore_DP0 pid=11) Loading safetensors checkpoint shards: {b}\n" for b in bars)


def test_vllm_log_stopping_in_a_long_shard_load_is_an_abandoned_start(tmp_path: Path):
    text = _vllm_load(["  0% Completed | 0/96 [00:00<?, ?it/s]", " 69% Completed | 66/96 [05:00<02:20,  4.68s/it]"])
    f = top(triage_files(tmp_path, {"vllm.log": text}))
    assert (f.rule, f.severity, f.numbers["seconds"]) == ("cold.startup-abandoned", "error", 300.0)


def test_a_short_shard_load_or_a_finished_one_is_not(tmp_path: Path):
    short = _vllm_load([" 50% Completed | 1/2 [00:29<00:29, 29.12s/it]"])
    assert "cold.startup-abandoned" not in by_rule(triage_files(tmp_path / "a", {"vllm.log": short}))
    done = _vllm_load([" 69% Completed | 66/96 [05:00<02:20,  4.68s/it]"]) + (
        "(EngineCore_DP0 pid=11) INFO 03-04 22:40:48 [default_loader.py:293] Loading weights took 420.15 seconds\n"
        "(APIServer pid=9) INFO:     Application startup complete.\n")
    assert "cold.startup-abandoned" not in by_rule(triage_files(tmp_path / "b", {"vllm.log": done}))
