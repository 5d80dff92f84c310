"""The optimization problem on the command line, shared by ``optimize`` and ``gap``: the
arguments (schedule or placement, costs and presets, memory, solver) and the one function turning
them into an :class:`~ppverify.optimize.Problem`."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..core.errors import ParameterError
from ..core.limits import check_stages_mbs
from ..core.memory_cap import MEMORY_CAP_HELP
from ..core.placement import NAMED
from ..core.schedule import Schedule, carrier
from ..optimize.request import build_problem, optimize_request
from .common import add_cost_arguments, add_schedule_arguments, build_schedule, parsed_costs, schedule_source


def add_problem_arguments(parser: argparse.ArgumentParser, family_optional: bool = True) -> None:
    """Arguments shared by ``optimize`` and ``gap``: schedule/placement, costs, presets, memory
    and solver options.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_problem_arguments(parser)
        >>> ns = parser.parse_args(["-p", "4", "--placement", "v", "--costs", "F=1,I=1,W=1"])
        >>> ns.schedule, ns.placement, ns.costs, ns.objective, ns.backward, ns.workers
        (None, 'v', 'F=1,I=1,W=1', 'makespan', 'auto', 2)
    """
    from .presets_args import add_preset_arguments

    add_schedule_arguments(
        parser,
        optional=family_optional,
        help="a registered family or schedule file giving the placement, microbatch pipes "
        + ("(and, with --evaluate, the program order)" if family_optional else "and the program order compared"),
        placement=not family_optional,  # optimize's own --placement (below) reads a text table too
    )
    if family_optional:
        parser.add_argument(
            "--placement",
            choices=sorted(NAMED),
            default=None,
            help="placement when no family is given (default linear); loop uses --v chunks, wave --waves waves; "
            "with a text table (.txt), where its stages live",
        )
    add_cost_arguments(parser)
    add_preset_arguments(parser)
    g = parser.add_argument_group("memory")
    g.add_argument(
        "--memory-cap",
        default=None,
        metavar="N|NMF|SIZE|none",
        help=MEMORY_CAP_HELP
        + (" (default none: unlimited)" if family_optional else " (default: the family's own peak)"),
    )
    from ..optimize import DEFAULT_MEMORY_MODEL

    g.add_argument(
        "--memory-model",
        default=None,
        metavar="MODEL",
        help=f"how I and W free activations: zero-bubble[:h=..,a=..,s=..,b=..,layers=..], "
        f"w-frees-all, i-frees=FRACTION (default {DEFAULT_MEMORY_MODEL}); layers=L counts the layers "
        "of ONE STAGE, not of a device: it gives a size cap (10GiB) its bytes per stage activation, so "
        "on V or interleaved placements (v stages per device) give layers per device / v",
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

    add_collective_arguments(s)  # unset: a saved file's own settings, else eager (as simulate)
    add_limit_arguments(s)
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
        "(value - bound) / value, e.g. 0.01 for 1 %% (default: search until --work-limit, or the "
        "--time-limit wall clock, stops it)",
    )
    s.add_argument("--workers", type=int, default=2, help="CP-SAT search workers (default 2)")
    s.add_argument("--seed", type=int, default=0, help="CP-SAT random seed (default 0)")


def add_limit_arguments(
    group: Any,
    default_work: float | None = None,
    per: str = "",
    wall_default: str = "4 x the work limit + 30 s for the phases it does not count",
) -> None:
    """``--work-limit`` (CP-SAT's deterministic seconds: the stop, so the same command gives the
    same answer at any load) and ``--time-limit`` (a wall-clock ceiling), read by
    :func:`~ppverify.optimize.solver_run.run_limits`; ``optimize``, ``gap`` and ``design`` (work
    ``per`` point, no ceiling by default) take them from here.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_limit_arguments(parser)
        >>> ns = parser.parse_args(["--work-limit", "5"])
        >>> ns.work_limit, ns.time_limit
        (5.0, None)
    """
    from ..optimize.solver_run import DEFAULT_WORK

    work = DEFAULT_WORK if default_work is None else default_work
    group.add_argument(
        "--work-limit",
        type=float,
        default=None,
        metavar="S",
        help=f"CP-SAT work{per} in its deterministic seconds: the same command gives the same answer at any "
        f"machine load, unless the wall-clock ceiling stops it first, which the status then says "
        f"(default {work:g}, at most --time-limit)",
    )
    group.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="S",
        help=f"wall-clock ceiling in seconds, never exceeded by much (default: {wall_default})",
    )


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
    from ..optimize.footprint import check_family_footprint, checked_footprint
    from ..optimize.problem import default_pipes
    from ..optimize.solver_setup import check_seed
    from ..schedules import get_family
    from ..systems.preset_models import resolve_presets, settings_from
    from .presets_args import refuse_sync_without_replicas

    check_seed(getattr(args, "seed", 0))  # before any build: CP-SAT takes 32 bits only
    workers = getattr(args, "workers", 2)
    # --costs, --memory-model and --memory-cap read once, here, before any build; the presets get the parsed costs
    text = {k: getattr(args, k) for k in ("backward", "memory_model", "memory_cap", "objective")}
    sync, dp = getattr(args, "sync", None), getattr(args, "dp_allreduce", None)  # None: not given
    request = optimize_request(parsed_costs(args), **text, sync=sync or "eager", dp_allreduce=dp or 0)
    if args.schedule and not looks_like_file(args.schedule):  # --max-memory-gib before the build
        fam = get_family(args.schedule)
        params = {q.name: getattr(args, f"fam_{q.name}", None) for q in fam.params}
        m = args.m if args.m is not None else args.p  # the op limit: the build's, below
        check_family_footprint(fam.name, args.p, m, params, workers, then_build=True)
    # --costs read above; --placement beside a FAMILY|FILE reads a text table, and is refused by anything else
    sched = build_schedule(schedule_source(args)) if args.schedule else None
    if sched is not None:
        placement, m, pipes = sched.placement, sched.m, tuple(sched.pipe_of_mb)
    else:
        name = getattr(args, "placement", None) or "linear"
        check_no_family_options(args, name)
        v, waves = placement_options(name, getattr(args, "fam_v", None), getattr(args, "fam_waves", None))
        placement = placement_from_text(name, args.p, v=v, waves=waves)
        m = args.m if args.m is not None else args.p
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ParameterError("m", m, "must be an integer >= 1")
        check_stages_mbs(placement.num_stages, m, f"--placement {placement.name} -p {placement.p} -m {m}")
        pipes = default_pipes(placement, m)
    refuse_sync_without_replicas(sync, placement, pipes)  # an option given, not a file's (read below)
    target = sched or carrier(placement, m, pipes)
    ctx = resolve_presets(dataclasses.replace(settings_from(vars(args)), costs=request.costs), target)
    file_memory = False
    if sched is not None:  # a saved file's costs and communication, as simulate reads them
        from .file_settings import timing_from_file

        saved = timing_from_file(args, sched, ctx)
        ctx, sync, dp = saved.ctx, saved.sync, saved.dp_allreduce
        file_memory = "costs" in saved.from_file  # and its activation memory, as verify reads it
    comm = f"system {getattr(ctx.system, 'name', ctx.system)}" if ctx.system is not None else None
    comm = comm or f"fixed delay {getattr(ctx.comm, 'delay', 0):g}"
    request = dataclasses.replace(
        request,
        preset_mode=ctx.preset_mode,
        comm_text=comm,
        sync=sync or "eager",
        dp_allreduce=dp or 0,
        file_memory=file_memory,
    )
    splits = sched is not None and sched.has_split_backward
    pr, info = build_problem(placement, m, pipes, ctx.costs, ctx.comm, request, splits)
    mm = request.memory_model
    if mm is not None and not pr.split and mm.name.startswith(("i-frees", "w-frees-all")):  # else unread
        raise ParameterError(
            "memory-model",
            args.memory_model,
            "says what I frees and what W frees, and this backward is full (its B frees it all), so it changes "
            "nothing: leave it out, or split the backward (optimize --backward split, --costs F=1,I=1,W=1)",
        )
    pr = checked_footprint(pr, workers)  # before gap runs the family or optimize builds anything; once
    return pr, sched, info


def check_no_family_options(args: argparse.Namespace, placement: str) -> None:
    """Refuse the family parameters that nothing reads when no family is given (``optimize -p 4
    --units concat`` ran the linear placement and ignored ``--units``); ``--v`` and ``--waves``
    shape ``--placement loop`` and ``wave`` (:func:`placement_options`).

    Example:
        >>> check_no_family_options(argparse.Namespace(fam_units="concat", fam_v=None), "linear")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter units=concat: --units is a family parameter and no family is given (--placement linear reads none): name a family or leave it out
    """
    for key, value in sorted(vars(args).items()):
        if key.startswith("fam_") and key not in ("fam_v", "fam_waves") and value is not None:
            raise ParameterError(
                key[4:],
                value,
                f"--{key[4:]} is a family parameter and no family is given (--placement {placement} reads none): "
                "name a family or leave it out",
            )


def placement_options(placement: str, v: int | None, waves: int | None) -> tuple[int | None, int | None]:
    """``--v`` and ``--waves`` for ``--placement``: ``loop`` reads ``--v`` and ``wave`` reads
    ``--waves``; any other placement would ignore them (``--placement v --v 3`` ran the V's two
    stages per device), so they are refused there, and 0 is refused as it is with a family
    (it used to take the default).

    Example:
        >>> placement_options("loop", 3, None)
        (3, None)
        >>> placement_options("v", 3, None)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter v=3: --v shapes --placement loop (its chunks per device); --placement v does not read it: leave it out
    """
    from ..schedules.registry import check_int

    for flag, value, reader in (("v", v, "loop"), ("waves", waves, "wave")):
        if value is None:
            continue
        if placement != reader:
            what = "its chunks per device" if reader == "loop" else "its waves"
            raise ParameterError(
                flag,
                value,
                f"--{flag} shapes --placement {reader} ({what}); --placement {placement} does not read it: "
                "leave it out",
            )
        check_int(flag, value, 1)
    return v, waves


def evaluated_problem(
    args: argparse.Namespace, problem: Any, sched: Schedule | None, info: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The problem and description ``optimize --evaluate`` reports: the family's own order is
    timed, so its backward (``B``, or ``I`` and ``W``) is the problem's whatever ``--costs``
    names (``1f1b --costs F=1,I=1,W=1`` was described as a split backward while its ``B`` ran).
    Options that the fixed order would ignore are refused: a ``--backward`` the order does not
    have, ``--gap-limit`` (nothing is searched) and ``--table`` with ``--json``. Without
    ``--evaluate``: only the last check, and the problem as given.

    Example:
        >>> from ppverify.schedules import build
        >>> ns = argparse.Namespace(evaluate=True, backward="split", gap_limit=None, json=False, table=False)
        >>> evaluated_problem(ns, None, build("1f1b", p=2, m=2), {})
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter backward=split: --evaluate times 1f1b p=2 m=2 in its own order, whose backward is full: drop --backward (or --evaluate to search)
    """
    if getattr(args, "json", False) and getattr(args, "table", False):
        raise ParameterError("table", True, "--json prints no slot table (its programs are in the JSON): drop --table")
    if not args.evaluate:
        return problem, info
    if sched is None:
        raise ParameterError("evaluate", True, "--evaluate needs a family or schedule file (its program order)")
    from ..core.dag import build_dag
    from ..core.send_gates import late_sends, send_gates

    late = late_sends(build_dag(sched, check=False)) if send_gates(sched) else []  # a DAG only where SENDs are
    if late:  # CP-SAT's model sends each output at its producer's end: it would time a faster order
        raise ParameterError(
            "evaluate",
            True,
            f"the file posts SENDs after a later op than their producer ({', '.join(late[:3])}), which the "
            "optimizer's model does not hold: simulate or verify --makespan-le time it as written",
        )
    own = "split" if sched.has_split_backward else "full"
    if args.backward not in ("auto", own):
        raise ParameterError(
            "backward",
            args.backward,
            f"--evaluate times {sched.describe()} in its own order, whose backward is {own}: drop --backward "
            "(or --evaluate to search)",
        )
    if getattr(args, "gap_limit", None) is not None:
        raise ParameterError(
            "gap-limit", args.gap_limit, "--evaluate times one fixed order (no search to stop early): drop --gap-limit"
        )
    return dataclasses.replace(problem, split=own == "split"), dict(info, backward=own)


