"""Benchmark of ``ppverify optimize`` on the issue-5 targets; prints time and gap per point.

1. Unit costs F = I = W = 1, delay c in {0, 1}, cap p*M_F under the zero-bubble memory model
   (h=2304, a=24, s=1024): target "proven optimal in under 60 s" for (p, m) in
   {(8,32), (16,32), (16,64), (32,64)}.
2. The zero-bubble paper's profiled settings (ppverify/data/zb_settings.csv) at caps p*M_F and
   2p*M_F, objective = the paper's longest per-stage span: target "gap <= 1% for p=8 rows
   within 600 s, <= 3% for p=16 and 32, matching or beating the reference spans".

Benchmarks print, they never assert (times depend on the machine and its load).

    python scripts/bench_optimize.py                 # everything, issue time limits, 2 workers
    python scripts/bench_optimize.py --only unit --objective makespan span
    python scripts/bench_optimize.py --only zb --time-limit-zb 120 --rows 0 1
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from importlib import resources

from ppverify.comm import FixedDelay
from ppverify.costs import CostModel
from ppverify.optimize import Problem, optimize, zero_bubble
from ppverify.placement import linear

UNIT_POINTS = [(8, 32), (16, 32), (16, 64), (32, 64)]


def zb_rows() -> list[dict[str, int]]:
    """The rows of ppverify/data/zb_settings.csv (comment lines skipped)."""
    text = resources.files("ppverify").joinpath("data/zb_settings.csv").read_text()
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return [{k: int(v) for k, v in row.items()} for row in csv.DictReader(lines)]


def line(cols: list[str]) -> str:
    widths = [6, 4, 4, 7, 5, 9, 10, 12, 12, 8, 7, 12, 30]
    return " ".join(str(c).rjust(w) for c, w in zip(cols, widths))


def run_point(pr: Problem, limit: float, workers: int, seed: int, ref: int | None, label: str, p: int, m: int,
              c: float, capx: int, plain: bool = False) -> dict:
    t = time.monotonic()
    extra = dict(symmetry=False, redundant_bounds=False, hints=False, relax_share=0.0) if plain else {}
    res = optimize(pr, time_limit=limit, workers=workers, seed=seed, **extra)
    wall = time.monotonic() - t
    gap = res.gap
    beats = "" if ref is None or res.objective is None else ("<= ref" if res.objective <= ref else f"+{100 * (res.objective / ref - 1):.2f}%")
    print(line([label, p, m, f"{c:g}", f"{capx}p", pr.objective, res.status,
                f"{res.objective:.10g}" if res.objective is not None else "-", f"{res.bound:.10g}",
                "-" if gap is None else f"{100 * gap:.3f}%", f"{wall:.1f}", beats, res.hint or "-"]), flush=True)
    return {"status": res.status, "gap": gap, "wall": wall}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("unit", "zb"), default=None)
    ap.add_argument("--objective", nargs="+", choices=("makespan", "span"), default=["makespan"],
                    help="objectives of the unit points (default makespan); zb rows always use span")
    ap.add_argument("--time-limit-unit", type=float, default=60.0)
    ap.add_argument("--time-limit-zb", type=float, default=600.0)
    ap.add_argument("--rows", type=int, nargs="*", default=None, help="zb_settings rows (0-based) to run")
    ap.add_argument("--caps", type=int, nargs="*", default=[1, 2], help="caps as multiples of p*M_F (zb rows)")
    ap.add_argument("--plain", action="store_true",
                    help="also run plain CP-SAT (no bounds, no symmetry breaking, no hints) on the first zb row at "
                         "cap p for --time-limit-plain seconds, to show what model strength brings")
    ap.add_argument("--time-limit-plain", type=float, default=120.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"# ppverify optimize benchmark, {args.workers} workers, seed {args.seed}")
    print(line(["set", "p", "m", "c", "cap", "objective", "status", "value", "bound", "gap", "time_s", "vs ref", "start"]))
    if args.only in (None, "unit"):
        mm = zero_bubble(2304, 24, 1024)
        for objective in args.objective:
            for p, m in UNIT_POINTS:
                for c in (0.0, 1.0):
                    pl = linear(p)
                    pr = Problem(pl, m, mm.apply(CostModel.abstract(pl, F=1, I=1, W=1)), FixedDelay(c), split=True,
                                 memory_cap=p, objective=objective)
                    run_point(pr, args.time_limit_unit, args.workers, args.seed, None, "unit", p, m, c, 1)
    if args.only in (None, "zb"):
        for n, row in enumerate(zb_rows()):
            if args.rows is not None and n not in args.rows:
                continue
            p, m = row["p"], row["m"]
            pl = linear(p)
            costs = zero_bubble(row["h"], row["a"], 1024).apply(
                CostModel.abstract(pl, F=row["f"], I=row["i"], W=row["w"]))
            for capx in args.caps:
                ref = row["zb1p_span"] if capx == 1 else row["zb2p_span"]
                pr = Problem(pl, m, costs, FixedDelay(row["c"]), split=True, memory_cap=capx * p, objective="span")
                run_point(pr, args.time_limit_zb, args.workers, args.seed, ref, f"zb#{n}", p, m, row["c"], capx)
    if args.plain:
        row = zb_rows()[0]
        p, m = row["p"], row["m"]
        pl = linear(p)
        costs = zero_bubble(row["h"], row["a"], 1024).apply(CostModel.abstract(pl, F=row["f"], I=row["i"], W=row["w"]))
        pr = Problem(pl, m, costs, FixedDelay(row["c"]), split=True, memory_cap=p, objective="span")
        run_point(pr, args.time_limit_plain, args.workers, args.seed, row["zb1p_span"], "plain0", p, m, row["c"], 1,
                  plain=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
