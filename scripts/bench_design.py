"""The goals of ``ppverify design`` (issue 25), measured: for each size and delay, the whole
frontier's CPU and wall time, the widest gap of a frontier point to its bound, the families faster
than the frontier at their own peak, the margin over V-Min and V-Half at their budgets and the
bubble at 1F1B's budget. Prints one block per run; asserts nothing about time.

    python scripts/bench_design.py                          # p = 4 and 8, m = 3p, delays 0 and 1
    python scripts/bench_design.py --p 4 --delays 0 --work-limit 5
    python scripts/bench_design.py --p 8 --placements linear,v,loop:2 --budgets 1,2,3,4,5,8,none
    python scripts/bench_design.py --p 4 --zb-row 0 --work-limit 5    # a profiled row's cost ratios
    python scripts/bench_design.py --p 8 --delays 1 --work-limit 5 --budgets auto --search-work 0   # no second search

The limits are ``ppverify design``'s: ``--work-limit`` CP-SAT's deterministic seconds per point
(the same result at any load), ``--time-limit`` a wall-clock ceiling on each run (alone it also
caps the work per point, as in ``design`` and ``optimize``).

Costs F = I = W = 1 per device share (Qi et al.'s counting, arXiv 2405.15362), or with
``--zb-row N`` the profiled F, I, W and transfer time of row N of ppverify/data/zb_settings.csv
(Qi et al., *Zero Bubble Pipeline Parallelism*, ICLR 2024, arXiv 2401.10241), in milliseconds,
at the ``--p``/``--m`` given (the row's own p and m by default); ``--delays`` is then ignored.
Zero bubble at 1F1B's budget is expected where Qi et al.'s condition holds (W + 2B >= 2F and
W + 2F >= 2B: at equal costs always); the bubble printed is 1 - m(F + I + W) / step.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time

from ppverify.design import DesignRequest, Limits, design, value_at
from ppverify.design.points import EPS
from ppverify.optimize.memory import zb_settings
from ppverify.optimize.solver_run import run_limits
from ppverify.systems.preset_models import PresetSettings


def cpu_s() -> float:
    """CPU seconds of this process and its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def zb_row(n: int) -> dict[str, int]:
    """Row ``n`` (0-based) of the zero-bubble paper's profiled settings."""
    return zb_settings()[n]


