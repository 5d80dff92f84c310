"""``ppverify simulate FAMILY|FILE``: run a schedule with communication on a modeled system.

Semantics (``--semantics``): ``async`` (event-driven, transfers take latency + bytes/bandwidth,
no contention; the default), ``contention`` (transfers sharing a link or NIC queue FIFO), or
``slot`` (the idealized table, communication charged per column). Costs come from presets
(``--system dgx-h100 --model gpt3-13b``, seconds and bytes) or are abstract (``--costs F=1,B=2
--comm-delay 0.5``). Prints the metrics (makespan, bubble ratio, exposed communication,
transfers, peak memory against the device capacity) and the timeline as a device x time chart
(the table itself under ``slot``). Exit code 1 when a device runs out of memory.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from typing import Any

import numpy as np
from tabulate import tabulate

from ...errors import ParameterError, ScheduleFileError
from ...timeline import Timeline
from .. import Command
from ..common import add_cost_arguments, add_schedule_arguments, print_json, schedule_from_args
from ..presets_args import add_preset_arguments, preset_context_from_args

GiB = 2**30
SEMANTICS_HELP = {
    "slot": "idealized table, communication charged per column",
    "async": "event-driven, no contention",
    "contention": "event-driven, FIFO queues on links and NICs",
    "torch": "PyTorch's unit-step simulator (_simulate_comms_compute): every action one step, zero latency",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule, costs, presets, semantics, collectives and output options."""
    from ...engines.simulate import SYNC_MODES

    add_schedule_arguments(parser)
    add_cost_arguments(parser)
    add_preset_arguments(parser)
    g = parser.add_argument_group("simulation")
    g.add_argument(
        "--semantics",
        choices=tuple(SEMANTICS_HELP),
        default="async",
        help="slot: table, comm per column; async: event-driven, no contention (default); "
        "contention: FIFO queues on links and NICs; torch: PyTorch's unit-step "
        "simulator, reproducing its step counts",
    )
    g.add_argument(
        "--sync",
        choices=SYNC_MODES,
        default=None,
        help="weight-gradient all-reduce between stage replicas (Chimera): eager (as soon as "
        "a stage's last backward ends; default, or what a saved file says), after-flush, or none",
    )
    g.add_argument(
        "--dp-allreduce",
        type=int,
        nargs="?",
        const=2,
        default=0,
        metavar="N",
        help="end the step with a data-parallel gradient all-reduce among N pipeline replicas "
        "(N defaults to 2 when the flag is given)",
    )
    g.add_argument(
        "--memory-GiB",
        dest="memory_gib",
        type=float,
        default=None,
        help="device memory capacity for the out-of-memory check (default: the system's)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    out.add_argument(
        "--trace",
        metavar="OUT.json",
        default=None,
        help="write a Chrome/Perfetto trace (open in ui.perfetto.dev or chrome://tracing)",
    )
    out.add_argument(
        "--frame",
        metavar="OUT.csv",
        default=None,
        help="write every op and transfer as rows (CSV; .parquet needs pyarrow)",
    )
    out.add_argument("--no-table", action="store_true", help="print the metrics only")
    out.add_argument(
        "--stages", action="store_true", help="also print the per-stage costs derived from the model (preset mode)"
    )
    out.add_argument("--width", type=int, default=100, help="columns of the timeline chart (default 100)")


def fmt_time(x: float, unit: str) -> str:
    """A time in its unit; seconds are shown in s, ms or us.

    Example:
        >>> fmt_time(0.0123, "s"), fmt_time(2.5, "units"), fmt_time(4e-5, "s")
        ('12.300 ms', '2.5', '40.0 us')
    """
    if unit != "s":
        return f"{x:g}"
    a = abs(x)
    if a >= 1:
        return f"{x:.4f} s"
    if a >= 1e-3:
        return f"{x * 1e3:.3f} ms"
    return f"{x * 1e6:.1f} us"


