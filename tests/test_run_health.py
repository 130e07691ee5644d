"""Run health from metric lines: real verl/slime lines from the corpus, and inline lines in their formats."""

from __future__ import annotations

import shutil

from conftest import REAL, by_rule, extra_input, run, write_run

CASE_040 = REAL / "040-verl-step-response-clip-ratio-0p52" / "input"
CASE_058 = REAL / "058-verl-agent-loop-slowest-sample-long-tail" / "input"
CASE_077 = REAL / "077-multi-slime-trainer-illegal-memory-access-plus-miles-engine" / "input"


# -- real lines ---------------------------------------------------------------------------------------------

def test_cap_hits_on_a_real_verl_step_line(lib):
    f = by_rule(run(CASE_040, lib))["gen.cap-hit-rate"]
    assert (f.category, f.severity) == ("generation-tail", "warning")
    assert f.numbers["metric"] == "response_length/clip_ratio"
    assert f.numbers["max"] == 0.521
    assert (f.numbers["response_length_max"], f.numbers["response_length_mean"]) == (1024.0, 684.393)
    assert f.numbers["cap_source"] == "response_length/max (the longest response)"
    assert f.numbers["arithmetic"] == "52.1% of responses at the cap of 1024 tokens, mean length 684.393"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 1)]
    assert [k.name for k in f.knobs] == ["inference.max_response_length", "rollout.timeout"]


def test_cap_hits_name_the_configured_cap(tmp_path, lib):
    root = tmp_path / "run"
    shutil.copytree(CASE_040, root)
    write_run(root, {"inference.max_response_length": 1024}, "nested")
    f = by_rule(run(root, lib))["gen.cap-hit-rate"]
    assert (f.numbers["response_cap"], f.numbers["cap_source"]) == (1024, "config run.yaml:2")
    cap = f.knobs[0]
    assert (cap.name, cap.current, cap.source) == ("inference.max_response_length", 1024, "config run.yaml:2")


def test_run_summary_of_a_real_verl_step(lib):
    report = run(CASE_040, lib)
    found = by_rule(report)
    f = found["health.summary"]
    assert (f.category, f.severity) == ("other", "info")
    assert f.numbers["arithmetic"] == "reward finite, grad_norm finite, longest response 1024"
    assert f.numbers["publications"] == 0  # the count stays in the numbers; the summary line leaves out an absence
    assert (f.numbers["reward_metric"], f.numbers["reward_min"], f.numbers["reward_max"]) == ("critic/score/mean", 0.008, 0.008)
    assert (f.numbers["grad_norm_metric"], f.numbers["grad_norm_non_finite"]) == ("actor/grad_norm", 0)
    assert f.numbers["stage_seconds"]["timing_s/gen"] == 262.359
    assert f.numbers["stage_seconds"]["timing_s/update_actor"] == 157.615
    assert "timing_s/s" not in f.numbers["stage_seconds"]  # the line is cut there in the source
    # advantages differ (max 1.789, min -0.730) and a single step proves nothing about publication
    assert "health.no-policy-gradient" not in found and "health.publication-missing" not in found
    assert report.findings[0].rule == "gen.cap-hit-rate"  # the summary never outranks a problem


def test_a_summary_without_rl_metrics_says_so(lib):
    # verl's reference gemma SFT log (real-extra 1173): loss and lr only, 59 step records
    f = by_rule(run(extra_input("1173-"), lib))["health.summary"]
    assert f.severity == "info"
    assert f.title == "Run health: 59 metric records, no reward, gradient norm or response length among them"
    assert (f.evidence[0].line, f.evidence[-1].line) == (63, 131)


def test_publication_seen_in_a_real_verl_step(lib):
    f = by_rule(run(CASE_058, lib))["health.summary"]
    assert f.numbers["publications"] == 1
    assert f.numbers["stage_seconds"]["timing_s/update_weights"] == 5.827  # median, rounded to ms
    assert "publication seen ×1" in f.title