def one(p: int, delay: float, args: argparse.Namespace, costs: dict[str, float] | None = None) -> None:
    m = args.m or 3 * p
    c = costs or {"F": 1.0, "I": 1.0, "W": 1.0}
    text = ",".join(f"{k}={v:g}" for k, v in c.items())
    rq = DesignRequest(
        p,
        m,
        args.placements,
        args.budgets,
        PresetSettings(costs=text, comm_delay=delay),
        Limits(
            args.work,
            args.gap_limit,
            0,
            None if math.isinf(args.wall) else args.wall,
            search_work=args.search_work,
            pair_work=args.pair_work,
        ),
        skip=not args.all_points,
    )
    c0, t0 = cpu_s(), time.monotonic()
    d = design(rq, workers=args.workers, progress=args.progress)
    cpu, wall = cpu_s() - c0, time.monotonic() - t0
    gaps = [q.gap or 0.0 for q in d.front]
    searched = {s.label for s in d.setups}
    rows = d.family_rows()
    faster = [r for r in rows if r["difference"] is not None and r["difference"] > EPS]
    faster_searched = [r for r in faster if r["placement"] in searched]
    # families on placements this run does not search (bidirectional ones): named, not counted
    others = [r for r in faster if r["placement"] not in searched]
    others_text = ", ".join(f"{r['family']} on {r['placement']}" for r in others)
    print(
        f"p={p} m={m} costs {text} delay={delay:g} placements {args.placements} work {args.work:g}/point"
        f"{f' (+{args.search_work:g} again above the gap)' if args.search_work else ''}"
        f"{f', pair bound {args.pair_work:g}' if args.pair_work else ''}"
    )
    print(
        f"  points {d.done}/{d.total} ({d.cut} cut by the ceiling, {d.skipped} skipped), frontier {len(d.front)} points, cpu {cpu:.1f} s, wall {wall:.1f} s"
    )
    print(
        f"  widest frontier gap {100 * max(gaps, default=0):.3g} %; points within 1 %: "
        f"{sum(g <= 0.01 + 1e-12 for g in gaps)}/{len(gaps)}; Z3 valid {d.verified.count('valid')}/{len(d.front)}"
    )
    for q in d.front:
        print(
            f"    {q.placement} budget {q.budget:g}: peak {q.peak:g}, step {q.time:g}, bound {q.bound:g}, "
            f"gap {100 * (q.gap or 0.0):.3g} % ({q.status}, start {q.start}){' ' + q.note if q.note else ''}"
        )
    print(
        f"  families faster than the frontier at their peak: {len(faster_searched)} on searched placements "
        f"({', '.join(r['family'] for r in faster_searched) or 'none'}), {len(others)} on others"
        f"{' (' + others_text + ')' if others else ''}"
    )
    by = {r["family"]: r for r in rows}
    for fam in ("v-min", "v-half", "1f1b", "zb-h1", "zbv"):
        r = by.get(fam)
        if r is not None and r["frontier"] is not None:
            print(
                f"  at {fam}'s peak {r['peak']:g}: frontier {r['frontier']:g} vs {r['time']:g} (margin {0.0 - r['difference']:g})"
            )
    one_f = by.get("1f1b")
    if one_f is not None:
        at = value_at(d.front, one_f["peak"])
        if at is not None and at.time is not None:
            busy = m * (c["F"] + c["I"] + c["W"])
            print(
                f"  at 1F1B's budget {one_f['peak']:g}: step {at.time:g}, busy {busy:g}, bubble {1 - busy / at.time:.3%}"
                f" ({at.placement}, bound {at.bound:g})"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--p", type=int, nargs="+", default=None, help="devices (default 4 8; a --zb-row's own p)")
    ap.add_argument("--m", type=int, default=None, help="microbatches (default 3p)")
    ap.add_argument("--delays", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--placements", default="linear,v,loop:2")
    ap.add_argument("--budgets", default="auto")
    ap.add_argument("--work-limit", type=float, default=None, help="CP-SAT's deterministic work per point (default 10)")
    ap.add_argument("--time-limit", type=float, default=None, help="wall-clock ceiling of each run (default none)")
    ap.add_argument("--zb-row", type=int, default=None, help="costs of this zb_settings.csv row (0-based), in ms")
    ap.add_argument("--gap-limit", type=float, default=0.01)
    ap.add_argument(
        "--search-work",
        type=float,
        default=Limits.search_work,
        help="design --search-work: a frontier point above the gap, again (default as design's; 0: none)",
    )
    ap.add_argument(
        "--pair-work",
        type=float,
        default=Limits.pair_work,
        help="design --pair-work: the two-device bound above the gap (default as design's; 0: none)",
    )
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--all-points", action="store_true", help="search every point (design --all-points)")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()
    args.work, args.wall = run_limits(args.time_limit, args.work_limit, Limits.work, wall_factor=None)
    print(f"bench_design: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    if args.zb_row is not None:
        z = zb_row(args.zb_row)
        costs = {"F": z["f"] / 1000, "I": z["i"] / 1000, "W": z["w"] / 1000}
        print(f"zb_settings row {args.zb_row}: p={z['p']} m={z['m']} h={z['h']} (costs and transfer in ms)")
        if args.p is None:
            args.p, args.m = [z["p"]], args.m or z["m"]
        for p in args.p:
            one(p, z["c"] / 1000, args, costs)
        return
    for p in args.p or [4, 8]:
        for delay in args.delays:
            one(p, delay, args)


if __name__ == "__main__":
    main()
