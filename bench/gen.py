"""Build a realistic large run directory of one profile: SGLang engine logs, a trainer log, real failures injected.

    python -m bench.gen OUT_DIR --size 1G [--profile mixed] [--engines 4] [--seed 0] [--corpus ../shared/corpus]

Profiles (`PROFILES`), each a regime a user's run can be in:
- `healthy`: the `mixed` run with nothing injected (triage must raise no warning); `--healthy` is the same.
- `mixed`: engine logs dominated by SGLang's 2026-format stat lines (log-formats.md §A.d: D6 `Decode batch, …`
  and P9 `Prefill batch, …`, uvicorn request lines in between) after a real startup block, token usage
  below 0.9 throughout, and a slime/MILES trainer log (§B.k); seven real failures injected.
- `pressure`: as mixed, but 20 % of the stats rows (10-30 % at any size) are at token usage >= 0.9 with
  queued requests, in contiguous episodes of 250-750 rows (2-6 minutes of the log) every 1000-3000 rows.
- `saturated`: every stats row at usage >= 0.95 with a queue: a KV-saturated run.
- `storm`: a saturated run in a retraction storm: about 15 % of each engine log's lines are
  `KV cache pool is full. Retract requests.` lines (§A.e; even engines the 2025-12 wording with
  `#new_tokens_gained`, odd engines the 2025-05 one without), in bursts, each followed by what SGLang
  prints next: decode rows with fewer running requests, a longer queue and `#new_token_ratio` decaying.
- `trainer`: 70 % of the bytes are a slime/MILES trainer log of step, perf and rollout dicts
  (three metric records a step; >= 500 k records from 200 MiB up); `trainer-verl`: the same share as
  verl's one-line `step:N - key:value - …` records, with verl's trainer OOM (005) injected.
- `ray`: the mixed run as one Ray driver log holding every process (`merge_ray`).
- `small`: many small files (per-rank trainer logs of 2-8 KB, per-sample verifier logs of 1-4 KB),
  four real failures injected into four of them.
- `errors`: the mixed run whose engine logs are ~95 % error-like lines no rule explains (~8 M at 1 GiB): 300
  messages (`ERRORS`: 20 components x 15 wordings, each with a level or `failed`), their numbers, request ids
  (UUIDs), hex handles and digests, shard paths and addresses changing from line to line.
Real failure cases, copied line for line from the corpus, are spliced in at known places; `truth.json` (next
to, not inside, OUT_DIR) lists each with its file, line range, expected category and evidence strings, and
`counts.json` what the generator wrote (files, stats rows, rows at usage >= 0.9 with a queue, retraction
lines, metric records).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import zlib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parent.parent.parent.parent / "shared" / "corpus"
if not DEFAULT_CORPUS.is_dir():
    DEFAULT_CORPUS = Path("/work/shared/corpus")

# (corpus case, input file, which generated file it goes into, fraction of that file where it starts)
INJECT = [
    ("036-sglang-swa-full-token-usage-1-queue-growing", "sglang-engine-0.log", "engine:0", 0.35),
    ("031-sglang-overlap-thread-cuda-error-oom-1p5b", "sglang-engine-0.log", "engine:0", 0.97),
    ("008-sglang-engine-input-longer-than-context", "rollout.log", "engine:1", 0.50),
    ("028-sglang-segfault-ncclcomminitrank-startup", "sglang-engine-0.log", "engine:-1", 0.99),
    ("004-slime-retool-logprobs-inductor-oom-h200", "train.log", "train", 0.80),
    ("020-verl-default-compute-score-empty-data-source", "train.log", "train", 0.40),
    ("025-nccl-watchdog-allreduce-timeout-torch26-pg-guid", "train.log", "train", 0.95),
]
# verl's trainer log gets verl's own trainer OOM instead of slime's
INJECT_VERL = [x for x in INJECT if not x[0].startswith("004-")] + [
    ("005-verl-fsdp-entropy-from-logits-oom", "train.log", "train", 0.80)]
# the small-files run: (case, input file, "rank" or "verifier", which of those files, as a fraction of their count)
INJECT_SMALL = [
    ("004-slime-retool-logprobs-inductor-oom-h200", "train.log", "rank", 0.8),
    ("020-verl-default-compute-score-empty-data-source", "train.log", "rank", 0.4),
    ("025-nccl-watchdog-allreduce-timeout-torch26-pg-guid", "train.log", "rank", 0.95),
    ("021-math-verify-timeout-during-comparison", "verifier.log", "verifier", 0.6),
]


@dataclass(frozen=True)
class Profile:
    inject: tuple = tuple(INJECT)
    regime: str = "calm"  # engine pool: calm (usage < 0.9), pressure, saturated, storm
    train_share: float = 0.04  # share of the bytes in the trainer log
    trainer: str = "slime"  # slime (Megatron iterations, memory snapshots, dicts), slime-dense (mostly dicts), verl
    ray: bool = False  # merge every process into one Ray driver log
    small: bool = False  # many small files instead


PROFILES: dict[str, Profile] = {
    "healthy": Profile(inject=()),
    "mixed": Profile(),
    "pressure": Profile(regime="pressure"),
    "saturated": Profile(regime="saturated"),
    "storm": Profile(regime="storm"),
    "trainer": Profile(train_share=0.7, trainer="slime-dense"),
    "trainer-verl": Profile(inject=tuple(INJECT_VERL), train_share=0.7, trainer="verl"),
    "ray": Profile(ray=True),
    "small": Profile(inject=tuple(INJECT_SMALL), small=True),
    "errors": Profile(regime="errors"),
}

START = datetime(2026, 5, 24, 0, 50, 0)
# this generator's own fingerprint, written into counts.json: a cached run dir of an older generator is stale
GENERATOR = f"{zlib.crc32(Path(__file__).read_bytes()):08x}"
RETRACT = "KV cache pool is full. Retract requests. "


@dataclass
class Injected:
    case: str
    file: str
    start: int  # first line (1-based) of the injected block
    end: int  # last line
    category: str
    evidence: list[str] = field(default_factory=list)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)(?:i?B)?", text.strip(), re.I)
    if not m:
        raise ValueError(f"bad size {text!r} (e.g. 100M, 1G)")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()])


def _stamp(t: datetime, tags: str) -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S}{tags}] "


def engine_startup(t: datetime, tags: str, port: int) -> list[str]:
    """A 2026 engine's startup: server args, pool allocation, graph capture, ready (§A.a-A.c, A.i)."""
    p = _stamp(t, "")
    q = _stamp(t, tags)
    return [
        p + "server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tokenizer_path='Qwen/Qwen3-8B', "
        f"context_length=40960, host='0.0.0.0', port={port}, mem_fraction_static=0.8, max_running_requests=256, "
        "max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, tp_size=2, "
        "cuda_graph_max_bs=256, disable_radix_cache=False)",
        q + "Load weight end. elapsed=21.43 s, type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=62.11 GB, "
        "mem usage=15.38 GB.",
        q + "KV Cache is allocated. #tokens: 734840, K size: 25.23 GB, V size: 25.23 GB",
        q + "Capture cuda graph begin. This can take up to several minutes. avail mem=10.81 GB",
        q + "Capture cuda graph end. Time elapsed: 12.87 s. mem usage=1.42 GB. avail mem=9.39 GB.",
        q + "max_total_num_tokens=734840, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=256, context_len=40960, available_gpu_mem=9.39 GB",
        p + "INFO:     Started server process [41234]",
        p + "INFO:     Application startup complete.",
        p + "The server is fired up and ready to roll!",
    ]


