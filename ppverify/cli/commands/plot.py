"""``ppverify plot``: a Gantt chart of a schedule's timeline, or makespan-vs-network comparison plots.

* ``ppverify plot FAMILY|FILE -p 4 -m 8 [--semantics async] [--system S --model M | --costs .. --comm-delay c] -o g.png``
* ``ppverify plot --crossover latency|bandwidth [--schedules a,b] -p 4 -m 4 --system S --model M -o c.svg``
"""

from __future__ import annotations

import argparse

from .. import Command
from ..common import add_cost_arguments, add_schedule_arguments, print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule (for a Gantt chart) or --crossover, costs/presets, semantics, output file.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> parser.parse_args(["1f1b", "-o", "gantt.svg"]).output
        'gantt.svg'
    """
    from ...engines import registry
    from ..presets_args import add_preset_arguments

    add_schedule_arguments(
        parser,
        optional=True,
        help="a registered family or a schedule file (Gantt chart); omit with --crossover",
        placement=True,
    )
    add_cost_arguments(parser)
    add_preset_arguments(parser)
    parser.add_argument(
        "--semantics",
        default=None,
        choices=registry.names(timed=True),
        help="timing semantics (default: async, or slot without communication): " + registry.help_text(timed=True),
    )
    parser.add_argument(
        "--crossover",
        choices=("latency", "bandwidth"),
        help="plot makespan of several schedules against per-hop latency or link bandwidth",
    )
    parser.add_argument(
        "--schedules",
        help="with --crossover: comma-separated schedule labels/families (default: the default comparison's)",
    )
    parser.add_argument(
        "--range",
        dest="xrange",
        default=None,
        metavar="LO,HI[,N]",
        help="with --crossover: x range, N points (latency in µs or bandwidth in GB/s, log-spaced; an "
        "abstract per-hop delay, evenly spaced); default 1,10000,13 (µs) / 1,1000,13 (GB/s) / 0,2,9 (abstract)",
    )
    parser.add_argument("-o", "--output", required=True, help="output file (.png, .svg or .pdf)")
    parser.add_argument("--json", action="store_true", help="print what was drawn as JSON")


def run(args: argparse.Namespace) -> int:
    """Draw and write the plot.

    Example:
        A Gantt chart of a tiny schedule (slot timing: no communication given):

        >>> import os, tempfile
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> out = os.path.join(tempfile.mkdtemp(), "gantt.svg")
        >>> run(parser.parse_args(["gpipe", "-p", "2", "-m", "2", "-o", out]))  # doctest: +ELLIPSIS
        wrote ...gantt.svg: Gantt chart of gpipe p=2 m=2 under slot (makespan 9 units, 0 transfers drawn)
        0
        >>> os.path.exists(out)
        True
    """
    from ...report.plots import check_plot_path
    from ..plot_modes import check_plot_mode

    check_plot_path(args.output)
    check_plot_mode(args)  # an option the chosen drawing would ignore: refused
    if args.crossover:
        return _crossover(args)
    from ...engines import registry
    from ...report.plots import gantt
    from ...views.run_report import run_timed
    from ..common import build_schedule, file_faults
    from ..run_request import request_timing, run_request

    request = run_request(args)  # --costs read once, before the build
    schedule = build_schedule(request.source)
    # a saved file's costs and communication (optimize --save) time the chart as they timed the file
    timing = request_timing(request, schedule)
    ctx = timing.ctx
    has_comm = ctx.preset_mode or bool(getattr(ctx.comm, "delay", 0)) or timing.dp_allreduce > 0
    semantics = args.semantics or ("async" if has_comm or "comm" in timing.from_file else "slot")
    costs = ctx.costs_for(registry.engine(semantics).own_overhead)
    # as simulate times it: slot charges the communication per column (run_engine alone would not)
    with file_faults(request.source, schedule):  # a file's missing op or deadlock names the file
        tl = run_timed(schedule, costs, ctx.comm, semantics, timing.sync, timing.dp_allreduce)
    out = gantt(tl, args.output)
    info = {
        "output": str(out),
        "schedule": schedule.describe(),
        "semantics": semantics,
        "makespan": tl.makespan,
        "time_unit": tl.time_unit,
        "transfers": len(tl.transfers),
    }
    print_json(info) if args.json else print(
        f"wrote {out}: Gantt chart of {schedule.describe()} under {semantics} "
        f"(makespan {tl.makespan:.6g} {tl.time_unit}, {len(tl.transfers)} transfers drawn)"
    )
    return 0


def _crossover(args: argparse.Namespace) -> int:
    from ...compare import select_schedules
    from ...compare.crossover import crossings, makespan_curves
    from ...compare.crossover_axis import axis_unit, axis_values, crossover_title, swept_config
    from ...compare.request import given_csv
    from ...report.plots import crossover_plot
    from ..plot_modes import crossover_config

    entries = select_schedules(given_csv("schedules", args.schedules))  # ',' names nothing: refused
    cfg = crossover_config(args)  # every preset option carried; one the sweep would ignore refused
    vals = axis_values(args.crossover, args.xrange, not cfg.abstract)
    semantics = args.semantics or "async"
    curves = makespan_curves(entries, cfg, args.crossover, vals, semantics)
    out = crossover_plot(curves, args.crossover, args.output, crossover_title(cfg, args.crossover, semantics))
    cross = crossings(curves)
    if args.json:  # the config without the swept value, and crossings in --range's unit
        unit, k = axis_unit(args.crossover, not cfg.abstract)
        print_json(
            {
                "output": str(out),
                "config": swept_config(cfg, args.crossover),
                "semantics": semantics,
                "axis": args.crossover,
                "unit": unit,
                "crossings": [
                    {"faster_before": a, "faster_after": b, "between": [float(f"{x * k:.12g}") for x in (x0, x1)]}
                    for a, b, x0, x1 in cross
                ],
            }
        )
    else:
        print(
            f"wrote {out}: {len(set(curves['schedule']))} schedules, {len(vals)} {args.crossover} values, "
            f"{len(cross)} ranking crossings under {semantics}"
        )
    return 0


COMMAND = Command(
    "plot",
    "draw a Gantt chart of a timeline, or makespan against latency/bandwidth",
    add_arguments,
    run,
    description=__doc__.replace("``", ""),
)
