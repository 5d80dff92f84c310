"""Benchmark of the memory recording of ``ppverify measure``: what the saved-tensor hooks cost.

In one process (no workers, no sleeps), one stage's block of the measured model runs a forward
and a full backward on one microbatch, many times, with the recording off and on
(:class:`ppverify.measure.memrecord.SavedTensors`: a pack hook per saved tensor, an event at each
save and free). Prints the median time per forward+backward of each, their difference (the
recording's cost per op pair) and the ratio, for the sleep model (what ``measure`` runs by
default, where every op then sleeps its cost of milliseconds) and the real one.

Benchmarks print, they never assert (the machine and its load set the figures).

    python scripts/bench_memrecord.py             # 5 rounds of 2,000 pairs per model and mode
    python scripts/bench_memrecord.py --pairs 500
"""

from __future__ import annotations

import argparse
import statistics
import time


def _round(spec, record: bool, pairs: int) -> float:
    import torch

    from ppverify.measure.memrecord import SavedTensors
    from ppverify.measure.stages import build_stage_module

    block = build_stage_module(spec, 0)
    x = torch.randn(spec.mb_size, spec.dim, dtype=torch.float64, requires_grad=True)
    grad = torch.ones(spec.mb_size, spec.dim, dtype=torch.float64)
    rec = SavedTensors()
    rec.events = [] if record else None
    t0 = time.perf_counter()
    for mb in range(pairs):
        with rec.running("F"), rec.saving(0, mb, block.parameters()):
            out = block(x)
        with rec.running("B"):
            torch.autograd.backward(out, grad)
        del out
    return (time.perf_counter() - t0) / pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2000, help="forward+backward pairs per round (default 2000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per model and mode (default 5)")
    args = ap.parse_args()
    import torch

    from ppverify.measure.stages import ModelSpec

    torch.set_num_threads(1)  # as the workers run
    print(f"{'model':<7} {'off (us)':>9} {'on (us)':>9} {'cost (us)':>10} {'ratio':>6}")
    for name in ("sleep", "real"):
        spec = ModelSpec.for_compute(name)
        off, on = [], []
        for _ in range(args.rounds):  # interleaved rounds, so load drifts hit both modes alike
            off.append(_round(spec, False, args.pairs))
            on.append(_round(spec, True, args.pairs))
        a, b = statistics.median(off) * 1e6, statistics.median(on) * 1e6
        print(f"{name:<7} {a:>9.1f} {b:>9.1f} {b - a:>10.1f} {b / a:>6.2f}")


if __name__ == "__main__":
    main()