class Clock:
    """Log time as milliseconds since START; the formatted second is cached (a line every ~0.5 s)."""

    def __init__(self, tags: str = ""):
        self.ms = 0
        self.tags = tags
        self._sec = -1
        self.head = self.plain = ""

    def advance(self, ms: int) -> None:
        self.ms += ms
        sec = self.ms // 1000
        if sec != self._sec:
            self._sec = sec
            t = f"{START + timedelta(seconds=sec):%Y-%m-%d %H:%M:%S}"
            self.head, self.plain = f"[{t}{self.tags}] ", f"[{t}] "


TOTAL_TOKENS = 734840  # the pool of engine_startup's `KV Cache is allocated. #tokens:`

# The `errors` profile's messages: every component with every wording, 300 in all. {n} a number, {f} a decimal,
# {uuid} a request id, {hex} a handle (0x...), {sha} a digest, {path} a shard path, {ip} an address.
COMPONENTS = ("tokenizer_manager", "detokenizer", "scheduler", "radix_cache", "memory_pool", "model_runner",
              "cuda_graph_runner", "http_server", "router", "data_parallel_controller", "weight_loader", "lora_manager",
              "grammar_backend", "session_controller", "metrics_collector", "io_struct", "hicache_storage",
              "kv_transfer", "prefill_bootstrap", "health_monitor")
