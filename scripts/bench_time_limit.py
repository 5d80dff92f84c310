"""How well ``optimize --time-limit`` is honoured at large sizes: for each command, the median
wall time of the whole process (interpreter start-up included) and of the run itself (the
``wall time`` line), and their ratio to the limit (at most 1.1 for the run)::

    python scripts/bench_time_limit.py            # 3 runs each
    python scripts/bench_time_limit.py --repeat 1
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ["1f1b", "-p", "32", "-m", "512", "--time-limit", "2"],
    ["1f1b", "-p", "64", "-m", "1024", "--time-limit", "2"],
    ["1f1b", "-p", "32", "-m", "512", "--costs", "F=1,I=1,W=1", "--memory-cap", "8", "--time-limit", "2"],
    ["1f1b", "-p", "64", "-m", "1024", "--costs", "F=1,I=1,W=1", "--memory-cap", "8", "--time-limit", "1"],
    # 786,432 and 1,572,864 ops: the model cannot be built in time (status UNKNOWN, exit code 2);
    # a larger memory budget, else --max-memory-gib refuses them before the clock is tried
    ["1f1b", "-p", "64", "-m", "4096", "--costs", "F=1,I=1,W=1", "--time-limit", "2", "--max-memory-gib", "16"],
    ["1f1b", "-p", "64", "-m", "8192", "--costs", "F=1,I=1,W=1", "--time-limit", "1", "--max-memory-gib", "16"],
]


def one(argv: list[str]) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "ppverify", "optimize", *argv, "--no-chart"], capture_output=True, text=True
    ).stdout
    total = time.perf_counter() - t0
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()}
    run = float(lines["wall"].split()[2])
    return total, run, lines["status"].split(None, 1)[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for argv in COMMANDS:
        limit = float(argv[argv.index("--time-limit") + 1])
        rows = [one(argv) for _ in range(args.repeat)]
        total = statistics.median(r[0] for r in rows)
        run = statistics.median(r[1] for r in rows)
        print(
            f"{' '.join(argv):<75} process {total:5.2f} s  run {run:4.1f} s  run/limit {run / limit:4.2f}  "
            f"{rows[-1][2]}"
        )


if __name__ == "__main__":
    main()