def wall_flag(time_limit: float | None, work_limit: float | None, work: float, wall: float) -> str:
    """How an error names the wall clock that stopped a run, followed by its seconds: ``--time-limit``
    when given, else the default it took from the work limit (the errors said ``--time-limit
    0.004`` to a user who had given only ``--work-limit 0.001``).

    Example:
        >>> wall_flag(2.0, None, 2.0, 2.0)
        '--time-limit'
        >>> wall_flag(None, 0.5, 0.5, 32.0)
        '--time-limit (default 4 x --work-limit 0.5 + 30 s)'
        >>> wall_flag(None, None, 60.0, 270.0)
        '--time-limit (default 4 x the default --work-limit 60 + 30 s)'
        >>> wall_flag(None, 1e9, 1e9, 1e9)  # the default capped at the longest --time-limit
        '--time-limit (default 4 x --work-limit 1e+09 + 30 s, at most 1e+09)'
    """
    from ..core.time_limit import MAX_SECONDS
    from ..optimize.solver_run import WALL_ALLOWANCE, WALL_FACTOR

    if time_limit is not None:
        return "--time-limit"
    work_text = f"--work-limit {work:g}" if work_limit is not None else f"the default --work-limit {work:g}"
    if wall >= MAX_SECONDS:  # wall_ceiling's cap: the factor is no longer (wall - 30) / work
        return f"--time-limit (default {WALL_FACTOR:g} x {work_text} + {WALL_ALLOWANCE:g} s, at most {MAX_SECONDS:g})"
    return f"--time-limit (default {(wall - WALL_ALLOWANCE) / work:g} x {work_text} + {WALL_ALLOWANCE:g} s)"