WORDINGS = (
    "ERROR {c}: failed to deserialize request {uuid}: unexpected field at offset {n}",
    "ERROR {c}: request {uuid} failed after {n} attempts ({n} ms)",
    "{c} failed to load shard {path}: checksum {sha} does not match",
    "ERROR {c}: handle {hex} is stale (generation {n}, expected {n})",
    "Error in {c} while processing batch {n}: {n} of {n} items dropped",
    "ERROR {c}: cannot reach peer {ip}:{n} (attempt {n}/{n})",
    "{c}: Failed to flush {n} entries to {path} (errno {n})",
    "ERROR {c}: lease {sha} expired {f} s ago; reacquiring",
    "ERROR {c}: slot {n} of block {hex} failed validation",
    "{c} failed: queue depth {n} above soft limit {n}, request {uuid} rejected",
    "CRITICAL {c}: heartbeat from rank {n} late by {f} s",
    "ERROR {c}: could not parse header of object {sha} ({n} bytes)",
    "Error during {c} update of entry {n}: version {n} superseded by {n}",
    "ERROR {c}: stream {uuid} closed by peer {ip} after {n} frames",
    "{c}: write of {n} bytes to {path} failed, {n} retries left",
)
ERRORS = tuple(w.replace("{c}", c) for c in COMPONENTS for w in WORDINGS)