def fmt_mem(x: float | None, unit: str) -> str:
    """Memory in GiB for bytes, as is for abstract activations.

    Example:
        >>> fmt_mem(3 * 2**30, "bytes"), fmt_mem(2.5, "activations")
        ('3.00 GiB', '2.5')
    """
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x / GiB:.2f} GiB" if unit == "bytes" else f"{x:g}"


def gantt(timeline: Timeline, width: int = 100) -> str:
    """A device x time chart of a timeline: each column is ``makespan / width`` long and shows the
    kind of the op running at its middle (``F``, ``B``, ``I``, ``W``; ``.`` idle).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> print(gantt(run(build("gpipe", p=2, m=1)), width=4))
        time    0 .. 4 units, 1 per column
        dev 0  F..B
        dev 1  .FB.
    """
    ms = timeline.makespan
    width = max(1, int(width))
    if ms <= 0:
        return "(empty timeline)"
    step = ms / width
    mids = (np.arange(width) + 0.5) * step
    lines = [
        f"time    0 .. {fmt_time(ms, timeline.time_unit)}"
        f"{' units' if timeline.time_unit != 's' else ''}, {fmt_time(step, timeline.time_unit)} per column"
    ]
    kinds = np.array([o.kind for o in timeline.ops] or ["."])
    for d in range(timeline.p):
        sel = np.flatnonzero(timeline.device == d)
        row = np.full(width, ".", dtype="<U1")
        if len(sel):
            s, e = timeline.start[sel], timeline.end[sel]
            order = np.argsort(s, kind="stable")
            s, e, k = s[order], e[order], kinds[sel][order]
            idx = np.searchsorted(s, mids, side="right") - 1
            ok = (idx >= 0) & (e[np.maximum(idx, 0)] > mids)
            row[ok] = k[idx[ok]]
        lines.append(f"dev {d:<2} " + "".join(row.tolist()))
    return "\n".join(lines)


def stage_table(sc: Any) -> str:
    """Per-stage costs derived from a model: layers, parameters, op times, bytes.

    Example:
        >>> from ppverify.llm import Training, load_llm, stage_costs
        >>> lines = stage_table(stage_costs(load_llm("gpt3-1.3b"), 989e12, 2, Training())).splitlines()
        >>> lines[0].split()[:4], len(lines), lines[2].split()[:3]
        (['stage', 'layers', 'params', 'F'], 4, ['0', '12', '0.71'])
    """
    rows = []
    for st in range(len(sc.layers)):
        rows.append(
            [
                st,
                sc.layers[st],
                f"{sc.params[st] / 1e9:.2f} B",
                *(fmt_time(sc.duration[k][st], "s") for k in ("F", "B", "I", "W")),
                fmt_mem(sc.activation[st], "bytes"),
                fmt_mem(sc.weight_bytes[st], "bytes"),
                f"{sc.boundary_bytes[st] / 1e6:.1f} MB" if st < len(sc.boundary_bytes) else "-",
            ]
        )
    return tabulate(
        rows,
        headers=["stage", "layers", "params", "F", "B", "I", "W", "activations/mb", "weights+opt", "to next"],
        tablefmt="simple",
        stralign="right",
        disable_numparse=True,
    )


def simulate_from_args(args: argparse.Namespace) -> tuple[Timeline, Any]:
    """Build the schedule and models from the arguments and run the chosen engine."""
    from ...comm import FixedDelay
    from ...engines import run as run_engine
    from ..file_settings import timing_from_file

    schedule = schedule_from_args(args)
    # a ppverify JSON file may carry its cost model and communication (show/optimize --save)
    timing = timing_from_file(args, schedule, preset_context_from_args(args, schedule))
    ctx = timing.ctx
    if args.semantics == "slot":
        if args.dp_allreduce or (args.sync or "eager") != "eager":
            raise ParameterError("semantics", "slot", "--sync and --dp-allreduce need async or contention semantics")
        zero = isinstance(ctx.comm, FixedDelay) and ctx.comm.delay == 0
        timeline = run_engine(schedule, ctx.costs, ctx.comm, "slot", charge_comm=not zero)
    else:
        timeline = run_engine(
            schedule, ctx.costs, ctx.comm, args.semantics, sync=timing.sync, dp_allreduce=timing.dp_allreduce
        )
    return timeline, ctx


