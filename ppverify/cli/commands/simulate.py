"""``ppverify simulate FAMILY|FILE``: run a schedule with communication on a modeled system.

Semantics (``--semantics``): ``async`` (event-driven, transfers take latency + bytes/bandwidth,
no contention; the default), ``contention`` (transfers sharing a link or NIC queue FIFO),
``slot`` (the idealized table, communication charged per column), ``torch`` (PyTorch's unit-step
simulator: one step per action, costs unused) or ``runtime`` (PyTorch's runtime on gloo, from a
calibrated preset's hand-over model). Costs come from presets
(``--system dgx-h100 --model gpt3-13b``, seconds and bytes) or are abstract (``--costs F=1,B=2
--comm-delay 0.5``). Prints the metrics (makespan, bubble ratio, exposed communication,
transfers, peak memory against the device capacity) and the timeline as a device x time chart
(the table itself under ``slot``). Exit code 1 when a device runs out of memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ...core.errors import ParameterError
from ...core.memory_cap import MEMORY_CAP_HELP, CapSpec
from ...core.timeline import Timeline
from ...core.timeline_text import GiB, fmt_time, gantt
from ...views.run_report import report_text, run_timed, timeline_report, write_frame
from .. import Command
from ..common import add_cost_arguments, add_schedule_arguments, build_schedule, measured_from_trace, print_json
from ..cost_args import costs_beside_trace
from ..file_settings import add_collective_arguments
from ..presets_args import add_preset_arguments, check_simulate_options, refuse_sync_without_replicas
from ..run_request import RunRequest, check_timed_options, request_timing, run_request
from ..timeline_outputs import WIDTH_HELP, add_measured_trace, check_timeline_outputs

__all__ = ["COMMAND", "_write_frame", "fmt_time", "gantt", "report"]  # measure prints with them
_write_frame = write_frame


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule, costs, presets, semantics, collectives and output options.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["1f1b", "-p", "4", "--semantics", "contention", "--json"])
        >>> ns.schedule, ns.p, ns.semantics, ns.json, ns.width, ns.memory_gib
        ('1f1b', 4, 'contention', True, None, None)
    """
    from ...engines import registry

    add_schedule_arguments(parser, placement=True)  # a text table's --placement too
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
        help="device memory capacity in GiB for the out-of-memory check, with presets (default: the system's)",
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
    out.add_argument("--width", type=int, default=None, metavar="COLUMNS", help=WIDTH_HELP)
    add_measured_trace(out)


def simulate_request(request: RunRequest, semantics: str, trace: bool = False) -> tuple[Timeline, Any]:
    """Build the schedule and models the request names and run the ``semantics`` engine; beside a
    measured ``trace``, in seconds (:func:`~ppverify.cli.cost_args.costs_beside_trace`).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> request = run_request(parser.parse_args(["gpipe", "-p", "2", "-m", "2", "--comm-delay", "0.5"]))
        >>> timeline, ctx = simulate_request(request, "async")
        >>> timeline.makespan, len(timeline.transfers)
        (10.0, 4)
    """
    from ...engines import registry
    from ..common import file_faults

    schedule = build_schedule(request.source)
    refuse_sync_without_replicas(request.sync, schedule.placement, schedule.pipe_of_mb)  # else unread
    # a ppverify JSON file may carry its cost model and communication (show/optimize --save)
    timing = request_timing(request, schedule)
    ctx = costs_beside_trace(timing.ctx, bool(request.costs)) if trace else timing.ctx
    if semantics == "slot" and (request.dp_allreduce or (request.sync or "eager") != "eager"):
        raise ParameterError("semantics", "slot", "--sync and --dp-allreduce need async or contention semantics")
    costs = ctx.costs_for(registry.engine(semantics).own_overhead)
    with file_faults(request.source, schedule):  # a file's missing op or deadlock names the file
        return run_timed(schedule, costs, ctx.comm, semantics, timing.sync, timing.dp_allreduce), ctx


def report(timeline: Timeline, ctx: Any, capacity: float | None, memory_cap: CapSpec | None = None) -> dict[str, Any]:
    """Everything ``--json`` prints: :func:`~ppverify.views.run_report.timeline_report` with ``ctx``'s system and stage costs.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> request = run_request(parser.parse_args(["gpipe", "-p", "2", "-m", "2", "--comm-delay", "0.5"]))
        >>> rep = report(*simulate_request(request, "async"), capacity=None)
        >>> rep["schedule"], rep["makespan"], rep["bubble_ratio"], rep["oom_devices"]
        ('gpipe p=2 m=2', 10.0, 0.4, [])
    """
    return timeline_report(timeline, ctx.system, ctx.stage_costs, capacity, memory_cap)


def run(args: argparse.Namespace) -> int:
    """Simulate and print (text or JSON); write the trace/frame when asked.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["gpipe", "-p", "2", "-m", "2", "--comm-delay", "0.5"]))  # doctest: +ELLIPSIS
        schedule      gpipe p=2 m=2
        ...
        makespan      10
        ...
        0
    """
    from ...core.trace import write_trace

    check_simulate_options(args)  # --memory-GiB, --stages, --measured-trace: refused before any build
    check_timed_options(args)  # torch counts unit steps: costs and presets would change nothing
    if args.trace and args.frame and Path(args.trace).resolve() == Path(args.frame).resolve():
        raise ParameterError("frame", args.frame, "is also the --trace file, which it would overwrite: give two names")
    width = check_timeline_outputs(args)  # a missing or unwritable folder: refused before the run
    request = run_request(args)  # costs and cap read once, before the run; the cap resolved in its cost model
    timeline, ctx = simulate_request(request, args.semantics, bool(args.measured_trace))
    capacity = args.memory_gib * GiB if args.memory_gib is not None else None
    if capacity is not None and timeline.costs.memory_unit != "bytes":  # 1 GiB is not 1 activation
        raise ParameterError(
            "memory-GiB",
            args.memory_gib,
            "is a device's capacity in bytes, which abstract costs do not count: give --system and --model, or "
            "cap activations with --memory-cap N",
        )
    rep = report(timeline, ctx, capacity, request.memory_cap)
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
    print(report_text(timeline, rep, ctx.comm, ctx.stage_costs, show_stages=stages, chart=chart, width=width))
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
