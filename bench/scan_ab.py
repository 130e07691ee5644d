"""A/B of two builds of the C prefilter on the chunks of a real run, in one process.

    TRIAGE_JOBS=1 python -m bench.scan_ab RUN_DIR A.so B.so [--repeat 7] [--every 10]

On a shared machine the CPU time of whole runs moves by 5 % or more from one run to the next, more than most changes
to _linescan.c save. This runs triage on RUN_DIR (one process: set TRIAGE_JOBS=1, or the files a worker scans are
not seen) and, for every `--every`-th call of `_linescan.scan`, calls the `scan` of build A and of build B on the
same arguments `--repeat` times each, alternately, keeping each build's least CPU time; it prints the sums and B/A.
The calls share the run's matcher and registered shapes (the capsules of the build triage loaded): two builds of
the same structs, as two commits of _linescan.c that change only functions are. The results of A and B must agree
(line count, flags, quiet count, next sample, number of hits), or it stops.
Copy a build aside after `python setup.py build_ext --inplace` (triage/scan/_linescan*.so) to compare it later.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.machinery
import importlib.util
import io
import sys
import time
from types import ModuleType
from typing import Any


def load(path: str) -> ModuleType:
    """A build of _linescan from its file, as a module of its own (not the one triage imports)."""
    loader = importlib.machinery.ExtensionFileLoader("triage.scan._linescan", path)
    spec = importlib.util.spec_from_file_location("triage.scan._linescan", path, loader=loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--every", type=int, default=10)
    args = ap.parse_args(argv)
    from triage.cli import main as triage_main
    from triage.scan import prefiltered

    ls = prefiltered._linescan
    if ls is None:
        print("triage._linescan is not built", file=sys.stderr)
        return 2
    a, b = load(args.a), load(args.b)
    scan = ls.scan
    calls, best_a, best_b = [0], [0.0], [0.0]

    def timed(*call: Any) -> Any:
        got = scan(*call)
        calls[0] += 1
        if calls[0] % args.every == 0:
            ta, tb = [], []
            for _ in range(args.repeat):
                t = time.process_time()
                ra = a.scan(*call)
                ta.append(time.process_time() - t)
                t = time.process_time()
                rb = b.scan(*call)
                tb.append(time.process_time() - t)
                if ra[:4] != rb[:4] or len(ra[4]) != len(rb[4]):
                    raise SystemExit(f"the builds disagree on call {calls[0]}")
            best_a[0] += min(ta)
            best_b[0] += min(tb)
        return got

    ls.scan = timed
    gc.disable()
    argv0, sys.argv = sys.argv, ["triage", "--follow-links", args.run_dir]
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the report is not what this prints
            triage_main()
    except SystemExit:
        pass
    finally:
        ls.scan, sys.argv = scan, argv0
    if not best_a[0]:
        print("no call timed (fewer than --every calls in this process: TRIAGE_JOBS=1?)", file=sys.stderr)
        return 1
    print(f"{calls[0] // args.every} calls timed: A {best_a[0] * 1e3:.1f} ms, B {best_b[0] * 1e3:.1f} ms, "
          f"B/A {best_b[0] / best_a[0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
