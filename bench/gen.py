"""Build a realistic large run directory: SGLang engine logs, a trainer log, real failures injected.

    python -m bench.gen OUT_DIR --size 1G [--engines 4] [--seed 0] [--corpus ../shared/corpus] [--ray]

The engine logs are dominated by SGLang's 2026-format stat lines (log-formats.md §A.d: D6
`Decode batch, …` and P9 `Prefill batch, …`, with uvicorn request lines in between), after a real
startup block. The trainer log holds slime/MILES step, perf and Timer lines. Real failure cases,
copied line for line from the corpus, are spliced in at known places; `truth.json` (next to, not
inside, OUT_DIR) lists each with its file, line range, expected category and evidence strings.
With --ray, the same run is written as one Ray driver log holding every process's lines (merge_ray).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
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

START = datetime(2026, 5, 24, 0, 50, 0)


@dataclass
class Injected:
    case: str
    file: str
    start: int  # first line (1-based) of the injected block
    end: int  # last line
    category: str
    evidence: list[str] = field(default_factory=list)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)B?", text.strip(), re.I)
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


class EngineWriter:
    """Stat lines of one healthy engine: a prefill now and then, decode lines every ~40 iterations."""

    def __init__(self, rng: random.Random, tags: str):
        self.rng = rng
        self.tags = tags
        self.t = START
        self.running = 32
        self.usage = 0.3

    def lines(self, n: int) -> list[str]:
        rng, out = self.rng, []
        for _ in range(n):
            self.t += timedelta(milliseconds=rng.randrange(50, 900))
            head = _stamp(self.t, self.tags)
            self.running = max(1, min(256, self.running + rng.randrange(-6, 7)))
            self.usage = max(0.01, min(0.88, self.usage + rng.uniform(-0.03, 0.03)))
            r = rng.random()
            if r < 0.62:
                out.append(f"{head}Decode batch, #running-req: {self.running}, #token: {int(self.usage * 734840)}, "
                           f"token usage: {self.usage:.2f}, cuda graph: True, gen throughput (token/s): "
                           f"{rng.uniform(800, 6000):.2f}, #queue-req: {rng.choice((0, 0, 0, 0, 1, 2))}")
            elif r < 0.80:
                new = rng.randrange(1, 9)
                out.append(f"{head}Prefill batch, #new-seq: {new}, #new-token: {rng.randrange(64, 8192)}, "
                           f"#cached-token: {rng.randrange(0, 4096)}, token usage: {self.usage:.2f}, "
                           f"#running-req: {self.running}, #queue-req: {rng.randrange(0, 4)}, "
                           f"#pending-token: {rng.randrange(0, 9000)}, cuda graph: False, "
                           f"input throughput (token/s): {rng.uniform(2000, 90000):.2f}")
            else:
                out.append(f"{_stamp(self.t, '')}INFO:     10.0.{rng.randrange(256)}.{rng.randrange(256)}:"
                           f"{rng.randrange(30000, 60000)} - \"POST /generate HTTP/1.1\" 200 OK")
        return out


class TrainerWriter:
    """slime/MILES trainer output (§B.k) for one step every few minutes: Timer lines, Megatron's
    per-iteration lines, a memory snapshot per rank, and the step, perf and rollout dicts."""

    def __init__(self, rng: random.Random, ranks: int = 8, iterations: int = 24):
        self.rng = rng
        self.step = 0
        self.t = START
        self.ranks = ranks
        self.iterations = iterations

    def lines(self, n: int) -> list[str]:
        rng, out = self.rng, []
        while len(out) < n:
            self.t += timedelta(seconds=rng.randrange(60, 200))
            p = f"[{self.t:%Y-%m-%d %H:%M:%S}] "
            s = self.step
            out += [p + "timer.py:24 - Timer train_wait start",
                    p + f"timer.py:32 - Timer train_wait end (elapsed: {rng.uniform(0.5, 9):.1f}s)",
                    p + "timer.py:24 - Timer actor_train start"]
            for it in range(self.iterations):
                out.append(f" [{self.t:%Y-%m-%d %H:%M:%S}] iteration {s * self.iterations + it + 1:>8}/ 1000000 | "
                           f"consumed samples: {(s * self.iterations + it + 1) * 256:>10} | elapsed time per iteration "
                           f"(ms): {rng.uniform(1800, 2600):.1f} | learning rate: 1.000000E-06 | global batch size: "
                           f"  256 | lm loss: {rng.uniform(-0.05, 0.05):.6E} | loss scale: 1.0 | grad norm: "
                           f"{rng.uniform(0.1, 0.9):.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
            out.append(p + f"timer.py:32 - Timer actor_train end (elapsed: {rng.uniform(40, 60):.1f}s)")
            for r in range(self.ranks):
                out.append(p + f"memory_utils.py:40 - [Rank {r}] Memory-Usage after update_weights: {{'gpu': '{r}', "
                           f"'total_GB': 79.11, 'free_GB': {rng.uniform(5, 20):.2f}, 'used_GB': {rng.uniform(50, 70):.2f}}}")
            out += [
                p + f"log_utils.py:542 - step {s}: {{'train/loss': {rng.uniform(-0.05, 0.05):.6f}, "
                f"'train/pg_loss': {rng.uniform(-0.05, 0.05):.6f}, 'train/entropy_loss': {rng.uniform(0.2, 0.6):.4f}, "
                f"'train/pg_clipfrac': {rng.uniform(0, 0.05):.4f}, 'train/ppo_kl': {rng.uniform(0, 0.001):.6f}, "
                f"'train/grad_norm': {rng.uniform(0.1, 0.9):.4f}, 'train/lr-pg_0': 1e-06, 'train/step': {s}}}",
                p + f"train_metric_utils.py:61 - perf {s}: {{'perf/train_time': {rng.uniform(40, 60):.2f}, "
                f"'perf/train_wait_time': {rng.uniform(0.5, 9):.2f}, 'perf/step_time': {rng.uniform(90, 120):.2f}}}",
                p + f"metrics.py:88 - rollout {s}: {{'rollout/raw_reward': {rng.uniform(0.1, 0.9):.4f}, "
                f"'rollout/response_lengths': {rng.uniform(800, 3000):.1f}, 'rollout/truncated': "
                f"{rng.uniform(0, 0.05):.4f}}}",
            ]
            self.step += 1
        return out


def _case_lines(corpus: Path, case: str, name: str) -> tuple[list[str], dict[str, object]]:
    import yaml

    text = (corpus / case / "input" / name).read_text(encoding="utf-8", errors="replace")
    expect = yaml.safe_load((corpus / case / "expect.yaml").read_text(encoding="utf-8"))
    return text.splitlines(), expect


def _write(path: Path, blocks: list[list[str]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for block in blocks:
            if block:
                fh.write("\n".join(block))
                fh.write("\n")


def generate(out: Path, size: int, engines: int = 4, seed: int = 0, corpus: Path = DEFAULT_CORPUS,
             progress: object = None, healthy: bool = False) -> list[Injected]:
    """Write the run directory; returns (and writes beside it as <out>.truth.json) the injected failures.
    `healthy`: inject nothing (a run triage must raise no warning on)."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    train_share = 0.04
    per_engine = int(size * (1 - train_share) / engines)
    targets = {f"engine:{i}": per_engine for i in range(engines)} | {"train": int(size * train_share)}
    names = {f"engine:{i}": f"sglang-engine-{i}.log" for i in range(engines)} | {"train": "train.log"}
    plan: dict[str, list[tuple[float, str, str]]] = {k: [] for k in targets}
    for case, fname, where, frac in ([] if healthy else INJECT):
        if where.startswith("engine:") and int(where.split(":")[1]) < 0:
            where = f"engine:{engines + int(where.split(':')[1])}"
        plan[where].append((frac, case, fname))
    truth: list[Injected] = []
    for key, target in targets.items():
        lines: list[str] = []
        if key == "train":
            writer: EngineWriter | TrainerWriter = TrainerWriter(rng)
            sample: EngineWriter | TrainerWriter = TrainerWriter(random.Random(seed + 1))
        else:
            i = int(key.split(":")[1])
            tags = f" DP{i % 2} TP0" if engines > 1 else ""
            lines += engine_startup(START, tags, 30000 + i)
            writer = EngineWriter(rng, tags)
            sample = EngineWriter(random.Random(seed + 1), tags)
        avg = sum(len(x) + 1 for x in sample.lines(2000)) / 2000  # bytes per line, to place the injections
        total_lines = max(len(lines) + 10, int(target / avg))
        for frac, case, fname in sorted(plan[key]):
            at = max(len(lines), int(total_lines * frac))
            lines += writer.lines(at - len(lines))
            block, expect = _case_lines(corpus, case, fname)
            truth.append(Injected(case, names[key], len(lines) + 1, len(lines) + len(block),
                                  str(expect["category"]), [str(e) for e in expect.get("evidence") or []]))
            lines += block
        path = out / names[key]
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
            written = fh.tell()
            while written < target:
                batch = max(50, min(20_000, int((target - written) / avg)))
                chunk = "\n".join(writer.lines(batch)) + "\n"
                fh.write(chunk)
                written += len(chunk)
                if progress is not None:
                    progress(len(chunk))  # type: ignore[operator]
    truth_path = out.with_name(out.name + ".truth.json")
    truth_path.write_text(json.dumps([asdict(t) for t in truth], indent=1), encoding="utf-8")
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
    ap.add_argument("--engines", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--ray", action="store_true", help="one Ray driver log instead of a file per process")
    ap.add_argument("--healthy", action="store_true", help="inject no failure: the healthy profile")
    args = ap.parse_args(argv)
    if args.ray:
        files = args.out.with_name(args.out.name + "-files")
        truth = merge_ray(files, generate(files, parse_size(args.size), args.engines, args.seed, args.corpus,
                                          healthy=args.healthy), args.out)
    else:
        truth = generate(args.out, parse_size(args.size), args.engines, args.seed, args.corpus, healthy=args.healthy)
    size = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"{args.out}: {size / 2**20:.0f} MiB, {len(truth)} injected failures ({args.out.name}.truth.json)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
