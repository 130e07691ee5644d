"""Throughput of the native literal prefilter (`triage._linescan.scan`) over one log file.

    python -m bench.linescan FILE|DIR [...] [--runs 5] [--chunk 4194304] [--simd NAME] [--no-check]

A directory stands for the *.log files under it (each timed alone, then a total).

The needles are the library's, filed the way `Scanner` files them (`Scanner(load_library(None))
.needles.matcher(head)`, head = the first MiB of the file). The file is read into memory once and
scanned in chunks of whole lines (about 4 MiB each, cut after the last newline, as fastscan does),
carrying `next_sample` from chunk to chunk with the step fastscan uses for the file's size. After one
untimed pass it prints the median GB/s of --runs passes (one core: scan runs on the calling thread;
the garbage collector is off while a pass is timed, as in timeit) and, unless --no-check, whether every
chunk's result equals the scalar loop's (`_linescan.scan_scalar`). --simd picks the loop scan() takes
(one of `_linescan.PATHS`, or "" for the scalar loop); by default the fastest this CPU has.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

from triage.library.rules import load_library
from triage.scan import native
from triage.scan import prefiltered as fastscan
from triage.scan.scanner import Scanner


def chunks(data: bytes, size: int) -> list[memoryview]:
    """Views of `data` in pieces of whole lines, each about `size` bytes (the last may lack a newline)."""
    mv = memoryview(data)
    out, pos, n = [], 0, len(data)
    while pos < n:
        end = min(pos + size, n)
        if end < n:
            cut = data.rfind(b"\n", pos, end) + 1
            end = cut if cut > pos else (data.find(b"\n", end) + 1 or n)
        out.append(mv[pos:end])
        pos = end
    return out


def run(scan, matcher, parts: list[memoryview], step: int) -> list:
    """One pass of `scan` over the chunks, as fastscan drives it; returns each chunk's result."""
    results, next_sample, offset = [], 0, 0
    for part in parts:
        r = scan(matcher, part, max(0, next_sample - offset), step)
        next_sample = r[3] + offset
        offset += len(part)
        results.append(r)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=4 << 20)
    ap.add_argument("--simd", help="the loop scan() takes: one of _linescan.PATHS, or '' for the scalar one")
    ap.add_argument("--no-check", action="store_true", help="skip the comparison with the scalar path")
    args = ap.parse_args(argv)
    ls = native._linescan
    if ls is None:
        print("triage._linescan is not built", file=sys.stderr)
        return 2
    if args.simd is not None:
        ls.set_simd(args.simd)
    scanner = Scanner(load_library(None))
    paths = getattr(ls, "PATHS", ())
    print(f"module {ls.__file__}; scan() takes: {getattr(ls, 'SIMD', '') or 'the scalar loop'} "
          f"(this CPU: {', '.join(paths) or '-'})")
    files = [g for f in args.files for g in (sorted(f.rglob("*.log")) if f.is_dir() else [f])]
    bad = 0
    total_bytes, total_time = 0, 0.0
    for f in files:
        data = f.read_bytes()
        matcher = scanner.needles.matcher(data[:native.PAIR_SAMPLE])
        parts = chunks(data, args.chunk)
        step = 0 if len(data) <= fastscan.SAMPLE_ALL_BELOW else len(data) // fastscan.TIMELINE_ROWS
        run(ls.scan, matcher, parts, step)  # one untimed pass: the file's pages and the tables warm
        times = []
        for _ in range(args.runs):
            res = None
            gc.collect()
            gc.disable()  # as timeit does: the collector's passes over earlier results are not the scan's
            t0 = time.perf_counter()
            res = run(ls.scan, matcher, parts, step)
            times.append(time.perf_counter() - t0)
            gc.enable()
        med = statistics.median(times)
        total_bytes += len(data)
        total_time += med
        hits = sum(len(r[4]) for r in res)
        line = (f"{f}: {len(data) / 1e6:.1f} MB, {hits} lines out, median {med * 1e3:.1f} ms = "
                f"{len(data) / med / 1e9:.2f} GB/s (runs: {', '.join(f'{t * 1e3:.0f}' for t in times)} ms)")
        if not args.no_check and hasattr(ls, "scan_scalar"):
            t0 = time.perf_counter()
            ref = run(ls.scan_scalar, matcher, parts, step)
            ts = time.perf_counter() - t0
            same = ref == res
            bad += not same
            line += f"; scalar {len(data) / ts / 1e9:.2f} GB/s, output {'identical' if same else 'DIFFERS'}"
        print(line, flush=True)
    if len(files) > 1:
        print(f"total: {len(files)} files, {total_bytes / 1e6:.1f} MB, {total_bytes / total_time / 1e9:.2f} GB/s "
              f"(sum of medians), {'all identical' if not bad else f'{bad} DIFFER'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