def report(timeline: Timeline, ctx: Any, capacity: float | None) -> dict[str, Any]:
    """Everything ``--json`` prints: the timeline's metrics plus communication and memory."""
    from ...engines.simulate import memory_report

    if capacity is None and ctx.system is not None:
        capacity = ctx.system.memory_bytes
    mem = memory_report(timeline, capacity)
    tr = timeline.transfers
    counts = Counter(tr.kind)
    out = timeline.metrics()
    exposed = timeline.info.get("exposed_comm")
    out.update(
        {
            "family": timeline.schedule.family,
            "params": dict(timeline.schedule.params),
            "p": timeline.p,
            "m": timeline.schedule.m,
            "placement": timeline.schedule.placement.to_dict(),
            "costs": timeline.costs.label or "custom",
            "system": ctx.system.summary() if ctx.system is not None else None,
            "exposed_comm": exposed,
            "exposed_comm_mean": float(np.mean(exposed)) if exposed else None,
            "transfers": dict(counts),
            "transfer_bytes": float(sum(tr.nbytes)),
            "transfer_time": float(sum(e - s for s, e in zip(tr.start, tr.end))),
            "peak_memory": mem["peak"],
            "weight_memory": mem["weights"],
            "memory_capacity": mem["capacity"],
            "oom_devices": mem["oom"],
            "sync": timeline.info.get("sync"),
            "dp_allreduce": timeline.info.get("dp_allreduce"),
        }
    )
    if ctx.stage_costs is not None:
        sc = ctx.stage_costs
        out["stages"] = {
            "layers": list(sc.layers),
            "F": list(sc.duration["F"]),
            "B": list(sc.duration["B"]),
            "I": list(sc.duration["I"]),
            "W": list(sc.duration["W"]),
            "activation_bytes": list(sc.activation),
            "weight_bytes": list(sc.weight_bytes),
            "boundary_bytes": list(sc.boundary_bytes),
        }
    return out


