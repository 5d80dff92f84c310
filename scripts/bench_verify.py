"""Benchmark of ``ppverify verify``: time per op at four sizes, and the p=32, m=256, v=2
split-backward schedule (49,152 compute ops) fully verified.

The schedule is ZB-V (two chunks per device in the V placement, backward split into I and W)
from the registry; if that family is missing, interleaved 1F1B (v=2) with every B replaced by
I then W (REFERENCE.md §1); if that is missing too, the same order built here from REFERENCE §1.
"Fully verified" = structure, placement, dependencies, exclusivity, deadlock freedom (buffered,
derived SEND/RECV) and a memory cap; ``--rendezvous`` adds the blocking semantics' SEND/RECV
nodes (about 3.5x the actions). Benchmarks print figures; they never assert times.

Usage: ``python scripts/bench_verify.py [--rendezvous] [--grid]`` (``--grid`` also verifies every
registered family for p in 2..16, m in 1..64 and prints how many were VALID).
"""

from __future__ import annotations

import argparse
import time

from ppverify.errors import ParameterError
from ppverify.ops import B, F, I, Op, W
from ppverify.placement import loop
from ppverify.schedule import Schedule
from ppverify.schedules import build, families
from ppverify.verify import verify
from ppverify.verify.comm_model import insert_comms


def interleaved_split(p: int, m: int, v: int) -> Schedule:
    """Interleaved 1F1B (Megatron order, REFERENCE §1) with each B replaced by I then W."""
    names = {f.name for f in families()}
    if "interleaved-1f1b" in names:
        base = build("interleaved-1f1b", p=p, m=m, v=v)
        programs = tuple(tuple(x for op in prog for x in ((Op(I, op.stage, op.mb), Op(W, op.stage, op.mb))
                                                            if type(op) is Op and op.kind == B else (op,)))
                         for prog in base.programs)
        return base.with_programs(programs)
    # fallback: REFERENCE §1 order, k-th forward on a device runs chunk (k mod pv) div p,
    # microbatch (k div pv) p + k mod p; backwards mirror it with chunk v-1-c
    programs = []
    for d in range(p):
        def fwd(k):
            c = (k % (p * v)) // p
            return Op(F, c * p + d, (k // (p * v)) * p + k % p)

        def bwd(k):
            c = v - 1 - (k % (p * v)) // p
            mb = (k // (p * v)) * p + k % p
            return [Op(I, c * p + d, mb), Op(W, c * p + d, mb)]

        total = m * v
        warm = total if m == p else min((p - d - 1) * 2 + (v - 1) * p, total)
        prog = [fwd(k) for k in range(warm)]
        for k in range(total - warm):
            prog.append(fwd(warm + k))
            prog += bwd(k)
        for k in range(total - warm, total):
            prog += bwd(k)
        programs.append(tuple(prog))
    return Schedule(loop(p, v), m, tuple(programs), (0,) * m, "interleaved-split", {"p": p, "m": m, "v": v})


def big_schedule(p: int, m: int) -> Schedule:
    """The benchmark schedule: ZB-V if registered, else interleaved 1F1B v=2 split."""
    if "zbv" in {f.name for f in families()}:
        return build("zbv", p=p, m=m)
    return interleaved_split(p, m, 2)


def bench(s: Schedule, semantics: str) -> tuple[float, object]:
    t = time.perf_counter()
    r = verify(s, memory_cap=float(s.m), comm_semantics=semantics)
    return time.perf_counter() - t, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rendezvous", action="store_true", help="blocking semantics (SEND/RECV nodes)")
    ap.add_argument("--grid", action="store_true", help="also verify every family on p 2..16, m 1..64")
    args = ap.parse_args()
    sem = "rendezvous" if args.rendezvous else "buffered"
    print(f"ppverify verify benchmark ({sem} semantics, memory cap checked)")
    print(f"{'schedule':<28} {'ops':>7} {'actions':>8} {'verdict':>8} {'seconds':>8} {'us/op':>7}")
    for p, m in ((4, 16), (8, 32), (16, 64), (16, 128), (32, 256)):
        s = big_schedule(p, m)
        secs, r = bench(s, sem)
        ops = r.stats["ops"]
        print(f"{s.describe():<28} {ops:>7} {r.stats['actions']:>8} {'VALID' if r.valid else 'INVALID':>8} "
              f"{secs:>8.2f} {1e6 * secs / ops:>7.1f}")
    s = interleaved_split(32, 256, 2)
    secs, r = bench(s, sem)
    print(f"{'interleaved-1f1b v=2 split':<28} {r.stats['ops']:>7} {r.stats['actions']:>8} "
          f"{'VALID' if r.valid else 'INVALID':>8} {secs:>8.2f} {1e6 * secs / r.stats['ops']:>7.1f}")
    s = insert_comms(big_schedule(32, 256))
    secs, r = bench(s, sem)
    print(f"{'zbv + explicit SEND/RECV':<28} {r.stats['ops']:>7} {r.stats['actions']:>8} "
          f"{'VALID' if r.valid else 'INVALID':>8} {secs:>8.2f} {1e6 * secs / r.stats['ops']:>7.1f}")
    if args.grid:
        t = time.perf_counter()
        n = bad = 0
        for fam in families():
            for p in range(2, 17):
                for m in range(1, 65):
                    try:
                        s = build(fam.name, p=p, m=m)
                    except ParameterError:
                        continue
                    n += 1
                    if not verify(s).valid:
                        bad += 1
                        print(f"  NOT VALID: {s.describe()}")
        print(f"grid: {n} schedules inside their families' rules, {n - bad} VALID, {bad} not "
              f"({time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
