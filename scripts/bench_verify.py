"""Benchmark of ``ppverify verify`` at 49,152 and 1,048,576 compute ops: Z3 alone ("z3", the
verifier before certificates) against checked certificates with Z3 as the fallback ("cert", the
default), each row in a fresh process so its peak memory is its own.

Rows: ZB-V p=32 m=256 and interleaved 1F1B v=2 with every B split into I then W (Megatron's
order, Narayanan et al. SC'21), p=32 m=256, both 49,152 ops; ZB-V with explicit SEND/RECV
(the generic order certificate); interleaved 1F1B p=64 v=4 m=2048 (1,048,576 ops, the simulate
benchmark's size) and ZB-V p=64 m=2731 (1,048,704 ops, split backward). "Fully verified" =
structure, placement, dependencies, exclusivity, deadlock freedom (buffered, derived SEND/RECV)
and a memory cap of m. Columns: verify's wall and CPU seconds (``resource.getrusage``, user +
system: the machine is shared, so CPU is the figure to compare), the worker's peak RSS
(``ru_maxrss``, including the schedule itself) and the 1-minute load average. Benchmarks print
figures; they never assert times. The grid of every family is ``scripts/verify_grid.py``.

Usage: ``python scripts/bench_verify.py [--rendezvous] [--z3-at-scale] [--limit-s 600]``
(``--z3-at-scale`` also runs Z3 alone on the million-op rows, each stopped after ``--limit-s``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from ppverify.core.ops import B, I, Op, W
from ppverify.core.schedule import Schedule
from ppverify.schedules import build

ROWS: dict[str, tuple[str, int]] = {  # name -> (description, compute ops)
    "zbv-32-256": ("zbv p=32 m=256", 49_152),
    "ils-32-256": ("interleaved v=2 split p=32 m=256", 49_152),
    "zbv-comms-32-256": ("zbv p=32 m=256 + SEND/RECV", 49_152),
    "i1f1b-64-2048": ("interleaved v=4 p=64 m=2048", 1_048_576),
    "zbv-64-2731": ("zbv p=64 m=2731", 1_048_704),
}
SMALL = ("zbv-32-256", "ils-32-256", "zbv-comms-32-256")
LARGE = ("i1f1b-64-2048", "zbv-64-2731")


def interleaved_split(p: int, m: int, v: int) -> Schedule:
    """Interleaved 1F1B (Megatron's order) with each B replaced by I then W."""
    base = build("interleaved-1f1b", p=p, m=m, v=v)
    programs = tuple(
        tuple(
            x
            for op in prog
            for x in ((Op(I, op.stage, op.mb), Op(W, op.stage, op.mb)) if type(op) is Op and op.kind == B else (op,))
        )
        for prog in base.programs
    )
    return base.with_programs(programs)


def schedule_of(row: str) -> Schedule:
    """The benchmark schedule of a row."""
    if row == "zbv-32-256":
        return build("zbv", p=32, m=256)
    if row == "ils-32-256":
        return interleaved_split(32, 256, 2)
    if row == "zbv-comms-32-256":
        from ppverify.verify.comm_model import insert_comms

        return insert_comms(build("zbv", p=32, m=256))
    if row == "i1f1b-64-2048":
        return build("interleaved-1f1b", p=64, m=2048, v=4)
    if row == "zbv-64-2731":
        return build("zbv", p=64, m=2731)
    raise KeyError(row)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker(row: str, path: str, semantics: str) -> None:
    """One measurement, printed as JSON (run in its own process)."""
    from ppverify.verify import verify

    s = schedule_of(row)
    rss_built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t, c = time.perf_counter(), _cpu()
    r = verify(s, memory_cap=float(s.m), comm_semantics=semantics, certificates=path == "cert")
    wall, cpu = time.perf_counter() - t, _cpu() - c
    print(
        json.dumps(
            {
                "ops": r.stats["ops"],
                "actions": r.stats["actions"],
                "valid": r.valid,
                "wall_s": wall,
                "cpu_s": cpu,
                "rss_built": rss_built,
                "rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "parts": {k: v for k, v in r.stats.items() if k.endswith("_s")},
            }
        )
    )


def measure(row: str, path: str, semantics: str, limit_s: float) -> dict | None:
    cmd = [sys.executable, __file__, "--worker", row, "--path", path, "--semantics", semantics]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit_s, check=True).stdout
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as e:  # e.g. killed for memory
        return {"error": (e.stderr or "").strip().splitlines()[-1:] or [f"exit {e.returncode}"]}
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rendezvous", action="store_true", help="blocking semantics (SEND/RECV nodes)")
    ap.add_argument("--z3-at-scale", action="store_true", help="also Z3 alone on the million-op rows")
    ap.add_argument("--limit-s", type=float, default=600.0, help="stop a row after this many seconds")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--path", default="cert", help=argparse.SUPPRESS)
    ap.add_argument("--semantics", default="buffered", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.path, args.semantics)
        return
    sem = "rendezvous" if args.rendezvous else "buffered"
    print(
        f"ppverify verify benchmark ({sem} semantics, memory cap m checked); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'schedule':<36} {'ops':>9} {'path':>4} {'verdict':>7} {'wall s':>7} {'CPU s':>7} {'us/op':>6} "
        f"{'peak RSS':>9} {'load':>5}"
    )
    plan = [(r, p) for r in SMALL for p in ("z3", "cert")] + [(r, "cert") for r in LARGE]
    if args.z3_at_scale:
        plan += [(r, "z3") for r in LARGE]
    for row, path in plan:
        name, ops = ROWS[row]
        res = measure(row, path, sem, args.limit_s)
        load = os.getloadavg()[0]
        if res is None or "error" in res:
            why = f"stopped after {args.limit_s:.0f} s" if res is None else f"failed: {' '.join(res['error'])}"
            print(f"{name:<36} {ops:>9} {path:>4} {why}  (load {load:.1f})")
            continue
        print(
            f"{name:<36} {res['ops']:>9} {path:>4} {'VALID' if res['valid'] else 'INVALID':>7} "
            f"{res['wall_s']:>7.2f} {res['cpu_s']:>7.2f} {1e6 * res['cpu_s'] / res['ops']:>6.2f} "
            f"{res['rss_peak'] / 2**30:>7.2f}Gi {load:>5.1f}"
        )
    print("(goals: 49,152 ops in <= 3 s CPU; 1,048,576 ops in < 60 s and < 8 GB; us/op is CPU)")


if __name__ == "__main__":
    main()
