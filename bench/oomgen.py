"""Repeated-claim inputs (issue 13, "bounded cost per line"): a run directory whose engine log holds N out-of-memory
lines, each a line a rule claims and whose `near`/`not_near` windows it reads, identical or with their numbers
changing, among a little context (a traceback header, stats rows).

    python -m bench.oomgen OUT_DIR --lines 100000 [--varied] [--windows] [--gzip] [--seed 1]

writes OUT_DIR/sglang-engine-0.log (OUT_DIR is created; an existing log there is replaced). `--windows`: every
5,000 lines a traceback whose frames a `near` rule reads (SGLang's prefill or CUDA-graph capture path), so the OOM
lines after it are claimed by that rule and the others by the generic one; `--gzip`: the log gzip-compressed
(sglang-engine-0.log.gz: the line-for-line path). Time and measure it with `/usr/bin/time -v triage OUT_DIR`
(native) and with TRIAGE_NO_NATIVE=1 (the line-for-line path); TRIAGE_NO_NEARFOLD=1 keeps every OOM line a claim
of its own (scan/nearfold.py), for comparison."""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path

HEAD = ["[2026-05-24 00:50:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, mem_fraction_static=0.8)",
        "[2026-05-24 00:50:00 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=62.11 GB",
        "[2026-05-24 00:50:01] The server is fired up and ready to roll!"]
TRACEBACK = ["Traceback (most recent call last):",
             '  File "/usr/local/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2412, in run',
             '  File "/usr/local/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1751, in forward']
SAME = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.11 GiB of which 1.50 GiB is free.")


def oom(rnd: random.Random) -> str:
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {rnd.randint(1, 64)}.{rnd.randint(0, 99):02d}"
            f" GiB. GPU {rnd.randint(0, 7)} has a total capacity of 79.11 GiB of which {rnd.randint(0, 900)}.50 MiB "
            "is free.")


# the frames of the path a `near` rule names (serving.engine-oom-prefill, serving.engine-oom-graph-capture)
WINDOWS = [['  File "/usr/local/lib/python3.12/site-packages/sglang/srt/model_executor/model_runner.py", line 1803, '
            'in forward_extend'],
           ['  File "/usr/local/lib/python3.12/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 512, '
            'in capture_one_batch']]


def lines(n: int, varied: bool, seed: int, windows: bool = False) -> list[str]:
    rnd = random.Random(seed)
    out = list(HEAD) + TRACEBACK
    for i in range(n):
        if windows and i % 5000 == 2500:
            out += TRACEBACK[:2] + WINDOWS[i // 5000 % 2]
        if i % 1000 == 999:  # a stats row now and then: the engine went on
            out.append(f"[2026-05-24 01:{i // 60000 % 60:02d}:{i // 1000 % 60:02d} TP0] Decode batch, #running-req: 3,"
                       f" #token: 4096, token usage: 0.41, cuda graph: True, gen throughput (token/s): 812.20, "
                       "#queue-req: 0")
        out.append(oom(rnd) if varied else SAME)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--varied", action="store_true", help="the OOM lines' numbers change (else all identical)")
    ap.add_argument("--windows", action="store_true", help="tracebacks a `near` rule reads, every 5,000 lines")
    ap.add_argument("--gzip", action="store_true", help="write the log gzip-compressed")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    text = ("\n".join(lines(a.lines, a.varied, a.seed, a.windows)) + "\n").encode()
    if a.gzip:
        (a.out / "sglang-engine-0.log.gz").write_bytes(gzip.compress(text))
    else:
        (a.out / "sglang-engine-0.log").write_bytes(text)


if __name__ == "__main__":
    main()
