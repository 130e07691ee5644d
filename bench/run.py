"""Time triage against `grep -E -c` over the same generated run directory, side by side.

    python -m bench.run [--sizes 100M,1G] [--runs 5] [--triage .venv/bin/triage] [--out bench/out] [--ray]

For each size: generate the run dir once (cached under --out), then alternate triage and grep
runs (grep's output goes to a file: GNU grep stops at the first match when writing to /dev/null),
take the median wall time of each, and print their ratio. One more triage run, untimed, samples
the memory of triage and every process it starts (PSS and RSS, summed, every 5 ms) for the peak, and
its JSON report is checked against the injected failures (recall).
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

from .gen import DEFAULT_CORPUS, Injected, generate, merge_ray, parse_size

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


def run_sampled(cmd: list[str], stdout: Path) -> tuple[float, tuple[int, int], int]:
    """(seconds, (peak tree RSS, peak tree PSS) in bytes, exit code)."""
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
        rc = proc.wait()
        seconds = time.perf_counter() - t0
        done.set()
        th.join()
    return seconds, peak, rc


def timed(cmd: list[str], stdout: Path) -> float:
    with open(stdout, "wb") as out:
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=out, stderr=subprocess.DEVNULL, check=False)
        return time.perf_counter() - t0


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


def run_dir(out: Path, size_text: str, engines: int, corpus: Path, ray: bool = False) -> tuple[Path, list[dict]]:
    d = out / f"run-{size_text}-{engines}e"
    truth_path = d.with_name(d.name + ".truth.json")
    if not truth_path.is_file():
        if d.exists():
            shutil.rmtree(d)
        generate(d, parse_size(size_text), engines, corpus=corpus, progress=_progress(parse_size(size_text)))
    if ray:  # the same run as one Ray driver log
        r = d.with_name(d.name + "-ray")
        ray_truth = r.with_name(r.name + ".truth.json")
        if not ray_truth.is_file():
            if r.exists():
                shutil.rmtree(r)
            merge_ray(d, [Injected(**t) for t in json.loads(truth_path.read_text())], r)
        d, truth_path = r, ray_truth
    return d, json.loads(truth_path.read_text())


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


def bench(size_text: str, args: argparse.Namespace) -> dict:
    d, truth = run_dir(args.out, size_text, args.engines, args.corpus, args.ray)
    files = sorted(str(p) for p in d.iterdir())
    size = sum(os.path.getsize(f) for f in files)
    triage_cmd = args.triage.split() + [str(d), "--format", "json", "--fail-on", "never"]
    grep_cmd = ["grep", "-E", "-c", GREP_ALTERNATION, *files]
    t_out, g_out = args.out / f"triage-{os.getpid()}.json", args.out / f"grep-{os.getpid()}.txt"
    timed(triage_cmd, t_out)  # warm the page cache and any lazy state once
    tt, gt = [], []
    for _ in range(args.runs):
        gt.append(timed(grep_cmd, g_out))
        tt.append(timed(triage_cmd, t_out))
    _, peak, _ = run_sampled(triage_cmd, t_out)
    report = json.loads(t_out.read_text())
    found, missing = recall(report, truth)
    tri, gre = statistics.median(tt), statistics.median(gt)
    return {"size": size_text, "mib": size / 2**20, "triage_s": tri, "grep_s": gre, "ratio": tri / gre,
            "peak_rss_mb": peak[0] / 1e6, "peak_pss_mb": peak[1] / 1e6,
            "found": found, "injected": len(truth), "missing": missing,
            "findings": sorted({f["rule"] for f in report.get("findings", [])})}


def compile_package() -> None:
    """Byte-compile the triage package, as `pip install` does for a regular install. An editable install run
    with PYTHONDONTWRITEBYTECODE=1 (set on this project's machines) would otherwise compile every module
    from source on every run, which is a cost of that setup, not of triage."""
    import compileall

    import triage

    compileall.compile_dir(str(Path(triage.__file__).parent), quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100M,1G")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--engines", type=int, default=4)
    ap.add_argument("--triage", default=str(Path(sys.executable).with_name("triage")))
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--ray", action="store_true", help="the same runs as one Ray driver log each")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    compile_package()
    rows = [bench(s.strip(), args) for s in args.sizes.split(",") if s.strip()]
    print(f"{'size':>6} {'MiB':>6} {'triage s':>9} {'grep s':>7} {'ratio':>6} {'peak PSS MB':>11} "
          f"{'(RSS sum)':>9} {'recall':>7}")
    for r in rows:
        print(f"{r['size']:>6} {r['mib']:>6.0f} {r['triage_s']:>9.2f} {r['grep_s']:>7.2f} {r['ratio']:>6.2f} "
              f"{r['peak_pss_mb']:>11.0f} {r['peak_rss_mb']:>9.0f} {r['found']:>3}/{r['injected']:<3}"
              + (f" missing: {', '.join(r['missing'])}" if r["missing"] else ""))
    if len(rows) >= 2:
        print(f"memory {rows[-1]['size']} / {rows[0]['size']}: PSS {rows[-1]['peak_pss_mb'] / rows[0]['peak_pss_mb']:.2f}x, "
              f"RSS sum {rows[-1]['peak_rss_mb'] / rows[0]['peak_rss_mb']:.2f}x; "
              f"same findings: {'yes' if rows[-1]['findings'] == rows[0]['findings'] else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