class EngineWriter:
    """Stat lines of one engine: a prefill now and then, decode lines every ~40 iterations, request lines.
    `regime` sets the pool: calm (usage walks below 0.9, a short queue), pressure (episodes at >= 0.9 with a
    queue, `PRESSURE_SHARE` of the rows), saturated (every row >= 0.95 with a queue), storm (saturated, with
    bursts of retraction lines, `wording` 0 = SGLang 2025-12 on with #new_tokens_gained, 1 = 2025-05 to 2025-12).
    Counts what it writes; `batch_retractions` holds the indices of the last batch's retraction lines."""

    STORM_BURST = 0.06  # chance of a burst of 1-5 retraction lines before a row: ~15 % of the lines
    ERROR_SHARE = 0.95  # `errors`: the share of lines that are error-like lines (ERRORS)

    def __init__(self, rng: random.Random, tags: str, regime: str = "calm", wording: int = 0):
        self.rnd = rng.random
        self.clock = Clock(tags)
        self.regime = regime
        self.wording = wording
        self.running = 32
        self.usage = 0.3
        self.queue = 1
        self.ratio = 0.3
        self.in_episode, self.left, self.episode = True, 0, 0
        self.rows = self.high = self.retractions = self.errors = 0
        self.batch_retractions: list[int] = []

    def _pool(self) -> tuple[float, int]:
        """The next row's token usage and queue length."""
        rnd, regime = self.rnd, self.regime
        if regime == "pressure":
            if self.left == 0:  # a calm gap four times as long as the episode that follows it
                self.in_episode = not self.in_episode
                if self.in_episode:
                    self.left = self.episode
                else:
                    self.episode = 250 + int(rnd() * 500)
                    self.left = 4 * self.episode
            self.left -= 1
            if self.in_episode:
                self.usage = 0.9 + rnd() * 0.09
                return self.usage, 1 + int(rnd() * 40)
        elif regime == "saturated":
            self.usage = 0.95 + rnd() * 0.0499
            return self.usage, 1 + int(rnd() * 64)
        elif regime == "storm":
            self.usage = 0.97 + rnd() * 0.0299
            return self.usage, self.queue
        self.usage = max(0.01, min(0.88, self.usage + (rnd() - 0.5) * 0.06))
        return self.usage, 0

    def _retractions(self, out: list[str]) -> None:
        rnd, head = self.rnd, self.clock.head
        for _ in range(1 + int(rnd() * 5)):
            n = 1 + int(rnd() * 3)
            old, self.ratio = self.ratio, min(1.0, self.ratio + 0.005 + rnd() * 0.2)
            self.running = max(1, self.running - n)
            self.queue += n
            self.batch_retractions.append(len(out))
            if self.wording == 0:
                out.append(f"{head}{RETRACT}#retracted_reqs: {n}, #new_tokens_gained: {int(n * (400 + rnd() * 2000))}, "
                           f"#new_token_ratio: {old:.4f} -> {self.ratio:.4f}")
            else:
                out.append(f"{head}{RETRACT}#retracted_reqs: {n}, #new_token_ratio: {old:.4f} -> {self.ratio:.4f}")
            self.retractions += 1

    def _error(self) -> str:
        """One error-like line of the `errors` profile: a message of ERRORS with its values drawn afresh."""
        rnd = self.rnd
        values = {
            "{n}": lambda: str(int(rnd() * 10 ** (1 + int(rnd() * 5)))),
            "{f}": lambda: f"{rnd() * 100:.2f}",
            "{uuid}": lambda: "-".join(f"{int(rnd() * 16 ** k):0{k}x}" for k in (8, 4, 4, 4, 12)),
            "{hex}": lambda: f"0x{int(rnd() * 2 ** 48):012x}",
            "{sha}": lambda: f"{int(rnd() * 2 ** 64):016x}",
            "{path}": lambda: f"/mnt/ckpt/shard_{int(rnd() * 4096):05d}/part-{int(rnd() * 2 ** 32):08x}.bin",
            "{ip}": lambda: f"10.{int(rnd() * 256)}.{int(rnd() * 256)}.{int(rnd() * 256)}",
        }
        text = ERRORS[int(rnd() * len(ERRORS))]
        for key, make in values.items():
            while key in text:
                text = text.replace(key, make(), 1)
        self.errors += 1
        return self.clock.head + text

    def lines(self, n: int) -> list[str]:
        rnd, clock, out = self.rnd, self.clock, []
        self.batch_retractions = []
        storm = self.regime == "storm"
        errors = self.regime == "errors"
        for _ in range(n):
            clock.advance(50 + int(rnd() * 850))
            if storm and rnd() < self.STORM_BURST:
                self._retractions(out)
            if errors and rnd() < self.ERROR_SHARE:
                out.append(self._error())
                continue
            self.running = max(1, min(256, self.running + int(rnd() * 13) - 6))
            r = rnd()
            if r >= 0.80:
                out.append(f"{clock.plain}INFO:     10.0.{int(rnd() * 256)}.{int(rnd() * 256)}:"
                           f"{30000 + int(rnd() * 30000)} - \"POST /generate HTTP/1.1\" 200 OK")
                continue
            usage, queue = self._pool()
            self.rows += 1
            self.high += usage >= 0.9 and queue > 0
            if r < 0.62:
                if not queue and self.regime in ("calm", "pressure"):
                    queue = (0, 0, 0, 0, 1, 2)[int(rnd() * 6)]
                self.ratio = max(0.05, self.ratio * 0.995)  # decays each step toward its floor (§A.e)
                out.append(f"{clock.head}Decode batch, #running-req: {self.running}, #token: {int(usage * TOTAL_TOKENS)}, "
                           f"token usage: {usage:.2f}, cuda graph: True, gen throughput (token/s): "
                           f"{800 + rnd() * 5200:.2f}, #queue-req: {queue}")
            else:
                new = 1 + int(rnd() * 8)
                if storm:
                    self.queue = max(1, self.queue - new)
                    self.running = min(256, self.running + new)
                elif not queue and self.regime in ("calm", "pressure"):
                    queue = int(rnd() * 4)
                out.append(f"{clock.head}Prefill batch, #new-seq: {new}, #new-token: {64 + int(rnd() * 8128)}, "
                           f"#cached-token: {int(rnd() * 4096)}, token usage: {usage:.2f}, "
                           f"#running-req: {self.running}, #queue-req: {queue}, "
                           f"#pending-token: {int(rnd() * 9000)}, cuda graph: False, "
                           f"input throughput (token/s): {2000 + rnd() * 88000:.2f}")
        return out


