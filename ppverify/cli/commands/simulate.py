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
from typing import Any

from ...core.errors import ParameterError
from ...core.memory_cap import MEMORY_CAP_HELP
from ...core.timeline import Timeline
from ...core.timeline_text import GiB, fmt_time, gantt
from ...views.run_report import report_text, run_timed, timeline_report, write_frame
from .. import Command
from ..common import add_cost_arguments, add_schedule_arguments, measured_from_trace, print_json, schedule_from_args
from ..file_settings import add_collective_arguments
from ..presets_args import add_preset_arguments, preset_context_from_args

__all__ = ["COMMAND", "_write_frame", "fmt_time", "gantt", "report"]  # measure prints with them
_write_frame = write_frame


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule, costs, presets, semantics, collectives and output options."""
    from ...engines import registry

    add_schedule_arguments(parser)
    add_cost_arguments(parser)
    add_preset_arguments(parser)
    g = parser.add_argument_group("simulation")
    g.add_argument(
        "--semantics",
        choices=registry.names(),
        default="async",
        help=registry.help_text("async"),
    )
    add_collective_arguments(g)
    g.add_argument(
        "--memory-GiB",
        dest="memory_gib",
        type=float,
        default=None,
        help="device memory capacity for the out-of-memory check (default: the system's)",
    )
    g.add_argument("--memory-cap", default=None, metavar="N|NMF|SIZE|none", help=MEMORY_CAP_HELP + " (exit 1 over it)")
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
    out.add_argument("--measured-trace", nargs="+", metavar="DIR", help="also the step of these profiler traces")


def simulate_from_args(args: argparse.Namespace) -> tuple[Timeline, Any]:
    """Build the schedule and models from the arguments and run the chosen engine."""
    from ...engines import registry
    from ..file_settings import timing_from_file

    schedule = schedule_from_args(args)
    # a ppverify JSON file may carry its cost model and communication (show/optimize --save)
    timing = timing_from_file(args, schedule, preset_context_from_args(args, schedule))
    if args.semantics == "slot" and (args.dp_allreduce or (args.sync or "eager") != "eager"):
        raise ParameterError("semantics", "slot", "--sync and --dp-allreduce need async or contention semantics")
    ctx = timing.ctx
    costs = ctx.costs_for(registry.engine(args.semantics).own_overhead)
    return run_timed(schedule, costs, ctx.comm, args.semantics, timing.sync, timing.dp_allreduce), ctx


def report(timeline: Timeline, ctx: Any, capacity: float | None, memory_cap: str | None = None) -> dict[str, Any]:
    """Everything ``--json`` prints: :func:`~ppverify.views.run_report.timeline_report` with ``ctx``'s system and stage costs."""
    return timeline_report(timeline, ctx.system, ctx.stage_costs, capacity, memory_cap)


def run(args: argparse.Namespace) -> int:
    """Simulate and print (text or JSON); write the trace/frame when asked."""
    from ...core.trace import write_trace

    if args.memory_gib is not None and not args.memory_gib > 0:
        raise ParameterError("memory-GiB", args.memory_gib, "must be > 0")
    if not 1 <= args.width <= 10_000:  # the chart allocates p x width cells
        raise ParameterError("width", args.width, "must be in 1..10000 columns")
    timeline, ctx = simulate_from_args(args)
    capacity = args.memory_gib * GiB if args.memory_gib is not None else None
    if capacity is not None and timeline.costs.memory_unit != "bytes":
        capacity = args.memory_gib  # abstract activations: the capacity is in the same units
    rep = report(timeline, ctx, capacity, args.memory_cap)
    code = 1 if rep["oom_devices"] or rep.get("over_memory_cap") else 0  # out of memory, or over the cap
    rep.update(measured_from_trace(args.measured_trace, timeline))  # the measured level, as import-trace reads it
    for flag, write in (("trace", write_trace), ("frame", write_frame)):
        if getattr(args, flag):
            write(timeline, getattr(args, flag))
            rep[flag] = str(getattr(args, flag))
    if args.json:
        print_json(rep)
        return code
    stages, chart = bool(getattr(args, "stages", False)), not args.no_table
    print(report_text(timeline, rep, ctx.comm, ctx.stage_costs, show_stages=stages, chart=chart, width=args.width))
    if args.trace:
        print(f"\ntrace written to {args.trace}")
    if args.frame:
        print(f"timeline rows written to {args.frame}")
    return code


COMMAND = Command(
    "simulate",
    "run a schedule with communication (async, contention or slot) on a system/model preset",
    add_arguments,
    run,
    description=__doc__ or "",
)
