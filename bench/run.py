"""Time triage against `grep -E` over the same generated run directories, side by side, one row per profile and size.

    python -m bench.run [--profiles mixed,storm,...] [--sizes 100M,1G] [--runs 5] [--triage .venv/bin/triage]
                        [--out bench/out] [--json ROWS.json]

For each profile (bench.gen.PROFILES) and size: generate the run dir once (cached under --out, made again when
the generator changed), then alternate grep and triage runs (--runs pairs, fewer when they pass --budget seconds;
grep's output goes to a file: GNU grep stops at the first match when writing to /dev/null) and take the median
wall time and the median CPU time of each. CPU time is user + system of the whole process tree (os.wait4 reports
a process's own time plus that of every descendant it waited for), so a worker triage forks is counted.
One more triage run, untimed, samples the
memory of triage and every process it starts (PSS and RSS, summed, every 5 ms) for the peak, and its JSON report
is checked against the injected failures (recall).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from .gen import DEFAULT_CORPUS, GENERATOR, PROFILES, generate, parse_size

# Ten literal anchors of the rule library: the grep a user would write by hand for these failures.
GREP_ALTERNATION = ("out of memory|Traceback|Error|KV cache pool is full|Retract requests|longer than the model"
                    "|Segmentation fault|Watchdog caught|OutOfMemoryError|Reward function is not implemented")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes. PSS splits each shared page among the processes sharing it
    (a forked worker shares the parent's loaded rule library), so PSS sums to the memory really used."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


def tree_memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) summed over a process and all its descendants. The RSS sum counts shared pages once per
    process (an upper bound); the PSS sum does not."""
    rss = pss = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        r, q = _memory(p)
        rss, pss = rss + r, pss + q
        todo += _children(p)
    return rss, pss


