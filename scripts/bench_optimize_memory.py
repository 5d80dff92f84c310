"""Peak memory of ``ppverify optimize`` against the op count, and against the estimate that
``--max-memory-gib`` refuses by (``ppverify.optimize.footprint``).

Each run is a fresh process (the peak of one run is not hidden by an earlier one); its resident
set is sampled every 50 ms and read from ``ru_maxrss`` at the end. Prints one line per run: ops,
peak MiB, bytes per op above the interpreter's start, the estimate and the run's status.

    python scripts/bench_optimize_memory.py                 # 24k to 196k ops, with and without a cap
    python scripts/bench_optimize_memory.py --time-limit 80 --m 2048 --cap
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import contextlib, io, json, resource, sys, threading, time
import psutil
from ppverify.cli import main
from ppverify.cli.commands.optimize import build_namespace, problem_from_args
from ppverify.core.limits import memory_limit
from ppverify.optimize.footprint import estimate_bytes

me = psutil.Process()
base = me.memory_info().rss
peak = [base]

def sample():
    while True:
        peak[0] = max(peak[0], me.memory_info().rss)
        time.sleep(0.05)

threading.Thread(target=sample, daemon=True).start()
argv = sys.argv[1:]
with memory_limit(1000.0):
    estimate = estimate_bytes(problem_from_args(build_namespace(argv[1:]))[0])
out = io.StringIO()
t0 = time.monotonic()
with contextlib.redirect_stdout(out):
    code = main(["--max-memory-gib", "1000", *argv, "--no-chart", "--json"])
wall = time.monotonic() - t0
res = json.loads(out.getvalue()) if out.getvalue().strip() else {}
maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(dict(code=code, wall_s=wall, base=base, peak=max(peak[0], maxrss), estimate=estimate,
                      status=res.get("status"), reason=res.get("reason"))))
"""


def run_one(argv: list[str]) -> dict:
    """One optimize run in a fresh interpreter: its peak resident set and the estimate."""
    out = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=False)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--p", type=int, default=32)
    ap.add_argument("--m", type=int, nargs="*", default=[256, 1024, 2048])
    ap.add_argument("--cap", action="store_true", help="only with --memory-cap 8 (default: both)")
    ap.add_argument("--time-limit", type=float, default=40.0)
    args = ap.parse_args()
    caps = [True] if args.cap else [False, True]
    print(f"{'ops':>9} {'cap':>4} {'peak MiB':>9} {'B/op':>7} {'estimate MiB':>13} {'wall s':>7}  status")
    for cap in caps:
        for m in args.m:
            argv = ["optimize", "1f1b", "-p", str(args.p), "-m", str(m), "--costs", "F=1,I=1,W=1"]
            argv += ["--memory-cap", "8"] if cap else []
            argv += ["--time-limit", str(args.time_limit)]
            r = run_one(argv)
            ops = 3 * args.p * m
            print(
                f"{ops:>9} {'yes' if cap else 'no':>4} {r['peak'] / 2**20:>9.0f} {(r['peak'] - r['base']) / ops:>7.0f} "
                f"{r['estimate'] / 2**20:>13.0f} {r['wall_s']:>7.1f}  {r['status']} {r['reason'] or ''}",
                flush=True,
            )


if __name__ == "__main__":
    main()
