"""How far ``ppverify verify --time-limit`` runs past (or stops before) its limit on a large
schedule: the median, over a few runs, of (time the command ran) - (limit), per limit.

The command is timed from its start (argument parsing, which the limit does not cover, excluded).
A negative figure means it stopped early: it gave up, the search to follow not fitting in the time
left, or it finished (``answered`` counts those runs).

    python scripts/bench_verify_time_limit.py            # 1F1B p=32 m=512 with a timing claim
    python scripts/bench_verify_time_limit.py --runs 5 --limits 1,2,4
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time

from ppverify.cli import build_parser
from ppverify.core.time_limit import TimeLimitError


def overshoot(argv: list[str], limit: float) -> tuple[float, bool]:
    """Seconds the command ran past ``limit`` (negative: it stopped before), and whether it answered."""
    args = build_parser().parse_args([*argv, "--time-limit", f"{limit:g}"])
    t = time.perf_counter()
    answered = True
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            args._run(args)
    except TimeLimitError:
        answered = False
    return time.perf_counter() - t - limit, answered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limits", default="0.5,1,1.5,2,3,4")
    ap.add_argument("--p", type=int, default=32)
    ap.add_argument("--m", type=int, default=512)
    a = ap.parse_args()
    argv = ["verify", "1f1b", "-p", str(a.p), "-m", str(a.m), "--makespan-le", "100000"]
    print(f"verify 1f1b -p {a.p} -m {a.m} --makespan-le 100000, {a.runs} runs per limit")
    print(f"{'limit s':>8} {'median overshoot s':>19} {'max s':>7} {'answered':>9}")
    for limit in (float(x) for x in a.limits.split(",")):
        res = [overshoot(argv, limit) for _ in range(a.runs)]
        xs = [x for x, _ in res]
        print(f"{limit:8g} {statistics.median(xs):19.3f} {max(xs):7.3f} {sum(ok for _, ok in res):9d}")


if __name__ == "__main__":
    main()
