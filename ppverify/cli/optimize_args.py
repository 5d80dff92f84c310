"""The optimization problem on the command line, shared by ``optimize`` and ``gap``: the
arguments (schedule or placement, costs and presets, memory, solver) and the one function turning
them into an :class:`~ppverify.optimize.Problem`."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.errors import ParameterError
from ..core.limits import check_stages_mbs
from ..core.memory_cap import MEMORY_CAP_HELP
from ..core.placement import NAMED
from ..core.schedule import Schedule
from ..optimize.request import Request, build_problem
from .common import add_cost_arguments, add_schedule_arguments, schedule_from_args


def add_problem_arguments(parser: argparse.ArgumentParser, family_optional: bool = True) -> None:
    """Arguments shared by ``optimize`` and ``gap``: schedule/placement, costs, presets, memory
    and solver options."""
    from .presets_args import add_preset_arguments

    add_schedule_arguments(
        parser,
        optional=family_optional,
        help="a registered family or schedule file giving the placement, microbatch pipes "
        "(and, with --evaluate or for gap, the program order)",
    )
    if family_optional:
        parser.add_argument(
            "--placement",
            choices=sorted(NAMED),
            default=None,
            help="placement when no family is given (default linear); loop uses --v chunks, wave --waves waves",
        )
    add_cost_arguments(parser)
    add_preset_arguments(parser)
    g = parser.add_argument_group("memory")
    g.add_argument(
        "--memory-cap",
        default=None,
        metavar="N|NMF|SIZE|none",
        help=MEMORY_CAP_HELP + " (gap: default the family's own peak)",
    )
    from ..optimize import DEFAULT_MEMORY_MODEL

    g.add_argument(
        "--memory-model",
        default=None,
        metavar="MODEL",
        help=f"how I and W free activations: zero-bubble[:h=..,a=..,s=..,b=..,layers=..], "
        f"w-frees-all, i-frees=FRACTION (default {DEFAULT_MEMORY_MODEL})",
    )
    s = parser.add_argument_group("solver")
    s.add_argument(
        "--objective",
        choices=("makespan", "span"),
        default="makespan",
        help="makespan (default) or span: the zero-bubble paper's longest per-device span",
    )
    s.add_argument(
        "--backward",
        choices=("auto", "split", "full"),
        default="auto",
        help="split (I + W) or full (B) backward; auto: split when --costs names I or W or the family splits it",
    )
    from .file_settings import add_collective_arguments

    add_collective_arguments(s, sync_default="eager")  # as simulate runs them, no saved file read
    s.add_argument(
        "--work-limit",
        type=float,
        default=None,
        metavar="S",
        help="CP-SAT work in its deterministic seconds: the same command gives the same answer at any "
        "machine load (default 60, at most --time-limit)",
    )
    s.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="S",
        help="wall-clock ceiling in seconds, never exceeded by much (default: 4 x the work limit)",
    )
    s.add_argument(
        "--progress",
        action="store_true",
        help="print phase, incumbent, bound and gap on stderr as they change (always on a terminal)",
    )
    s.add_argument(
        "--gap-limit",
        type=float,
        default=None,
        metavar="FRACTION",
        help="stop once the best schedule is within this relative gap of the proven bound, "
        "(value - bound) / value, e.g. 0.01 for 1 %% (default: search to the time limit)",
    )
    s.add_argument("--workers", type=int, default=2, help="CP-SAT search workers (default 2)")
    s.add_argument("--seed", type=int, default=0, help="CP-SAT random seed (default 0)")


def problem_from_args(args: argparse.Namespace) -> tuple[Any, Schedule | None, dict[str, Any]]:
    """``(Problem, family schedule or None, description dict)`` from parsed arguments.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_problem_arguments(parser)
        >>> ns = parser.parse_args(["-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--memory-cap", "4"])
        >>> pr, _, info = problem_from_args(ns)
        >>> pr.split, pr.memory_cap, info["placement"]
        (True, 4.0, 'linear')
    """
    from ..core.placement import placement_from_text
    from ..io import looks_like_file
    from ..optimize.footprint import check_family_footprint, check_footprint
    from ..optimize.problem import default_pipes
    from ..schedules import get_family
    from .presets_args import preset_context_from_args

    workers = getattr(args, "workers", 2)
    if args.schedule and not looks_like_file(args.schedule):  # --max-memory-gib before the build
        fam = get_family(args.schedule)
        params = {q.name: getattr(args, f"fam_{q.name}", None) for q in fam.params}
        check_family_footprint(fam.name, args.p, args.m if args.m is not None else args.p, params, workers)
    sched = schedule_from_args(args) if args.schedule else None
    if sched is not None and getattr(args, "placement", None):
        raise ParameterError("placement", args.placement, "give either a family/file or --placement, not both")
    if sched is not None:
        placement, m, pipes = sched.placement, sched.m, tuple(sched.pipe_of_mb)
    else:
        # a given --v 0 or --waves 0 takes the default, as it always has here
        v, waves = getattr(args, "fam_v", None) or None, getattr(args, "fam_waves", None) or None
        placement = placement_from_text(getattr(args, "placement", None) or "linear", args.p, v=v, waves=waves)
        m = args.m if args.m is not None else args.p
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ParameterError("m", m, "must be an integer >= 1")
        check_stages_mbs(placement.num_stages, m, f"--placement {placement.name} -p {placement.p} -m {m}")
        pipes = default_pipes(placement, m)
    carrier = sched or Schedule(placement, m, tuple(() for _ in range(placement.p)), pipes)
    ctx = preset_context_from_args(args, carrier)
    comm = f"system {getattr(ctx.system, 'name', ctx.system)}" if ctx.system is not None else None
    request = Request(
        args.costs,
        args.backward,
        args.memory_model,
        args.memory_cap,
        args.objective,
        getattr(args, "sync", "eager"),
        getattr(args, "dp_allreduce", 0) or 0,
        ctx.preset_mode,
        comm or f"fixed delay {getattr(ctx.comm, 'delay', 0):g}",
    )
    splits = sched is not None and sched.has_split_backward
    pr, info = build_problem(placement, m, pipes, ctx.costs, ctx.comm, request, splits)
    check_footprint(pr, workers)  # before gap runs the family or optimize builds anything
    return pr, sched, info
