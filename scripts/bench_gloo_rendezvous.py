"""gloo's point-to-point protocol, measured: what a late and an early receiver pay.

Two gloo worker processes (ppverify.measure.workers). Per round, twice:

* late receiver: rank 0 posts an ``isend`` at once, rank 1 posts its ``irecv`` ``--gap`` later
  and waits on it; printed: RECV post to data in (rank 1), and how long rank 0's ``isend`` took to
  complete (about ``--gap`` if the send waits for the receiver: a rendezvous);
* early receiver: rank 1 posts its ``irecv`` at once, rank 0 sends ``--gap`` later; printed: SEND
  post to data in.

Benchmarks print, they never assert (the machine and its load set the figures).

    python scripts/bench_gloo_rendezvous.py               # 40 rounds, 20 ms apart (about 3 s)
    python scripts/bench_gloo_rendezvous.py --nice -15    # the workers at a higher priority
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any


def _target(rank: int, world: int, payload: tuple[int, float, int]) -> dict[str, list[int]]:
    import os

    import torch
    import torch.distributed as dist

    rounds, gap, nice = payload
    if nice:
        for tid in os.listdir("/proc/self/task"):  # every thread of the worker, gloo's included
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
    t = torch.zeros(64)
    out: dict[str, list[int]] = {"late": [], "early": [], "sendwait": []}
    for _ in range(rounds):
        dist.barrier()
        if rank == 0:
            w = dist.isend(t, 1)
            t0 = time.monotonic_ns()
            w.wait()
            out["sendwait"].append(time.monotonic_ns() - t0)
        else:
            time.sleep(gap)
            t0 = time.monotonic_ns()
            dist.irecv(t, 0).wait()
            out["late"].append(time.monotonic_ns() - t0)
        dist.barrier()
        if rank == 0:
            time.sleep(gap)
            ts = time.monotonic_ns()
            dist.isend(t, 1).wait()
            dist.send(torch.tensor([ts], dtype=torch.int64), 1)
        else:
            dist.irecv(t, 0).wait()
            te = time.monotonic_ns()
            box = torch.zeros(1, dtype=torch.int64)
            dist.recv(box, 0)
            out["early"].append(te - int(box[0]))
    return out


def _line(values: list[int]) -> str:
    q = statistics.quantiles(values, n=4)
    return f"median {statistics.median(values) / 1e3:7.0f} us  p25 {q[0] / 1e3:6.0f}  p75 {q[2] / 1e3:6.0f}  mean {statistics.mean(values) / 1e3:6.0f}"


def main(argv: list[str] | None = None) -> int:
    """Run the rounds, print the three distributions."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.02, help="seconds between the two sides' posts")
    ap.add_argument("--nice", type=int, default=0, help="set the workers' nice value (negative: needs root)")
    args = ap.parse_args(argv)
    from ppverify.measure.workers import run_workers

    res: Any = run_workers(2, _target, (args.rounds, args.gap, args.nice), 300)
    print(f"late receiver:  RECV post -> data in   {_line(res[1]['late'])}")
    print(f"early receiver: SEND post -> data in   {_line(res[1]['early'])}")
    print(f"late receiver:  sender's isend wait    {_line(res[0]['sendwait'])}  (gap {args.gap * 1e3:g} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
