"""``ppverify import-trace DIR|FILES...``: read the ``torch.profiler`` traces of a
pipeline-parallel job (one per rank, ``.json`` or ``.json.gz``), rebuild one step as a measured
timeline, verify the order that ran, diff it against ``--schedule``, and compare it with the
prediction.

The actions are the ``PP:<action>`` ranges of PyTorch's ``_PipelineScheduleRuntime`` (device-side
``gpu_user_annotation`` copies where present, else host-side), or ``Forward i`` / ``Backward i``
with ``--schedule``. The step is ``ProfilerStep#N`` (``--step``; default the median step). Ranks of
one host share its clock; otherwise they are aligned on the collective before the step
(``--clock``). The recorded order is verified with every property of ``verify`` (with its
SEND/RECV and marker ranges, as a ``compute_comms`` CSV under PyTorch's rules); with
``--schedule`` every difference is listed (exit 1 when the order is invalid or differs). The
prediction is the ``async`` engine on costs fitted from the trace (median per stage and kind) or
``--costs``; ``--system`` adds the calibrated one. Record traces with ``ppverify measure
--profile DIR`` or see docs/traces.md.
"""

from __future__ import annotations

import argparse

from ...io.trace_step import CLOCKS
from .. import Command
from ..common import add_schedule_arguments, build_schedule, parsed_costs, print_json, schedule_source
from ..timeline_outputs import (
    add_timeline_outputs,
    chart_width,
    check_timeline_outputs,
    write_timeline_outputs,
    written_lines,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Traces, the schedule to compare with, step, clock, costs and outputs.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["traces/", "--schedule", "1f1b", "--step", "3"])
        >>> ns.traces, ns.schedule, ns.p, ns.step, ns.clock
        (['traces/'], '1f1b', None, 3, 'auto')
    """
    parser.add_argument("traces", nargs="+", metavar="DIR|FILE", help="a directory of per-rank traces, or the files")
    add_schedule_arguments(
        parser,
        as_option=True,
        help="the schedule the job meant to run: a family or a schedule file (optional)",
        placement=True,
        # the trace, not the family's own defaults, sizes --schedule
        p_help="ranks of --schedule (default: the trace's)",
        m_help="microbatches of --schedule (default: the trace's)",
    )
    parser.set_defaults(p=None)
    g = parser.add_argument_group("reading")
    g.add_argument("--step", type=int, default=None, help="ProfilerStep#N to read (default: the median step)")
    g.add_argument(
        "--clock",
        choices=CLOCKS,
        default="auto",
        help="auto (default): one host's shared clock, else aligned on the collective before the step",
    )
    g.add_argument(
        "--costs",
        default=None,
        help="op costs in seconds per device share, with --schedule (the stages they describe; default: "
        "fitted from the trace)",
    )
    g.add_argument(
        "--system", default=None, metavar="NAME|FILE", help="also print the prediction calibrated with this preset"
    )
    add_timeline_outputs(parser)


def run(args: argparse.Namespace) -> int:
    """Import and print; 0 the recorded order is valid (and the schedule's), 1 otherwise.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["no-such-dir"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: no-such-dir: no such trace file or directory
    """
    from ...compare.trace_check import check_trace
    from ...compare.trace_text import trace_report, trace_text
    from ...io import looks_like_file
    from ...io.profiler_trace import read_traces
    from ...measure import seconds_costs
    from ...measure.trace_import import recorded_size
    from ...systems.system import load_system

    check_schedule_options(args)
    check_timeline_outputs(args)
    system = load_system(args.system) if args.system else None
    traces = read_traces(args.traces)
    schedule, given = None, None
    if args.schedule is not None:
        if not looks_like_file(args.schedule):  # a family is sized by the trace; a file by itself
            p, m = recorded_size(traces)
            args.p = args.p if args.p is not None else p
            args.m = args.m if args.m is not None else m
        given = parsed_costs(args)  # read once, before the build
        schedule = build_schedule(schedule_source(args))
    costs = seconds_costs(schedule, dict(given or ())) if given and schedule is not None else None
    if args.costs and schedule is None:
        from ...core.errors import ParameterError

        raise ParameterError("costs", args.costs, "needs --schedule (the stages they describe)")
    tc = check_trace(traces, schedule, args.step, args.clock, costs, system)
    rep = trace_report(tc, args.system)
    write_timeline_outputs(args, tc.timeline, rep)
    if args.json:
        print_json(rep)
    else:
        print("\n".join([trace_text(tc, rep, None if args.no_table else chart_width(args)), *written_lines(args)]))
    return 0 if tc.report.valid and not tc.differences else 1


def check_schedule_options(args: argparse.Namespace) -> None:
    """Refuse ``-p``, ``-m``, the family options and ``--placement`` without ``--schedule``: they
    shape its family or its text table, and without it the trace alone decides what ran (they
    were ignored).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> check_schedule_options(parser.parse_args(["traces/", "--v", "2"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter v=2: --v shapes the family of --schedule; without --schedule the trace alone says what ran: give --schedule FAMILY, or leave it out
    """
    from ...core.errors import ParameterError

    if args.schedule is not None:
        return
    if args.placement is not None:  # it reads the text table of --schedule, and there is none
        raise ParameterError(
            "placement", args.placement, "reads the text table of --schedule: give --schedule FILE.txt, or leave it out"
        )
    given = {"p": args.p, "m": args.m}
    given.update({d[4:]: v for d, v in vars(args).items() if d.startswith("fam_")})
    for name, value in given.items():
        if value is not None:
            flag = f"-{name}" if name in ("p", "m") else f"--{name.replace('_', '-')}"
            raise ParameterError(
                name,
                value,
                f"{flag} shapes the family of --schedule; without --schedule the trace alone says what ran: "
                "give --schedule FAMILY, or leave it out",
            )


COMMAND = Command(
    "import-trace",
    "read a PyTorch profiler trace of a pipeline job: verify what ran, diff it, time it vs the prediction",
    add_arguments,
    run,
    description=__doc__ or "",
)
