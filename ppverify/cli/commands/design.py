"""``ppverify design -p P -m M``: the fastest schedule CP-SAT finds at every memory budget of every
placement, each with its certified bound; the frontier of Pareto-optimal (peak, step time) points,
every frontier schedule verified by Z3; every registered family beside it at its own peak.

Budgets count one microbatch's activations on a device's whole share of layers as 1 (1F1B's first
device peaks at p). ``--budgets auto`` runs from the least feasible budget through every family's
peak to unconstrained. Each point stops on CP-SAT's deterministic work (``--work-limit``, as in
``optimize``), so the result is the same at any machine load and on any executor; ``--time-limit``
is a wall-clock ceiling on the whole run (none by default): points not started by then are not
run and the point running stops with what it has, each marked cut. A point whose bound is no
faster than a step already found within its budget (by a placement listed before its own, or a
family of a searched placement) is skipped: the fastest step at each budget is the same, and
``--all-points`` searches it anyway. Progress goes to stderr; Ctrl-C or SIGTERM
keeps the points done. Exit code 0 when a point's search found a schedule, 1 when a frontier
schedule fails Z3 or its gradients, 2 when no point found one in time (what was found, the
families and the bounds, still prints), 130 after Ctrl-C and 143 after SIGTERM (the frontier of
the points done printed).
"""

from __future__ import annotations

import argparse
import math

from .. import Command
from ..common import add_cost_arguments, print_json
from ..signals import stopped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Sizes, placements, budgets, costs and presets, limits, executor and outputs.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["-p", "4", "--budgets", "2,4,none"])
        >>> ns.p, ns.m, ns.budgets, ns.gap_limit, ns.workers
        (4, None, '2,4,none', 0.01, 1)
    """
    from ...design.options import OUTPUT_OPTIONS, SOLVER_OPTIONS, add_options
    from ...design.spec import DEFAULT_PLACEMENTS, Limits
    from ..optimize_args import add_limit_arguments
    from ..presets_args import add_preset_arguments

    parser.add_argument("-p", type=int, required=True, help="devices")
    parser.add_argument("-m", type=int, default=None, help="microbatches (default 3p)")
    parser.add_argument(
        "--placements",
        default=DEFAULT_PLACEMENTS,
        help=f"comma list of linear, v, loop:V, wave:W, bidirectional (default {DEFAULT_PLACEMENTS})",
    )
    parser.add_argument(
        "--budgets",
        default="auto",
        help="auto (least feasible, the families' peaks, unconstrained) or a comma list in activations "
        "of one microbatch on a device's share, none = unconstrained; with presets also sizes (8GiB)",
    )
    add_cost_arguments(parser)
    add_preset_arguments(parser)
    parser.add_argument("--backward", choices=("auto", "split", "full"), default="auto", help="split (I + W) or full B")
    s = parser.add_argument_group("solver")
    add_limit_arguments(s, Limits.work, " per point", "none: the work limit decides")
    add_options(s, SOLVER_OPTIONS)
    add_options(parser.add_argument_group("output"), OUTPUT_OPTIONS)


def run(args: argparse.Namespace) -> int:
    """Run the design and print it; write the files asked for.

    Example:
        Bad sizes are refused before any search:

        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["-p", "0"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter p=0: must be an integer >= 1
    """
    from ...core.time_limit import TimeLimitError
    from ...design.options import check_options, request_of
    from ...design.output import design_json, design_text, plot_design, save_design, saved_text
    from ...design.run import design
    from ...design.spec import Limits
    from ...optimize.solver_run import run_limits
    from ...optimize.solver_setup import check_seed
    from ...schedules.registry import check_int

    check_int("p", args.p, 1)
    m = 3 * args.p if args.m is None else args.m
    check_int("m", m, 1)
    work, wall = run_limits(args.time_limit, args.work_limit, Limits.work, wall_factor=None)
    check_seed(args.seed)  # before any work: CP-SAT takes 32 bits only
    scale = check_options(args)  # the extra works too: Limits' rule, >= 0 and at most 1e9
    request = request_of(args, m, work, None if math.isinf(wall) else wall)
    result = design(request, args.executor, args.workers, progress=not args.no_progress)
    done = []
    if args.save_dir:
        done.append(f"saved      {saved_text(save_design(result, args.save_dir))} and design.json in {args.save_dir}")
    if args.plot:
        plot_design(result, args.plot)
        done.append(f"plot       {args.plot}")
    if args.report:
        from ...design.page import write_design_page

        write_design_page(result, args.report)
        done.append(f"report     {args.report}")
    rows = None
    if args.measure:
        from ...design.measured import measure_design, measured_text

        rows = measure_design(result, scale)
    if args.json:
        out = design_json(result)
        if rows is not None:
            out["measured"] = [r.to_dict() for r in rows]
        print_json(out)
    else:
        print("\n".join([design_text(result), *([measured_text(rows)] if rows is not None else []), *done]))
    if result.interrupted:  # what was done is printed; the exit code says it is not all (as optimize)
        return stopped(args, "ppverify design", "the frontier of the points done")
    if not result.front or not result.found:
        flag = f"--time-limit {wall:g}" if result.cut else f"--work-limit {work:g}"
        raise TimeLimitError(flag, f"no point's search found a schedule in time ({result.cut} of {result.total} cut)")
    bad = [v for v in result.verified if v != "valid"] + [r.name for r in rows or () if not r.grad_ok]
    return 1 if bad else 0


COMMAND = Command(
    "design",
    "the memory-time frontier: CP-SAT's best schedule and certified bound at every budget, verified",
    add_arguments,
    run,
    description=__doc__ or "",
)