def _wait(proc: subprocess.Popen) -> tuple[int, float]:
    """Reap `proc`: (exit code, CPU seconds, user + system, of it and every descendant it waited for)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def run_sampled(cmd: list[str], stdout: Path) -> tuple[float, tuple[int, int], int, float]:
    """(seconds, (peak tree RSS, peak tree PSS) in bytes, exit code, CPU seconds)."""
    peak = (0, 0)
    with open(stdout, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                now = tree_memory(proc.pid)
                peak = (max(peak[0], now[0]), max(peak[1], now[1]))
                done.wait(0.005)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        rc, cpu = _wait(proc)
        seconds = time.perf_counter() - t0
        done.set()
        th.join()
    return seconds, peak, rc, cpu


def timed(cmd: list[str], stdout: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process tree)."""
    with open(stdout, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, cpu = _wait(proc)
        return time.perf_counter() - t0, cpu


def recall(report: dict, truth: list[dict]) -> tuple[int, list[str]]:
    """Injected failures that some finding of the expected category points into (file, line range)."""
    found, missing = 0, []
    for t in truth:
        ok = False
        for f in report.get("findings", []):
            if f["category"] != t["category"]:
                continue
            places = list(f.get("evidence") or []) + [e for e in (f.get("first"), f.get("last")) if e]
            if any(e["file"] == t["file"] and t["start"] <= e["line"] <= t["end"] for e in places):
                ok = True
                break
        found += ok
        if not ok:
            missing.append(t["case"])
    return found, missing


def run_dir(out: Path, profile: str, size_text: str, engines: int, corpus: Path) -> tuple[Path, list[dict], dict]:
    """The run dir of `profile` at `size_text` (generated unless cached by this generator): (dir, truth, counts)."""
    d = out / f"{profile}-{size_text}-{engines}e"
    truth_path, counts_path = (d.with_name(d.name + x) for x in (".truth.json", ".counts.json"))
    fresh = counts_path.is_file() and truth_path.is_file() and \
        json.loads(counts_path.read_text()).get("generator") == GENERATOR
    if not fresh:
        for stale in (d, d.with_name(d.name + "-files")):
            if stale.exists():
                shutil.rmtree(stale)
        generate(d, parse_size(size_text), engines, corpus=corpus, profile=profile,
                 progress=_progress(parse_size(size_text)))
    return d, json.loads(truth_path.read_text()), json.loads(counts_path.read_text())


def _progress(total: int):  # type: ignore[no-untyped-def]
    """A rich progress bar on stderr when it is a terminal; nothing in CI."""
    if not sys.stderr.isatty():
        return None
    from rich.progress import Progress

    bar = Progress(transient=True)
    task = bar.add_task("generating", total=total)
    bar.start()
    state = {"n": 0}

    def advance(n: int) -> None:
        state["n"] += n
        bar.update(task, advance=n)
        if state["n"] >= total:
            bar.stop()

    return advance


def _tree_bytes(d: Path) -> tuple[int, int]:
    """(bytes, files) under d."""
    size = files = 0
    for root, _, names in os.walk(d):
        for name in names:
            size += os.path.getsize(os.path.join(root, name))
            files += 1
    return size, files


def bench(profile: str, size_text: str, args: argparse.Namespace) -> dict:
    d, truth, counts = run_dir(args.out, profile, size_text, args.engines, args.corpus)
    size, nfiles = _tree_bytes(d)
    triage_cmd = args.triage.split() + [str(d), "--format", "json", "--fail-on", "never"]
    # -r over the directory: the same files triage reads, and no argument list too long for many small files
    grep_cmd = ["grep", "-E", "-c", "-r", GREP_ALTERNATION, str(d)]
    t_out, g_out = args.out / f"triage-{os.getpid()}.json", args.out / f"grep-{os.getpid()}.txt"
    tt, gt, tc, gc = [], [], [], []
    if args.single:  # one grep run (it warms the page cache), then one triage run, timed and sampled
        wall, cpu = timed(grep_cmd, g_out)
        gt.append(wall)
        gc.append(cpu)
        wall, peak, _, cpu = run_sampled(triage_cmd, t_out)
        tt.append(wall)
        tc.append(cpu)
    else:
        timed(triage_cmd, t_out)  # warm the page cache and any lazy state once
        began = time.perf_counter()
        for i in range(args.runs):
            if i and time.perf_counter() - began > args.budget:  # a regime where triage is slow: fewer pairs
                break
            wall, cpu = timed(grep_cmd, g_out)
            gt.append(wall)
            gc.append(cpu)
            wall, cpu = timed(triage_cmd, t_out)
            tt.append(wall)
            tc.append(cpu)
        _, peak, _, _ = run_sampled(triage_cmd, t_out)
    report = json.loads(t_out.read_text())
    found, missing = recall(report, truth)
    tri, gre = statistics.median(tt), statistics.median(gt)
    return {"profile": profile, "size": size_text, "mib": size / 2**20, "files": nfiles, "runs": len(tt),
            "triage_s": tri, "grep_s": gre, "ratio": tri / gre,
            "triage_cpu_s": statistics.median(tc), "grep_cpu_s": statistics.median(gc),
            "cpu_ratio": statistics.median(tc) / max(statistics.median(gc), 1e-9),
            "peak_rss_mb": peak[0] / 1e6, "peak_pss_mb": peak[1] / 1e6,
            "found": found, "injected": len(truth), "missing": missing,
            "findings": sorted({f["rule"] for f in report.get("findings", [])}),
            "loud": sorted({f["rule"] for f in report.get("findings", []) if f.get("severity") in ("error", "warning")}),
            "counts": {k: v for k, v in counts.items() if k not in ("profile", "generator")},
            "triage_runs_s": tt, "grep_runs_s": gt}


def compile_package() -> None:
    """Byte-compile the triage package, as `pip install` does for a regular install. An editable install run
    with PYTHONDONTWRITEBYTECODE=1 (set on this project's machines) would otherwise compile every module
    from source on every run, which is a cost of that setup, not of triage."""
    import compileall

    import triage

    compileall.compile_dir(str(Path(triage.__file__).parent), quiet=1)


HEADER = (f"{'profile':<12} {'size':>5} {'MiB':>5} {'files':>6} {'runs':>4} {'triage s':>8} {'grep s':>6} {'ratio':>6} "
          f"{'tri CPU s':>9} {'grep CPU s':>10} {'CPU ratio':>9} {'PSS MB':>6} {'RSS sum':>7} {'recall':>7}")


def format_row(r: dict) -> str:
    return (f"{r['profile']:<12} {r['size']:>5} {r['mib']:>5.0f} {r['files']:>6} {r['runs']:>4} {r['triage_s']:>8.2f} "
            f"{r['grep_s']:>6.2f} {r['ratio']:>6.2f} {r['triage_cpu_s']:>9.2f} {r['grep_cpu_s']:>10.2f} "
            f"{r['cpu_ratio']:>9.2f} {r['peak_pss_mb']:>6.0f} {r['peak_rss_mb']:>7.0f} "
            f"{r['found']:>3}/{r['injected']:<3}" + (f" missing: {', '.join(r['missing'])}" if r["missing"] else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", default=",".join(PROFILES),
                    help=f"comma-separated, of: {', '.join(PROFILES)} (default: all)")
    ap.add_argument("--sizes", default="100M,1G")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=float, default=300,
                    help="seconds of alternating runs per row after which no new pair starts (at least one pair)")
    ap.add_argument("--single", action="store_true",
                    help="one grep run, then one triage run that is both timed and sampled (for slow regimes)")
    ap.add_argument("--engines", type=int, default=4)
    ap.add_argument("--triage", default=str(Path(sys.executable).with_name("triage")))
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--ray", action="store_true", help="the ray profile only (same as --profiles ray)")
    ap.add_argument("--json", type=Path, help="also write the rows, with every run's seconds, to this file")
    args = ap.parse_args(argv)
    profiles = ["ray"] if args.ray else [p.strip() for p in args.profiles.split(",") if p.strip()]
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        ap.error(f"unknown profile {', '.join(unknown)} (known: {', '.join(PROFILES)})")
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    compile_package()
    print(HEADER, flush=True)
    rows = []
    for profile in profiles:
        mine = []
        for size in sizes:
            mine.append(bench(profile, size, args))
            print(format_row(mine[-1]), flush=True)
            if args.json:
                args.json.write_text(json.dumps(rows + mine, indent=1), encoding="utf-8")
        if len(mine) >= 2:
            print(f"{'':<12} memory {mine[-1]['size']} / {mine[0]['size']}: "
                  f"PSS {mine[-1]['peak_pss_mb'] / mine[0]['peak_pss_mb']:.2f}x, "
                  f"RSS sum {mine[-1]['peak_rss_mb'] / mine[0]['peak_rss_mb']:.2f}x; "
                  f"same findings: {'yes' if mine[-1]['findings'] == mine[0]['findings'] else 'no'}", flush=True)
        rows += mine
    return 0


if __name__ == "__main__":
    sys.exit(main())
