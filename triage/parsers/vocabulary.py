"""One vocabulary of trainer series, whatever the framework printed (the alias map is data: SERIES, FUNCTIONS).

A canonical series is a name (`reward`, `response_length`, `clip_ratio`, ...) and, per record, the value of the
first of its aliases the record holds. Aliases are the raw keys each framework prints:
- verl step lines and wandb output (`critic/score/mean`, `response_length/clip_ratio`, `timing_s/step`);
- slime/MILES dicts (`rollout/raw_reward`, `rollout/response_len/mean`, `train/grad_norm`);
- TRL/transformers dicts (GRPO `reward`, `reward_std`, `completions/clipped_ratio`, `rewards/<fn>/mean`;
  PPO `objective/scores`, `val/num_eos_tokens`, `policy/entropy_avg`), also with wandb's `train/` prefix;
- MLX-LM `Iter N:` lines (`Total rewards mean`, `<fn> mean`, `It/sec`);
- OpenRLHF tqdm postfixes (`reward`, `response_length`), NeMo-RL result bullets (`Avg Reward`,
  `Total step time`), minimind-style `Key:value` lines (`Reward`, `AvgLen`), tqdm bars (`s_per_it`).
Keys are looked up once per distinct key (a run has a few hundred), never per record.
"""

from __future__ import annotations

import re

SERIES: dict[str, tuple[str, ...]] = {
    # the step's mean reward over every reward function (verl score = raw verifier output, before KL)
    "reward": ("critic/score/mean", "critic/rewards/mean", "rollout/raw_reward", "rollout/rewards", "reward",
               "rewards/mean", "train/reward", "score", "reward_mean", "objective/scores", "Total rewards mean",
               "Avg Reward", "Reward", "reward/avg_raw_reward", "rewards"),  # minimind Reward:, MiniLLM reward:
    "reward_max": ("critic/score/max", "critic/rewards/max", "reward_max", "rewards/max"),
    "reward_min": ("critic/score/min", "critic/rewards/min", "reward_min", "rewards/min"),
    "reward_std": ("critic/score/std", "reward_std", "rewards/std", "train/reward_std", "Total rewards std",
                   "GrpStd"),
    # prompts of the step none of whose samples scored, and all of whose did (DeepScaleR/rllm-style verl step lines)
    "unsolved_prompts": ("batch/solve_none",),
    "solved_prompts": ("batch/solve_all",),
    # share of groups whose samples all scored alike (TRL; Video-R1/R1-V style trainers print zero_var_ratio)
    "frac_reward_zero_std": ("frac_reward_zero_std", "zero_var_ratio"),
    "response_length": ("response_length/mean", "rollout/response_len/mean", "rollout/response_lengths",
                        "completions/mean_length", "completion_length", "response_length", "Mean Generation Length",
                        "AvgLen", "ppo_response_length", "generate/response_length", "mean_length"),
    "response_length_max": ("response_length/max", "rollout/response_len/max", "rollout/response_lengths/max",
                            "completions/max_length"),
    "response_length_min": ("response_length/min", "rollout/response_len/min", "completions/min_length"),
    # share of responses cut at the response cap
    "clip_ratio": ("response_length/clip_ratio", "completions/clipped_ratio", "rollout/truncated_ratio",
                   "rollout/truncated", "multi_turn/raw_response_length/response_length_clip_ratio",
                   "clipped_ratio",  # TRL's key without its completions/ prefix, as users tabulate it
                   "ppo_actor/no_eos_ratios/avg"),  # AReaL/realhf stats tables: share of sequences without EOS
    # requests aborted before they finished (verl partial rollout at a weight update): not cap hits
    "aborted_ratio": ("response/aborted_ratio",),
    # responses that ended with EOS in the step (TRL PPO/RLOO): 0 means every one ran to the cap
    "num_eos": ("val/num_eos_tokens", "num_eos_tokens"),
    "advantages_mean": ("critic/advantages/mean", "AdvMean"),
    "advantages_max": ("critic/advantages/max",),
    "advantages_min": ("critic/advantages/min",),
    "advantages_std": ("critic/advantages/std", "AdvStd"),
    # per-token entropy of the policy (verl logs it as actor/entropy, older versions as actor/entropy_loss)
    "entropy": ("actor/entropy", "policy/entropy_avg", "entropy", "train/entropy_loss", "actor/entropy_loss",
                "rollout/entropy"),
    "grad_norm": ("actor/grad_norm", "train/grad_norm", "grad_norm", "critic/grad_norm"),
    # seconds per training step
    "step_time": ("timing_s/step", "step_time", "perf/step_time", "Total step time", "time/step", "step time",
                  "s_per_it", "sec_per_iter"),
}

# A reward function's mean: TRL `rewards/<fn>/mean` (>= 0.15) and `rewards/<fn>` (0.14), MLX-LM `<fn> mean`.
FUNCTIONS = (re.compile(r"(?:train/)?rewards/(?P<fn>[^/]+)/mean"),
             re.compile(r"(?:train/)?rewards/(?P<fn>(?!mean$|std$|max$|min$)[^/]+)"),
             re.compile(r"(?!Total |Grouped |Val )(?P<fn>\S+) mean"))
# prefixes a logger adds in front of a framework's own keys (wandb's train/ for the TRL Trainer)
PREFIXES = ("train/",)
# per-scope keys whose last two segments name the series: PrimeIntellect verifiers/prime-rl log the share of
# rollouts stopped by the token cap (finish/stop reason "length") as `is_truncated/mean` (verifiers eval, 2025),
# `<split>/<env>/is_truncated/mean` and, from 2026, `train/agg/all/is_truncated/mean`,
# `effective/<env>/is_truncated/mean` (prime-rl orchestrator metrics.jsonl / wandb); one such key a record each
# env, ranked after the frameworks' own keys.
SUFFIXES = {"/is_truncated/mean": ("clip_ratio", 50)}

_ALIAS: dict[str, tuple[str, int]] = {alias: (name, rank) for name, aliases in SERIES.items()
                                      for rank, alias in enumerate(aliases)}
_CACHE: dict[str, tuple[str, int] | None] = {}
_FN_CACHE: dict[str, str | None] = {}


def canonical(key: str) -> tuple[str, int] | None:
    """(canonical series, rank of the alias: lower is preferred) of a raw key, or None."""
    try:
        return _CACHE[key]
    except KeyError:
        pass
    found = _ALIAS.get(key)
    if found is None:
        for p in PREFIXES:
            if key.startswith(p) and key[len(p):] in _ALIAS:
                name, rank = _ALIAS[key[len(p):]]
                found = (name, rank + 100)  # the bare key wins when a record holds both
                break
    if found is None:
        for suffix, named in SUFFIXES.items():
            if key == suffix[1:] or key.endswith(suffix):
                found = named
                break
    _CACHE[key] = found
    return found


def reward_function(key: str) -> str | None:
    """The reward function a raw key holds the mean of, or None."""
    try:
        return _FN_CACHE[key]
    except KeyError:
        pass
    fn = None
    if canonical(key) is None:
        for rx in FUNCTIONS:
            m = rx.fullmatch(key)
            if m:
                fn = m["fn"]
                break
    _FN_CACHE[key] = fn
    return fn
