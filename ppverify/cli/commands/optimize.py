"""``ppverify optimize [FAMILY|FILE]``: the optimal schedule, or the best found and a proven lower
bound, for the ops of one step under costs, communication delays and a memory cap (CP-SAT).

The ops come from a placement: the family's (or file's) placement and microbatch pipes, or
``--placement linear|v|loop|wave|bidirectional``. Costs and delays as in ``simulate``
(``--costs F=1,I=1,W=1 --comm-delay 1`` or ``--system NAME --model NAME``). ``--memory-cap`` is read
as in every command: activations of a device's whole share (``8``), ``8MF`` stage activations,
a size (``64GiB``) or ``none``;
``--memory-model`` says how I and W free memory. ``--evaluate`` fixes each device's program order
to the family's instead (CP-SAT then reproduces the async engine's makespan). Exit code 0 when a
schedule was found, 1 when INFEASIBLE (a verdict), 2 when a limit ended the run without a
schedule (UNKNOWN: the wall clock or CP-SAT's work, named in the error line, as for ``verify
--time-limit``; the report and its bound still print).

The search stops on CP-SAT's deterministic work (``--work-limit``), so the same command gives the
same answer at any load; ``--time-limit`` is a wall-clock ceiling. ``--progress`` (always on a
terminal) shows phase, incumbent, bound and gap on stderr; Ctrl-C ends the search, prints (and
saves) the best schedule and bound so far, then exits with 130 (SIGTERM likewise, exit 143).
"""

from __future__ import annotations

import argparse

from ...optimize.request import result_text, save_result, solve, summary_lines
from .. import Command
from ..common import print_json
from ..optimize_args import add_problem_arguments, evaluated_problem, problem_from_args, unknown_error, wall_flag
from ..optimize_report import shown_json
from ..signals import interruptible, stopped
from ..timeline_outputs import WIDTH_HELP, chart_width

__all__ = ["COMMAND", "add_problem_arguments", "build_namespace", "problem_from_args", "summary_lines"]


def build_namespace(argv: list[str]) -> argparse.Namespace:
    """Parse ``optimize`` arguments (for tests and scripts).

    Example:
        >>> ns = build_namespace(["1f1b", "-p", "4", "--memory-cap", "3"])
        >>> ns.schedule, ns.p, ns.memory_cap, ns.objective, ns.workers
        ('1f1b', 4, '3', 'makespan', 2)
    """
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Problem, solver and output options.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["-p", "2", "--placement", "v", "--save", "v.json"])
        >>> ns.schedule, ns.placement, ns.save, ns.evaluate, ns.width
        (None, 'v', 'v.json', False, None)
    """
    add_problem_arguments(parser)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--evaluate", action="store_true", help="keep the family's program order on every device (CP-SAT times it)"
    )
    out.add_argument("--save", metavar="OUT.json", default=None, help="write the schedule found (ppverify JSON)")
    out.add_argument("--table", action="store_true", help="print the schedule found as a slot table")
    out.add_argument("--no-chart", action="store_true", help="do not print the timeline chart")
    out.add_argument("--width", type=int, default=None, metavar="COLUMNS", help=WIDTH_HELP)
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    """Solve and print (text or JSON); save the schedule when asked. Ctrl-C (SIGTERM) during the
    search: the best schedule and bound so far are printed and saved, then exit code 130 (143).

    Example:
        ``--evaluate`` without a family is refused before the search:

        >>> run(build_namespace(["-p", "2", "--evaluate"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter evaluate=True: --evaluate needs a family or schedule file (its program order)
    """
    from ...core.time_limit import TimeLimitError, time_limit
    from ...optimize.deadline import Deadline
    from ...optimize.solver_run import Progress, run_limits

    work, wall = run_limits(args.time_limit, args.work_limit)
    clock = wall_flag(args.time_limit, args.work_limit, work, wall)
    # checked before the search; --table uses it too, so --no-chart beside --table keeps it
    width = chart_width(args, ("json",) if args.table else ("no_chart", "json"))
    if args.save:  # a path that cannot be written is bad input: refused before the search, not after
        from ...core.files import check_output_path

        check_output_path(args.save, "--save", json_file=True)
    progress = Progress.for_command("optimize", args.progress)
    with interruptible(args) as stop:
        deadline = Deadline.after(wall, stop)  # the whole command, argument handling included
        built = None
        try:
            with time_limit(wall, clock):  # building a family or reading a file checks no deadline
                built = problem_from_args(args)
        except TimeLimitError:
            if built is None:  # the building itself ran out: no problem to report on
                raise
            # built, but after the limit: the search below finds the deadline passed and reports
            # UNKNOWN with the bounds that need no search (exit 2), as --help promises
        pr, sched, info = built
        pr, info = evaluated_problem(args, pr, sched, info)
        gap_limit = getattr(args, "gap_limit", None)
        res = solve(
            pr, sched if args.evaluate else None, wall, args.workers, args.seed, deadline, gap_limit, work, progress,
            start=sched,  # a file's or family's order starts the search too: never slower than it
        )  # fmt: skip
        if progress is not None:
            progress.close()
    saved = bool(args.save) and res.schedule is not None and res.objective is not None
    if saved:
        save_result(res, pr, args.save)
    if args.json:
        # memory in the unit the cap's label counts (activations of the largest share, or bytes)
        out = shown_json(dict(info, **res.to_dict()), pr)
        print_json(dict(out, **({"saved": args.save if saved else None} if args.save else {})))
    else:
        table_width = width if args.width is not None else None
        print(result_text(res, info, pr, None if args.no_chart else width, args.table, table_width))
        if args.save:
            print(f"saved      {args.save}" if saved else f"not saved  {args.save}: no schedule found ({res.status})")
    if stop.is_set():
        kept = res.objective is not None  # --evaluate keeps the order given, not a schedule found
        return stopped(
            args, "ppverify optimize", "the best schedule and bound found so far" if kept else "the bound so far"
        )
    if res.status == "UNKNOWN":
        raise unknown_error(res, clock, wall, work)
    return 0 if res.status in ("OPTIMAL", "FEASIBLE") else 1


COMMAND = Command(
    "optimize",
    "optimal makespan/span or a certified lower bound (CP-SAT), with communication and a memory cap",
    add_arguments,
    run,
    description=__doc__ or "",
)