def run(args: argparse.Namespace) -> int:
    """Simulate and print (text or JSON); write the trace/frame when asked."""
    from ...engines.table import MAX_RENDER_TICKS, format_table
    from ...trace import write_trace

    if args.memory_gib is not None and not args.memory_gib > 0:
        raise ParameterError("memory-GiB", args.memory_gib, "must be > 0")
    if not 1 <= args.width <= 10_000:  # the chart allocates p x width cells
        raise ParameterError("width", args.width, "must be in 1..10000 columns")
    timeline, ctx = simulate_from_args(args)
    capacity = args.memory_gib * GiB if args.memory_gib is not None else None
    if capacity is not None and timeline.costs.memory_unit != "bytes":
        capacity = args.memory_gib  # abstract activations: the capacity is in the same units
    rep = report(timeline, ctx, capacity)
    if args.trace:
        write_trace(timeline, args.trace)
        rep["trace"] = str(args.trace)
    if args.frame:
        _write_frame(timeline, args.frame)
        rep["frame"] = str(args.frame)
    if args.json:
        print_json(rep)
        return 1 if rep["oom_devices"] else 0
    unit, munit = timeline.time_unit, timeline.costs.memory_unit
    lines = [
        f"schedule      {timeline.schedule.describe()}",
        f"semantics     {timeline.semantics} ({SEMANTICS_HELP[timeline.semantics]})",
        f"costs         {rep['costs']} ({unit})",
    ]
    if rep["system"]:
        lines.append(f"system        {rep['system']}")
    else:
        delay = getattr(ctx.comm, "delay", 0.0)
        lines.append(f"comm          {fmt_time(delay, unit)} per cross-device transfer")
    if ctx.stage_costs is not None:
        sc = ctx.stage_costs
        lines.append(
            f"stages        layers {','.join(map(str, sc.layers))}; F {fmt_time(max(sc.duration['F']), unit)}, "
            f"B {fmt_time(max(sc.duration['B']), unit)} (slowest stage); "
            f"boundary {sc.boundary_bytes[0] / 1e6 if sc.boundary_bytes else 0:.1f} MB"
        )
    print("\n".join(lines))
    if getattr(args, "stages", False) and ctx.stage_costs is not None:
        print()
        print(stage_table(ctx.stage_costs))
    if not args.no_table:
        print()
        if timeline.semantics == "slot" and timeline.info.get("ticks", 0) <= MAX_RENDER_TICKS:
            print(format_table(timeline))
        else:
            # seconds from presets rarely share a small tick: chart the table's timing instead
            print(gantt(timeline, args.width))
    print()
    ms = timeline.makespan
    print(f"makespan      {fmt_time(ms, unit)}")
    print(f"bubble ratio  {timeline.bubble_ratio:.4f}  (convention {rep['bubble_convention']})")
    if rep["exposed_comm"] is not None:
        print(
            f"exposed comm  {fmt_time(rep['exposed_comm_mean'], unit)} per device on average "
            "(time waiting for transfers in flight, plus collectives after the last op)"
        )
    if rep["transfers"]:
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(rep["transfers"].items()))
        size = f", {rep['transfer_bytes'] / 1e9:.3f} GB" if munit == "bytes" else ""
        print(f"transfers     {kinds}{size}")
    if timeline.semantics != "slot" and rep["sync"] and any(k == "allreduce" for k in rep["transfers"]):
        print(f"replica sync  {rep['sync']}")
    print()
    exposed = rep["exposed_comm"] or [None] * timeline.p
    cap = rep["memory_capacity"]
    rows = []
    for d in range(timeline.p):
        rows.append(
            [
                d,
                fmt_time(rep["busy"][d], unit),
                fmt_time(rep["idle"][d], unit),
                f"{100 * rep['idle'][d] / ms:.1f}" if ms else "-",
                fmt_time(exposed[d], unit) if exposed[d] is not None else "-",
                fmt_mem(rep["weight_memory"][d], munit),
                fmt_mem(rep["peak_memory"][d], munit),
                ("OOM" if d in rep["oom_devices"] else "ok") if cap is not None else "-",
            ]
        )
    print(
        tabulate(
            rows,
            headers=[
                "device",
                "busy",
                "idle",
                "idle %",
                "exposed comm",
                "weights",
                "peak memory",
                f"fits {fmt_mem(cap, munit)}" if cap is not None else "fits",
            ],
            tablefmt="simple",
            stralign="right",
            disable_numparse=True,
        )
    )
    if rep["oom_devices"]:
        print(
            f"\nout of memory: device(s) {', '.join(map(str, rep['oom_devices']))} exceed "
            f"{fmt_mem(cap, munit)} (peak = activations + weights/gradients/optimizer state of every stage replica held)"
        )
    if args.trace:
        print(f"\ntrace written to {args.trace}")
    if args.frame:
        print(f"timeline rows written to {args.frame}")
    return 1 if rep["oom_devices"] else 0


def _write_frame(timeline: Timeline, path: str) -> None:
    from ...files import atomic_path

    frame = timeline.to_frame()
    try:
        with atomic_path(path, "--frame") as tmp:
            if path.endswith(".parquet"):
                frame.to_parquet(tmp)
            else:
                frame.to_csv(tmp, index=False)
    except (OSError, ImportError) as exc:
        raise ScheduleFileError(path, "", f"cannot write: {exc}") from None


COMMAND = Command(
    "simulate",
    "run a schedule with communication (async, contention or slot) on a system/model preset",
    add_arguments,
    run,
    description=__doc__ or "",
)