def unknown_error(res: Any, clock_flag: str, wall: float, work: float) -> Exception:
    """The one-line error of a run that ended without a schedule (status UNKNOWN), naming the
    limit that ended it: the wall clock (``clock_flag``, :func:`wall_flag`, and ``wall`` seconds)
    when it cut a phase, else CP-SAT's deterministic work (``--work-limit``).

    Example:
        >>> from types import SimpleNamespace
        >>> res = SimpleNamespace(solver={}, reason="", bound=96.0, time_unit="units")
        >>> str(unknown_error(res, "--time-limit", 8.0, 2.0))
        '--work-limit 2: no schedule found within that work (status UNKNOWN, best bound 96)'
        >>> res = SimpleNamespace(solver={"wall_limited": "search"}, reason="", bound=96.0, time_unit="units")
        >>> str(unknown_error(res, "--time-limit", 8.0, 2.0))
        '--time-limit 8: no schedule found in time (status UNKNOWN, best bound 96)'
    """
    from ..core.time_limit import TimeLimitError

    unit = " s" if res.time_unit == "s" else ""
    best = f"status UNKNOWN, best bound {res.bound:g}{unit}"
    if "wall_limited" in res.solver or res.reason.startswith("wall-clock"):
        return TimeLimitError(f"{clock_flag} {wall:g}", f"no schedule found in time ({best})")
    return TimeLimitError(f"--work-limit {work:g}", f"no schedule found within that work ({best})")
