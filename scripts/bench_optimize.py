"""Benchmark of ``ppverify optimize``: every CP-SAT row of the performance table, one line per row
with status, value, bound, gap, CPU seconds, deterministic seconds and the starting schedule.

Rows (costs F = I = W = 1 unless profiled; zero-bubble memory model h=2304, a=24, s=1024):

* ``unit``   linear placement, cap p*M_F, c in {0, 1}, (p, m) in (8,32) (16,32) (16,64) (32,64):
             goal OPTIMAL in < 30 s CPU;
* ``loop``   loop placement v=2, cap 2p*M_F, c=1, (8,32) (16,32): goal gap <= 1 % in 60 s;
* ``scale``  linear, c=1, cap p*M_F, (32,128) (64,256): goal gap <= 1 % in 120 s;
* ``free``   the same without a memory cap, to compare: goal, the capped rows within 2x its time;
* ``zb``     the zero-bubble paper's profiled settings (ppverify/data/zb_settings.csv), cap 2p*M_F,
             span objective: goal gap <= 0.1 % in 120 s, never above the paper's heuristic span.

A ``gap<=X%`` row stops as soon as its schedule is within X % of the proven bound (``optimize
--gap-limit``; ``--no-gap-limit`` searches to the budget instead). Each row runs with one worker
and a budget of CP-SAT *deterministic* time (``--det-per-s`` of a
row's seconds, default 0.4: CP-SAT's deterministic second is about 2.5 CPU seconds on the
reference machine), so results do not depend on the load of a shared machine; the wall-clock limit
is a safety only (``--wall-factor`` times the row's seconds). Benchmarks print, they never assert.

    python scripts/bench_optimize.py              # every row
    python scripts/bench_optimize.py --quick      # a short subset (a few CPU minutes)
    python scripts/bench_optimize.py --only unit loop
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear, loop
from ppverify.optimize import Problem, optimize, zb_settings, zero_bubble

SETS = ("unit", "loop", "scale", "free", "zb")


@dataclass(frozen=True)
class Row:
    """One benchmark row: which problem, its budget in seconds and its goal."""

    set: str
    p: int
    m: int
    c: float
    cap: int | None  # multiple of p*M_F, None = no cap
    seconds: float
    goal: str
    placement: str = "linear"
    objective: str = "makespan"
    zb_row: int = -1
    ref: int | None = None


def rows(quick: bool = False) -> list[Row]:
    """Every row of the table (``quick``: a subset that runs in a few CPU minutes)."""
    out = [
        Row("unit", p, m, c, 1, 30.0, "OPTIMAL <30s")
        for p, m in ((8, 32), (16, 32), (16, 64), (32, 64))
        for c in (0.0, 1.0)
    ]
    out += [Row("loop", p, m, 1.0, 2, 60.0, "gap<=1% 60s", placement="loop") for p, m in ((8, 32), (16, 32))]
    out += [Row("scale", p, m, 1.0, 1, 120.0, "gap<=1% 120s") for p, m in ((32, 128), (64, 256))]
    out += [Row("free", p, m, 1.0, None, 120.0, "reference") for p, m in ((32, 128), (64, 256))]
    for n, r in enumerate(zb_settings()):
        out.append(
            Row(
                "zb",
                r["p"],
                r["m"],
                float(r["c"]),
                2,
                120.0,
                "gap<=0.1% 120s",
                objective="span",
                zb_row=n,
                ref=r["zb2p_span"],
            )
        )
    if quick:
        keep = {("unit", 8, 32, 0.0), ("unit", 8, 32, 1.0), ("loop", 8, 32, 1.0), ("zb", 8, 24, 601.0)}
        out = [
            Row(r.set, r.p, r.m, r.c, r.cap, min(r.seconds, 20.0), r.goal, r.placement, r.objective, r.zb_row, r.ref)
            for r in out
            if (r.set, r.p, r.m, r.c) in keep
        ]
    return out


def problem(row: Row) -> Problem:
    """The optimization problem of a row."""
    pl = linear(row.p) if row.placement == "linear" else loop(row.p, 2)
    if row.set == "zb":
        z = zb_settings()[row.zb_row]
        costs = zero_bubble(z["h"], z["a"], 1024).apply(CostModel.abstract(pl, F=z["f"], I=z["i"], W=z["w"]))
    else:
        costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    cap = None if row.cap is None else row.cap * row.p
    return Problem(pl, row.m, costs, FixedDelay(row.c), split=True, memory_cap=cap, objective=row.objective)


def goal_gap(goal: str) -> float | None:
    """The relative gap a row's goal asks for (``gap<=1% 60s``: 0.01), None for other goals.

    Example:
        >>> goal_gap("gap<=0.1% 120s"), goal_gap("OPTIMAL <30s")
        (0.001, None)
    """
    if not goal.startswith("gap<="):
        return None
    return float(goal[len("gap<=") :].split("%", 1)[0]) / 100


def run_row(
    row: Row,
    workers: int = 1,
    seed: int = 0,
    det_per_s: float = 0.4,
    wall_factor: float = 6.0,
    seconds: float | None = None,
    use_gap_limit: bool = True,
) -> dict:
    """Solve one row (stopping within the gap its goal states, unless ``use_gap_limit`` is off);
    returns status, value, bound, gap, CPU and wall seconds, deterministic time."""
    budget = row.seconds if seconds is None else seconds
    t, c = time.monotonic(), time.process_time()
    res = optimize(
        problem(row),
        time_limit=budget * wall_factor,
        workers=workers,
        seed=seed,
        work_limit=budget * det_per_s,
        gap_limit=goal_gap(row.goal) if use_gap_limit else None,
    )
    return {
        "row": row,
        "status": res.status,
        "value": res.objective,
        "bound": res.bound,
        "gap": res.gap,
        "cpu": time.process_time() - c,
        "wall": time.monotonic() - t,
        "hint": res.hint,
        "hint_value": res.hint_objective,
        "det": res.solver.get("deterministic_s"),
    }


HEADER = (
    "set",
    "plc",
    "p",
    "m",
    "c",
    "cap",
    "obj",
    "goal",
    "status",
    "value",
    "bound",
    "gap",
    "cpu_s",
    "wall_s",
    "vs ref",
    "start",
)
WIDTHS = (5, 6, 3, 4, 5, 4, 8, 14, 8, 11, 11, 8, 7, 7, 8, 0)


def line(cols) -> str:
    return " ".join(str(c).rjust(w) if w else str(c) for c, w in zip(cols, WIDTHS))


def format_result(r: dict) -> str:
    """One printed line of a result."""
    row = r["row"]
    vs = ""
    if row.ref is not None and r["value"] is not None:
        vs = "<= ref" if r["value"] <= row.ref else f"+{100 * (r['value'] / row.ref - 1):.2f}%"
    return line(
        [
            row.set,
            row.placement,
            row.p,
            row.m,
            f"{row.c:g}",
            "-" if row.cap is None else f"{row.cap}p",
            row.objective,
            row.goal,
            r["status"],
            "-" if r["value"] is None else f"{r['value']:.10g}",
            f"{r['bound']:.10g}",
            "-" if r["gap"] is None else f"{100 * r['gap']:.3f}%",
            f"{r['cpu']:.1f}",
            f"{r['wall']:.1f}",
            vs or "-",
            f"{r['hint']} ({r['hint_value']:.10g})" if r["hint"] else "-",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=SETS, default=None)
    ap.add_argument("--quick", action="store_true", help="a subset with budgets cut to 20 s")
    ap.add_argument("--rows", type=int, nargs="*", default=None, help="zb_settings rows (0-based) to run")
    ap.add_argument("--time-limit-unit", type=float, default=None, help="override the unit rows' seconds")
    ap.add_argument("--seconds", type=float, default=None, help="override every row's seconds")
    ap.add_argument("--det-per-s", type=float, default=0.4, help="deterministic seconds per budget second")
    ap.add_argument("--wall-factor", type=float, default=6.0, help="wall-clock safety limit, times the budget")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-gap-limit",
        action="store_true",
        help="search every row to its budget (default: a gap<=X%% row stops once within X%%, optimize --gap-limit)",
    )
    args = ap.parse_args(argv)
    print(
        f"# ppverify optimize benchmark: {args.workers} worker(s), seed {args.seed}, budget = "
        f"{args.det_per_s} deterministic s per second, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    print(line(HEADER), flush=True)
    for row in rows(args.quick):
        if args.only is not None and row.set not in args.only:
            continue
        if row.set == "zb" and args.rows is not None and row.zb_row not in args.rows:
            continue
        secs = args.seconds
        if secs is None and row.set == "unit" and args.time_limit_unit is not None:
            secs = args.time_limit_unit
        r = run_row(row, args.workers, args.seed, args.det_per_s, args.wall_factor, secs, not args.no_gap_limit)
        print(format_result(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