def test_slime_timer_start_line_is_not_a_stage_time(lib):
    report = run(CASE_077, lib)
    assert "health.summary" not in by_rule(report)  # no metric records in this case
    assert report.findings[0].rule == "other.cuda-error"


# -- inline lines ---------------------------------------------------------------------------------------------

def logs(tmp_path, lib, text, name="train.log"):
    return by_rule(run(write_run(tmp_path / "run", None, logs={name: text}), lib))


def test_nan_gradient_norm_is_an_error(tmp_path, lib):
    text = ("step 1: {'train/loss': 0.1, 'train/grad_norm': 0.4}\n"
            "step 2: {'train/loss': 0.1, 'train/grad_norm': nan}\n")
    f = logs(tmp_path, lib, text)["health.grads-non-finite"]
    assert (f.category, f.severity) == ("other", "error")
    assert f.numbers["arithmetic"] == "train/grad_norm = nan in 1 of 2 records"
    assert [(e.file, e.line) for e in f.evidence] == [("train.log", 2)]


def test_infinite_reward_is_an_error(tmp_path, lib):
    text = "".join(f"step:{i} - critic/score/mean:{v} - actor/grad_norm:0.2\n" for i, v in ((1, "0.5"), (2, "inf"), (3, "0.4")))
    f = logs(tmp_path, lib, text)["verifier.rewards-degenerate"]
    assert f.severity == "error"
    assert f.title == "Rewards are not finite (critic/score/mean = inf in 1 of 3 records)"


def test_all_zero_rewards_are_a_lifecycle_pass(tmp_path, lib):
    text = "".join(f"step:{i} - critic/score/mean:0.000 - critic/score/max:0.000 - critic/score/min:0.000\n"
                   for i in (1, 2, 3))
    found = logs(tmp_path, lib, text)
    f = found["verifier.rewards-degenerate"]
    assert f.severity == "warning"
    assert f.title == ("Every reward is zero: lifecycle pass, no policy gradient exercised "
                       "(critic/score/mean = 0 in 3 of 3 records)")
    assert "health.no-policy-gradient" not in found  # one finding for one cause


def test_constant_nonzero_rewards_exercise_no_policy_gradient(tmp_path, lib):
    text = "".join(f"step:{i} - critic/score/mean:1.000 - critic/score/max:1.000 - critic/score/min:1.000 - "
                   f"critic/advantages/max:0.000 - critic/advantages/min:0.000\n" for i in (1, 2, 3))
    found = logs(tmp_path, lib, text)
    f = found["health.no-policy-gradient"]
    assert (f.category, f.severity) == ("verifier", "warning")
    assert f.title == ("Lifecycle pass: no policy gradient exercised "
                       "(critic/advantages/max = critic/advantages/min = 0.0 in 3 of 3 records: every sample scored 1)")
    assert "verifier.rewards-degenerate" not in found


def test_zero_advantages_must_persist(tmp_path, lib):
    # two steps are not yet a pattern (a batch whose groups all saturated is normal)
    text = "".join(f"step:{i} - critic/score/mean:1.000 - critic/score/max:1.000 - critic/score/min:1.000 - "
                   f"critic/advantages/max:0.000 - critic/advantages/min:0.000\n" for i in (1, 2))
    assert "health.no-policy-gradient" not in logs(tmp_path, lib, text)


def test_saturated_groups_are_explained_as_such(tmp_path, lib):
    # scores differ across samples (0..1) while every advantage is 0: each group all solved or all failed
    text = "".join(f"step:{i} - critic/score/mean:0.906 - critic/score/max:1.000 - critic/score/min:0.000 - "
                   f"critic/advantages/max:0.000 - critic/advantages/min:0.000\n" for i in (1, 2, 3))
    f = logs(tmp_path, lib, text)["health.no-policy-gradient"]
    assert f.numbers["why"].startswith("sample rewards ranged 0..1, yet each group's samples scored alike")


def test_trl_zero_reward_std_exercises_no_policy_gradient(tmp_path, lib):
    text = "".join(f"{{'loss': 0.0, 'grad_norm': 0.0, 'reward': 0.25, 'reward_std': 0.0, 'epoch': 0.{i}}}\n"
                   for i in (1, 2, 3))
    f = logs(tmp_path, lib, text)["health.no-policy-gradient"]
    assert f.numbers["reason"] == "reward_std = 0"
    assert f.numbers["records"] == 3


