"""TRL-style metric dicts broken over lines (pprint, a user's wrap) are one record; no-gradient and all-zero-reward
verdicts on the few records a short log holds. Real lines, sources in fixtures/real-extra/*/expect.yaml."""
from pathlib import Path

from conftest import knob_names, triage_dir

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "real-extra"


def _top(name):
    res = triage_dir(HERE / name / "input")
    findings = [f for f in res.findings if f.severity in ("warning", "error")]
    return findings[0] if findings else None


def test_pprinted_dict_is_one_record():
    # Video-R1#86: the dict pretty-printed over 13 lines is read as one record (reward and both functions at 0).
    # One zero record alone is not a pattern, but this one also says zero_var_ratio 1.0 with reward_std 0: every
    # prompt group's samples scored alike, so the whole batch got 0 from both functions (r21c, rewards_all_zero)
    res = triage_dir(HERE / "204-video-r1-grpo-rewards-all-zero-pretty-dict" / "input")
    summary = next(f for f in res.findings if f.rule == "health.summary")
    assert "reward finite" in summary.title
    f = _top("204-video-r1-grpo-rewards-all-zero-pretty-dict")
    assert f is not None and f.rule == "verifier.rewards-degenerate"
    assert f.evidence[0].line == 11  # 'reward': 0.0


def test_user_wrapped_dict_grad_norm_zero_no_gradient():
    # unsloth#3485: one record over four lines; frac_reward_zero_std 1.0 and grad_norm 0.0
    f = _top("203-unsloth-gspo-reward-constant-multiline-dict")
    assert f is not None and f.rule == "health.no-policy-gradient"
    assert "grad_norm = 0" in f.title
    assert "verifier.reward_function" in knob_names(f)


def test_single_trl_record_grad_norm_zero(tmp_path):
    # trl#3857 (in 202) and MemGen PR#33 (a different trainer, same TRL keys): grad_norm 0.0, reward std 0
    line = ("{'loss': 0.0, 'grad_norm': 0.0, 'learning_rate': 1.961367013372957e-06, 'num_tokens': 284827.0, "
            "'completions/mean_length': 396.375, 'completions/min_length': 209.0, 'completions/max_length': 592.0, "
            "'completions/clipped_ratio': 0.0, 'rewards/compute_reward/mean': 0.0, 'rewards/compute_reward/std': 0.0, "
            "'reward': 0.0, 'reward_std': 0.0, 'frac_reward_zero_std': 1.0, 'clip_ratio/low_mean': 0.0, 'epoch': 0.02}\n")
    (tmp_path / "train.log").write_text(line)
    res = triage_dir(tmp_path)
    warn = [f for f in res.findings if f.severity == "warning"]
    assert warn and warn[0].category == "verifier"
    f = _top("202-trl-grpo-loss-zero-grad-zero-frac-reward-zero-std")
    assert f is not None and f.rule == "health.no-policy-gradient" and f.evidence[0].line == 1


def test_single_saturated_step_with_gradient_stays_quiet(tmp_path):
    # the same keys with a non-zero grad_norm (one saturated batch, KL still pulls): no warning
    line = ("{'loss': 0.0002, 'grad_norm': 0.0912, 'learning_rate': 1e-06, 'reward': 1.0, 'reward_std': 0.0, "
            "'frac_reward_zero_std': 1.0, 'kl': 0.0004, 'epoch': 0.02}\n")
    (tmp_path / "train.log").write_text(line)
    res = triage_dir(tmp_path)
    assert not [f for f in res.findings if f.severity in ("warning", "error")]


def test_healthy_grpo_loss_zero_tables_stay_clean():
    for name in ("205-unsloth-grpo-notebook-table-loss-zero-early", "206-open-r1-grpo-loss-zero-at-start-rewards-rising"):
        assert _top(name) is None, name