class TrainerWriter:
    """slime/MILES trainer output (§B.k) for one step every few minutes: Timer lines, Megatron's
    per-iteration lines, a memory snapshot per rank, and the step, perf and rollout dicts (three metric
    records a step, counted in `records`). `dense`: one iteration line and no snapshot a step, so the
    log is mostly metric records."""

    def __init__(self, rng: random.Random, ranks: int = 8, iterations: int = 24, dense: bool = False):
        self.rnd = rng.random
        self.step = 0
        self.clock = Clock()
        self.ranks = 0 if dense else ranks
        self.iterations = 1 if dense else iterations
        self.records = 0

    def lines(self, n: int) -> list[str]:
        rnd, clock, out = self.rnd, self.clock, []
        while len(out) < n:
            clock.advance(60_000 + int(rnd() * 140_000))
            p = clock.plain
            s = self.step
            out += [p + "timer.py:24 - Timer train_wait start",
                    p + f"timer.py:32 - Timer train_wait end (elapsed: {0.5 + rnd() * 8.5:.1f}s)",
                    p + "timer.py:24 - Timer actor_train start"]
            for it in range(self.iterations):
                out.append(f" {p}iteration {s * self.iterations + it + 1:>8}/ 1000000 | "
                           f"consumed samples: {(s * self.iterations + it + 1) * 256:>10} | elapsed time per iteration "
                           f"(ms): {1800 + rnd() * 800:.1f} | learning rate: 1.000000E-06 | global batch size: "
                           f"  256 | lm loss: {(rnd() - 0.5) * 0.1:.6E} | loss scale: 1.0 | grad norm: "
                           f"{0.1 + rnd() * 0.8:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
            out.append(p + f"timer.py:32 - Timer actor_train end (elapsed: {40 + rnd() * 20:.1f}s)")
            for r in range(self.ranks):
                out.append(p + f"memory_utils.py:40 - [Rank {r}] Memory-Usage after update_weights: {{'gpu': '{r}', "
                           f"'total_GB': 79.11, 'free_GB': {5 + rnd() * 15:.2f}, 'used_GB': {50 + rnd() * 20:.2f}}}")
            out += [
                p + f"log_utils.py:542 - step {s}: {{'train/loss': {(rnd() - 0.5) * 0.1:.6f}, "
                f"'train/pg_loss': {(rnd() - 0.5) * 0.1:.6f}, 'train/entropy_loss': {0.2 + rnd() * 0.4:.4f}, "
                f"'train/pg_clipfrac': {rnd() * 0.05:.4f}, 'train/ppo_kl': {rnd() * 0.001:.6f}, "
                f"'train/grad_norm': {0.1 + rnd() * 0.8:.4f}, 'train/lr-pg_0': 1e-06, 'train/step': {s}}}",
                p + f"train_metric_utils.py:61 - perf {s}: {{'perf/train_time': {40 + rnd() * 20:.2f}, "
                f"'perf/train_wait_time': {0.5 + rnd() * 8.5:.2f}, 'perf/step_time': {90 + rnd() * 30:.2f}}}",
                p + f"metrics.py:88 - rollout {s}: {{'rollout/raw_reward': {0.1 + rnd() * 0.8:.4f}, "
                f"'rollout/response_lengths': {800 + rnd() * 2200:.1f}, 'rollout/truncated': "
                f"{rnd() * 0.05:.4f}}}",
            ]
            self.records += 3
            self.step += 1
        return out


class VerlTrainerWriter:
    """verl's driver output: one `(TaskRunner pid=N) step:N - key:value - …` line a step (the shape of
    corpus case 041), one metric record each, counted in `records`."""

    KEYS = (("actor/entropy", 0.2, 0.6), ("actor/kl_loss", 0.0, 0.05), ("actor/pg_loss", -0.05, 0.05),
            ("actor/pg_clipfrac", 0.0, 0.02), ("actor/ppo_kl", 0.0, 0.001), ("actor/grad_norm", 0.05, 0.9),
            ("perf/mfu/actor", 0.2, 0.4), ("perf/max_memory_allocated_gb", 40, 50),
            ("perf/max_memory_reserved_gb", 60, 70), ("critic/score/mean", 0.1, 0.9),
            ("critic/rewards/mean", 0.1, 0.9), ("critic/advantages/mean", -0.01, 0.01),
            ("response_length/mean", 300, 3000), ("response_length/max", 3000, 4096),
            ("response_length/clip_ratio", 0.0, 0.05), ("prompt_length/mean", 300, 400),
            ("timing_s/gen", 20, 40), ("timing_s/reward", 0.5, 2), ("timing_s/old_log_prob", 5, 8),
            ("timing_s/update_actor", 30, 60), ("timing_s/step", 80, 120), ("perf/throughput", 1500, 2500))

    def __init__(self, rng: random.Random):
        self.rnd = rng.random
        self.step = 1
        self.records = 0

    def lines(self, n: int) -> list[str]:
        rnd, out = self.rnd, []
        for _ in range(n):
            parts = [f"(TaskRunner pid=87031) step:{self.step}"]
            parts += [f"{k}:{lo + rnd() * (hi - lo):.3f}" for k, lo, hi in self.KEYS]
            parts += [f"actor/lr:0.000 - training/global_step:{self.step}.000 - training/epoch:{self.step // 500}.000"]
            out.append(" - ".join(parts))
            self.records += 1
            self.step += 1
        return out


class VerifierWriter:
    """A per-sample verifier log: one graded answer a line, in the `LEVEL:date time,ms:` shape of the
    math-verify logs of corpus case 021."""

    def __init__(self, rng: random.Random, sample: int):
        self.rnd = rng.random
        self.clock = Clock()
        self.sample = sample

    def lines(self, n: int) -> list[str]:
        rnd, clock, out = self.rnd, self.clock, []
        for _ in range(n):
            clock.advance(5 + int(rnd() * 200))
            t = clock.plain[1:-2]
            gold = int(rnd() * 1000)
            got = gold if rnd() < 0.6 else int(rnd() * 1000)
            out.append(f"INFO:{t},{clock.ms % 1000:03d}: sample {self.sample} rollout {int(rnd() * 16)}: "
                       f"parsed answer \\boxed{{{got}}} against gold {gold}: score {float(got == gold):.1f} "
                       f"({rnd() * 0.05:.3f} s)")
        return out


def _case_lines(corpus: Path, case: str, name: str) -> tuple[list[str], dict[str, object]]:
    import yaml

    text = (corpus / case / "input" / name).read_text(encoding="utf-8", errors="replace")
    expect = yaml.safe_load((corpus / case / "expect.yaml").read_text(encoding="utf-8"))
    return text.splitlines(), expect


def _injected(corpus: Path, case: str, fname: str, file: str, at: int) -> tuple[Injected, list[str]]:
    block, expect = _case_lines(corpus, case, fname)
    return Injected(case, file, at, at + len(block) - 1, str(expect["category"]),
                    [str(e) for e in expect.get("evidence") or []]), block


def _trainer(kind: str, rng: random.Random) -> TrainerWriter | VerlTrainerWriter:
    return VerlTrainerWriter(rng) if kind == "verl" else TrainerWriter(rng, dense=kind == "slime-dense")


def _write_truth(out: Path, truth: list[Injected], counts: dict[str, object]) -> None:
    out.with_name(out.name + ".truth.json").write_text(json.dumps([asdict(t) for t in truth], indent=1),
                                                        encoding="utf-8")
    out.with_name(out.name + ".counts.json").write_text(json.dumps(counts | {"generator": GENERATOR}, indent=1),
                                                         encoding="utf-8")


class _LineFile:
    """A log being written: counts its lines and bytes, reports bytes to `progress`."""

    def __init__(self, path: Path, progress: object = None):
        self.fh = open(path, "w", encoding="utf-8")
        self.progress = progress
        self.lines = self.bytes = 0

    def __enter__(self) -> _LineFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()

    def put(self, batch: list[str]) -> None:
        if batch:
            chunk = "\n".join(batch) + "\n"
            self.fh.write(chunk)
            self.bytes += len(chunk)
            self.lines += len(batch)
            if self.progress is not None:
                self.progress(len(chunk))  # type: ignore[operator]


def _emit(fh: _LineFile, writer: EngineWriter | TrainerWriter | VerlTrainerWriter, n: int, storm: list[int]) -> None:
    """Write the writer's next `n` steps; `storm` keeps the first and last retraction line number."""
    batch = writer.lines(n)
    if isinstance(writer, EngineWriter) and writer.batch_retractions:
        storm[:] = [storm[0] if storm else fh.lines + writer.batch_retractions[0] + 1,
                    fh.lines + writer.batch_retractions[-1] + 1]
    fh.put(batch)


def generate(out: Path, size: int, engines: int = 4, seed: int = 0, corpus: Path = DEFAULT_CORPUS,
             progress: object = None, healthy: bool = False, profile: str = "mixed") -> list[Injected]:
    """Write the run directory of `profile` (PROFILES); returns (and writes beside it as <out>.truth.json)
    the injected failures, and writes what it generated as <out>.counts.json.
    `healthy`: inject nothing (a run triage must raise no warning on), the `healthy` profile."""
    prof = PROFILES["healthy" if healthy else profile]
    if prof.small:
        return generate_small(out, size, seed, corpus, prof, progress)
    if prof.ray:
        files = out.with_name(out.name + "-files")
        truth = generate(files, size, engines, seed, corpus, progress, profile="mixed")
        merged = merge_ray(files, truth, out)
        counts = json.loads(files.with_name(files.name + ".counts.json").read_text(encoding="utf-8"))
        _write_truth(out, merged, counts | {"profile": "ray", "files": 1})
        return merged
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per_engine = int(size * (1 - prof.train_share) / engines)
    targets = {f"engine:{i}": per_engine for i in range(engines)} | {"train": int(size * prof.train_share)}
    names = {f"engine:{i}": f"sglang-engine-{i}.log" for i in range(engines)} | {"train": "train.log"}
    plan: dict[str, list[tuple[float, str, str]]] = {k: [] for k in targets}
    for case, fname, where, frac in prof.inject:
        if where.startswith("engine:"):  # -1: the last engine; an index past the last wraps round
            where = f"engine:{int(where.split(':')[1]) % engines}"
        plan[where].append((frac, case, fname))
    truth: list[Injected] = []
    counts: dict[str, object] = {"profile": profile if not healthy else "healthy", "files": len(targets),
                                 "stats_rows": 0, "high_rows": 0, "retractions": 0, "engine_lines": 0,
                                 "metric_records": 0, "error_lines": 0}
    for key, target in targets.items():
        lines: list[str] = []
        if key == "train":
            writer: EngineWriter | TrainerWriter | VerlTrainerWriter = _trainer(prof.trainer, rng)
            sample: EngineWriter | TrainerWriter | VerlTrainerWriter = _trainer(prof.trainer, random.Random(seed + 1))
        else:
            i = int(key.split(":")[1])
            tags = f" DP{i % 2} TP0" if engines > 1 else ""
            lines += engine_startup(START, tags, 30000 + i)
            writer = EngineWriter(rng, tags, prof.regime, wording=i % 2)
            sample = EngineWriter(random.Random(seed + 1), tags, prof.regime, wording=i % 2)
        avg = sum(len(x) + 1 for x in sample.lines(2000)) / 2000  # bytes per line, to place the injections
        total_lines = max(len(lines) + 10, int(target / avg))
        storm: list[int] = []  # first and last retraction line
        with _LineFile(out / names[key], progress) as fh:
            fh.put(lines)
            for frac, case, fname in sorted(plan[key]):
                at = int(total_lines * frac)
                while fh.lines < at:
                    _emit(fh, writer, max(1, min(20_000, at - fh.lines)), storm)
                injected, block = _injected(corpus, case, fname, names[key], fh.lines + 1)
                truth.append(injected)
                fh.put(block)
            while fh.bytes < target:
                _emit(fh, writer, max(50, min(20_000, int((target - fh.bytes) / avg))), storm)
            line_no = fh.lines
        if isinstance(writer, EngineWriter):
            counts["stats_rows"] += writer.rows  # type: ignore[operator]
            counts["high_rows"] += writer.high  # type: ignore[operator]
            counts["retractions"] += writer.retractions  # type: ignore[operator]
            counts["error_lines"] += writer.errors  # type: ignore[operator]
            counts["engine_lines"] += line_no  # type: ignore[operator]
            if storm and prof.inject and key == "engine:0":
                # the storm itself is a failure to find: a retraction finding pointing into the first engine's
                truth.append(Injected("retraction-storm (generated)", names[key], storm[0], storm[1],
                                      "serving-oom-retraction", [RETRACT.strip()]))
        else:
            counts["metric_records"] += writer.records  # type: ignore[operator]
    _write_truth(out, truth, counts)
    return truth


def generate_small(out: Path, size: int, seed: int, corpus: Path, prof: Profile,
                   progress: object = None) -> list[Injected]:
    """Many small files: `ranks/train-rank-NNNNN.log` (a rank's trainer log, 2-8 KB) and
    `verifier/verify-sample-NNNNNN.log` (one sample's grading, 1-4 KB), alternating until `size` bytes."""
    rng = random.Random(seed)
    rnd = rng.random
    (out / "ranks").mkdir(parents=True, exist_ok=True)
    (out / "verifier").mkdir(parents=True, exist_ok=True)
    avg_file = 4000  # bytes: (2-8 KB + 1-4 KB) / 2, rounded down
    count = max(2, size // avg_file)
    per_kind = {"rank": (count + 1) // 2, "verifier": count // 2}
    at = {(kind, int(per_kind[kind] * frac)): (case, fname) for case, fname, kind, frac in prof.inject}
    truth: list[Injected] = []
    written = records = 0
    index = {"rank": 0, "verifier": 0}
    while written < size or index["verifier"] < per_kind["verifier"] and written < size * 1.02:
        kind = "rank" if index["rank"] <= index["verifier"] else "verifier"
        i = index[kind]
        index[kind] += 1
        if kind == "rank":
            name = f"ranks/train-rank-{i:05d}.log"
            writer: TrainerWriter | VerifierWriter = TrainerWriter(random.Random(seed * 1_000_003 + i), ranks=1,
                                                                   iterations=2)
            target = 2000 + int(rnd() * 6000)
        else:
            name = f"verifier/verify-sample-{i:06d}.log"
            writer = VerifierWriter(random.Random(seed * 1_000_003 + i), i)
            target = 1000 + int(rnd() * 3000)
        lines: list[str] = []
        nbytes = 0
        while nbytes < target:
            more = writer.lines(4)
            lines += more
            nbytes += sum(len(x) + 1 for x in more)
        if (kind, i) in at:
            case, fname = at[(kind, i)]
            mid = len(lines) // 2
            injected, block = _injected(corpus, case, fname, name, mid + 1)
            truth.append(injected)
            lines[mid:mid] = block
        text = "\n".join(lines) + "\n"
        (out / name).write_text(text, encoding="utf-8")
        written += len(text)
        if isinstance(writer, TrainerWriter):
            records += writer.records
        if progress is not None:
            progress(len(text))  # type: ignore[operator]
    counts = {"profile": "small", "files": index["rank"] + index["verifier"], "stats_rows": 0, "high_rows": 0,
              "retractions": 0, "engine_lines": 0, "metric_records": records}
    _write_truth(out, truth, counts)
    return truth


RAY_ACTORS = {"train.log": "(MegatronTrainRayActor pid=3900, ip=10.0.0.9) "}
RAY_BLOCK = 16  # lines a process writes before the next one's turn


def merge_ray(run: Path, truth: list[Injected], out: Path) -> list[Injected]:
    """The same run as one Ray driver log, `out/driver.log`: every line behind its process's actor prefix
    (`(SGLangEngine pid=N, ip=…)`, `(MegatronTrainRayActor …)`), the processes' lines interleaved in blocks,
    each file at its own pace, as Ray forwards them. Returns the truth with line ranges in the merged log."""
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in run.iterdir() if p.suffix == ".log")
    sizes = {p.name: p.stat().st_size for p in files}
    prefix = {p.name: RAY_ACTORS.get(p.name, f"(SGLangEngine pid={4100 + i}, ip=10.0.0.{i + 1}) ")
              for i, p in enumerate(files)}
    wanted = {(t.file, n) for t in truth for n in (t.start, t.end)}
    moved: dict[tuple[str, int], int] = {}
    readers = {p.name: open(p, encoding="utf-8") for p in files}
    done = {name: 0 for name in readers}  # bytes read of each
    seen = {name: 0 for name in readers}  # lines read of each
    line_no = 0
    with open(out / "driver.log", "w", encoding="utf-8") as fh:
        while readers:
            name = min(readers, key=lambda n: done[n] / sizes[n])  # the file furthest behind goes next
            for _ in range(RAY_BLOCK):
                line = readers[name].readline()
                if not line:
                    readers.pop(name).close()
                    break
                done[name] += len(line)
                seen[name] += 1
                line_no += 1
                if (name, seen[name]) in wanted:
                    moved[(name, seen[name])] = line_no
                fh.write(prefix[name] + line)
    merged = [Injected(t.case, "driver.log", moved[(t.file, t.start)], moved[(t.file, t.end)], t.category,
                       t.evidence) for t in truth]
    truth_path = out.with_name(out.name + ".truth.json")
    truth_path.write_text(json.dumps([asdict(t) for t in merged], indent=1), encoding="utf-8")
    return merged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", default="100M", help="total size, e.g. 100M, 1G")
    ap.add_argument("--profile", default="mixed", choices=sorted(PROFILES))
    ap.add_argument("--engines", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--ray", action="store_true", help="the ray profile: one Ray driver log holding every process")
    ap.add_argument("--healthy", action="store_true", help="the healthy profile: inject no failure")
    args = ap.parse_args(argv)
    profile = "ray" if args.ray else "healthy" if args.healthy else args.profile
    truth = generate(args.out, parse_size(args.size), args.engines, args.seed, args.corpus, profile=profile)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{args.out}: {profile}, {size / 2**20:.0f} MiB, {len(truth)} injected failures "
          f"({args.out.name}.truth.json, {args.out.name}.counts.json)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