def test_one_step_with_reward_variance_is_enough_to_clear_it(tmp_path, lib):
    text = ("step:1 - critic/score/max:1.000 - critic/score/min:1.000\n"
            "step:2 - critic/score/max:1.000 - critic/score/min:0.000\n")
    assert "health.no-policy-gradient" not in logs(tmp_path, lib, text)


def test_missing_publication_after_several_steps_is_info(tmp_path, lib):
    text = "".join(f"step {i}: {{'train/loss': 0.1, 'train/grad_norm': 0.3}}\n" for i in (1, 2, 3))
    f = logs(tmp_path, lib, text)["health.publication-missing"]
    assert (f.severity, f.numbers["arithmetic"]) == ("info", "0 publications in 3 training records")


def test_slime_timers_show_publication_and_stage_times(tmp_path, lib):
    text = ("step 1: {'train/loss': 0.1, 'train/grad_norm': 0.3}\n"
            "[2025-12-31 11:45:20] timer.py:24 - Timer update_weights start\n"
            "[2025-12-31 11:45:32] timer.py:30 - Timer update_weights end (elapsed: 12.3s)\n"
            "step 2: {'train/loss': 0.1, 'train/grad_norm': 0.3}\n")
    found = logs(tmp_path, lib, text)
    assert "health.publication-missing" not in found
    summary = found["health.summary"]
    assert summary.numbers["publications"] == 1
    assert summary.numbers["stage_seconds"] == {"Timer update_weights": 12.3}


def test_failed_weight_publication_is_an_error(tmp_path, lib):
    text = "[2026-08-01 12:00:00.123 actor_cell0_rank0] logs.py:40 - ft cls=MegatronTrainRayActor fn=update_weights phase=end ok=false elapsed_s=3.1\n"
    f = logs(tmp_path, lib, text)["health.weight-update-failed"]
    assert (f.severity, f.numbers["actor"]) == ("error", "MegatronTrainRayActor")


def test_routing_replay_mismatch(tmp_path, lib):
    f = logs(tmp_path, lib, "ValueError: rollout_routed_experts is required in rollout_data for replay.\n")[
        "health.routing-replay-mismatch"]
    assert (f.category, f.severity, f.numbers["key"]) == ("other", "error", "rollout_routed_experts")


def _steps(first: float) -> str:
    times = [first, 100.0, 110.0, 105.0]
    return "".join(f"step:{i} - timing_s/step:{t} - timing_s/gen:60.0\n" for i, t in enumerate(times, 1))


def test_first_step_dominated_by_startup_phases(tmp_path, lib):
    engine = ("[2026-02-01 10:00:00 TP0] Load weight end. elapsed=300.00 s, type=Qwen3ForCausalLM, avail mem=60.48 GB, mem usage=15.28 GB.\n"
              "[2026-02-01 10:07:00 TP0] Capture cuda graph end. Time elapsed: 400.00 s. mem usage=0.71 GB. avail mem=21.27 GB.\n")
    root = write_run(tmp_path / "run", None, logs={"train.log": _steps(900.0), "sglang-engine.log": engine})
    f = by_rule(run(root, lib))["cold.first-step-slow"]
    assert f.category == "cold-start"
    assert f.numbers["startup_phases"] == {"weight_load": 300.0, "graph_capture": 400.0}
    assert f.numbers["startup_share_of_excess"] == 0.88
    assert f.title == ("First step dominated by startup phases (first 900 s = 8.6 × warm median 105 s; "
                       "startup phases 700 s of the 795 s excess)")


def test_first_step_slow_without_timed_startup(tmp_path, lib):
    f = logs(tmp_path, lib, _steps(900.0))["cold.first-step-slow"]
    assert f.numbers["startup_phases"] == {}
    assert f.title == "First step much slower than the warm steps (first 900 s = 8.6 × warm median 105 s)"
