"""Benchmark of profiler traces in (``import-trace``, ``calibrate --from-trace``).

1. **Import speed**: synthetic GPU-style traces (:mod:`ppverify.io.trace_synth`) of 8 ranks, each
   padded to 20,000 events (1F1B p=8 m=64, three steps, NCCL kernels, device annotations, hosts on
   different clocks): CPU seconds (``time.process_time``) to read, pick and align the median step
   and rebuild it as a timeline, median of 3; and the same with ``import-trace``'s verification
   of the recorded order. Goal: the import <= 5 s CPU.
2. **Held-out prediction from a trace**: ``measure --profile`` records 1F1B p=2 m=4 (ops sleeping
   F=10 ms, B=20 ms) for 8 steps; ``calibrate --from-trace`` fits steps 1-4; the preset and the
   fitted costs predict steps 5-8 of that trace, and every step of a second recorded schedule of
   the same stages (GPipe p=2 m=4, and 1F1B p=2 m=8). Prints each step's error and the mean/max.

Benchmarks print, they never assert (the machine and its load set the figures).

    python scripts/bench_traces.py            # both parts (~1 min)
    python scripts/bench_traces.py --import-only
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def bench_import(repeats: int = 3) -> None:
    from ppverify.compare.trace_check import check_trace
    from ppverify.core.comm import FixedDelay
    from ppverify.core.costs import CostModel
    from ppverify.engines import run
    from ppverify.io.profiler_trace import read_traces
    from ppverify.io.trace_step import recorded_step
    from ppverify.io.trace_synth import synthetic_traces, write_synthetic
    from ppverify.measure.trace_import import import_step
    from ppverify.schedules import build

    s = build("1f1b", p=8, m=64)
    tl = run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), FixedDelay(0.001), semantics="async")
    traces = synthetic_traces(tl, steps=3, jitter=0.05, hosts=[f"node{r}" for r in range(8)],
                              offsets_us=[r * 1e5 for r in range(8)], events=20_000)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ppverify-bench-traces-") as d:
        write_synthetic(traces, d)
        n = [len(t["traceEvents"]) for t in traces]
        size = sum(p.stat().st_size for p in Path(d).iterdir())
        times, full = [], []
        for _ in range(repeats):
            t0 = time.process_time()
            rt = read_traces([d])
            imp = import_step(rt, recorded_step(rt))
            times.append(time.process_time() - t0)
            t0 = time.process_time()
            tc = check_trace([d])
            full.append(time.process_time() - t0)
        print(f"import: 8 ranks x {min(n)}..{max(n)} events ({size / 2**20:.1f} MiB JSON), {imp.schedule.num_ops} ops")
        print(
            f"  read + step + align + timeline   median {statistics.median(times):.2f} s CPU (of {repeats}; goal <= 5 s)"
        )
        print(f"  with verify, prediction, steps   median {statistics.median(full):.2f} s CPU; valid={tc.report.valid}")


def bench_held_out(steps: int = 8) -> None:
    from ppverify.io.profiler_trace import read_traces
    from ppverify.measure import measure
    from ppverify.measure.trace_calibrate import calibrate_from_trace, held_out, preset_system, trace_preset_text
    from ppverify.schedules import build

    costs = {"F": 0.010, "B": 0.020}
    with tempfile.TemporaryDirectory(prefix="ppverify-bench-traces-") as d:
        base = Path(d)
        runs = {}
        for name, fam, m in (("fit", "1f1b", 4), ("gpipe", "gpipe", 4), ("1f1b m=8", "1f1b", 8)):
            sched = build(fam, p=2, m=m)
            measure(sched, costs, steps=steps if name == "fit" else 4, warmup=1, profile=str(base / name))
            runs[name] = (sched, read_traces([base / name]))
        sched, traces = runs["fit"]
        fit_steps = list(range(1, steps // 2 + 1))
        fit = calibrate_from_trace(traces, sched, fit_steps)
        system = preset_system(trace_preset_text(fit, "bench", str(base / "fit")))
        cal = fit.calibration
        print(f"calibrate --from-trace: 1f1b p=2 m=4, fit ProfilerStep {fit_steps[0]}..{fit_steps[-1]}: action "
              f"{cal.action_overhead_s * 1e6:.0f} us, transfer {cal.transfer_overhead_s * 1e6:.0f} us, "
              f"latency {cal.latency_s * 1e6:.0f} us; residual {cal.residual * 100:.2f} %")  # fmt: skip
        for semantics in ("runtime", "async"):  # the hand-over model (measure --system) and the folded overheads
            errs = []
            print(f"  predicted with --semantics {semantics}:")
            for name, (s, tr) in runs.items():
                rest = [n for n in range(1, steps + 1) if n not in fit_steps] if name == "fit" else None
                for n, ms, pr in held_out(fit, system, tr, rest, s, semantics=semantics):
                    errs.append(abs(pr - ms) / ms)
                    print(f"    {s.describe():<16} step {n}: measured {ms * 1e3:8.3f} ms  predicted {pr * 1e3:8.3f} ms  "
                          f"error {100 * (pr - ms) / ms:+5.1f}%")  # fmt: skip
            print(f"  held-out ({semantics}): mean |error| {100 * statistics.mean(errs):.1f} %, max {100 * max(errs):.1f} % "
                  f"over {len(errs)} steps (goal 3 % mean, 5 % max)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--import-only", action="store_true", help="only the import speed")
    args = ap.parse_args(argv)
    bench_import()
    if not args.import_only:
        bench_held_out()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
