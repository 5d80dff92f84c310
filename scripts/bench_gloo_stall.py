"""Benchmark: gloo's late-receiver hand-over on this machine, alone and beside one CPU-bound job.

Why the steps of several-stages-per-rank schedules spread (``docs/traces.md``, "Why steps
spread"): two processes on gloo (as ``measure``'s workers, loopback TCP). Rank 0 posts a SEND
and then sleeps 10 ms (an op's compute, no call into gloo); rank 1 posts the matching RECV 3 ms
after the SEND (a late receiver, as looped BFS's and GPipe's ranks post every forward RECV) and
waits for the data. Printed: the time from the RECV's post to the data (the hand-over the
``runtime`` semantics calls ``late``) and the time the post call itself took (``irecv`` should
return at once), median / 90th percentile / max of ``--iterations``. With ``--hog`` the same
again while one busy loop at ``nice 19`` runs pinned to the last CPU (what a solver run pinned to
a core at low priority does to the machine); the busy loop is stopped before the script ends.

Benchmarks print, they never assert (the machine and its load set the figures).

    python scripts/bench_gloo_stall.py --wait-quiet 120   # without, then beside the busy loop (~10 s)
    python scripts/bench_gloo_stall.py --no-hog           # without it only
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _ms() -> float:
    return time.perf_counter_ns() / 1e6


def _worker(rank: int, store: str, iterations: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store, 2), rank=rank, world_size=2)
    x = torch.zeros(2, 8, dtype=torch.float64)  # measure's sleep-mode boundary tensor
    rows = []
    for _ in range(iterations):
        dist.barrier()
        if rank == 0:
            w = dist.isend(x, 1)
            time.sleep(0.010)  # an op's compute: no call into gloo
            w.wait()
        else:
            time.sleep(0.003)  # the RECV comes after the SEND: a late receiver
            t0 = _ms()
            r = dist.irecv(x, 0)
            t1 = _ms()
            r.wait()
            rows.append((_ms() - t0, t1 - t0))
    dist.barrier()
    dist.destroy_process_group()
    if rank == 1:
        with open(out, "w") as fh:
            fh.write("\n".join(f"{a} {b}" for a, b in rows))


def _quantiles(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs):.2f} ms, p90 {xs[int(0.9 * (len(xs) - 1))]:.2f} ms, max {xs[-1]:.2f} ms"


def run_pair(iterations: int) -> tuple[list[float], list[float]]:
    """Run the two ranks; ``(RECV post -> data, post call)`` per iteration, milliseconds."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="ppverify-gloo-stall-") as d:
        out = os.path.join(d, "rows.txt")
        mp.spawn(_worker, args=(os.path.join(d, "store"), iterations, out), nprocs=2)
        rows = [tuple(map(float, line.split())) for line in Path(out).read_text().splitlines()]
    return [a for a, _ in rows], [b for _, b in rows]


def _hog() -> subprocess.Popen:
    cpu = max(os.sched_getaffinity(0))
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}}); os.nice(19)\nwhile True: pass"
    return subprocess.Popen([sys.executable, "-c", code])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--no-hog", action="store_true", help="only the run without the busy loop")
    from ppverify.measure.machine_load import add_wait_quiet_argument

    add_wait_quiet_argument(ap, "before each case")
    args = ap.parse_args(argv)
    from ppverify.measure.machine_load import cpu_share, cpu_ticks, wait_quiet

    cases = [("without a busy loop", False)] + (
        [] if args.no_hog else [("beside a nice-19 busy loop on the last CPU", True)]
    )
    for label, hog in cases:
        if args.wait_quiet > 0:
            w = wait_quiet(args.wait_quiet)
            print(f"waited for a quiet machine: {w.describe() if w else 'no /proc/stat'}")
        proc = _hog() if hog else None
        try:
            time.sleep(0.5 if hog else 0.0)
            ticks = cpu_ticks()
            handover, post = run_pair(args.iterations)
            load = cpu_share(ticks, cpu_ticks())
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
        print(f"{label} ({load.describe() if load else 'load unknown'}):")
        print(f"  late receiver, RECV post -> data   {_quantiles(handover)}")
        print(f"  the post call itself (irecv)       {_quantiles(post)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
