"""``ppverify optimize [FAMILY|FILE]``: the optimal schedule, or the best found and a proven lower
bound, for the ops of one step under costs, communication delays and a memory cap (CP-SAT).

The ops come from a placement: the family's (or file's) placement and microbatch pipes, or
``--placement linear|v|loop|wave|bidirectional``. Costs and delays as in ``simulate``
(``--costs F=1,I=1,W=1 --comm-delay 1`` or ``--system NAME --model NAME``). ``--memory-cap`` is a
multiple of M_F (one microbatch's activations on one stage, ``8``) or a size (``64GiB``);
``--memory-model`` says how I and W free memory. ``--evaluate`` fixes each device's program order
to the family's instead (CP-SAT then reproduces the async engine's makespan). Exit code 0 when a
schedule was found, 1 when INFEASIBLE or UNKNOWN.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import Any

from ...costs import parse_costs
from ...errors import ParameterError
from ...placement import NAMED, Placement
from ...schedule import Schedule
from .. import Command
from ..common import add_cost_arguments, print_json


def add_problem_arguments(parser: argparse.ArgumentParser, family_optional: bool = True) -> None:
    """Arguments shared by ``optimize`` and ``gap``: schedule/placement, costs, presets, memory
    and solver options."""
    from ...schedules import families
    from ..presets_args import add_preset_arguments

    parser.add_argument(
        "schedule",
        metavar="FAMILY|FILE",
        nargs="?" if family_optional else None,
        default=None,
        help="a registered family or schedule file giving the placement, microbatch pipes "
        "(and, with --evaluate or for gap, the program order)",
    )
    parser.add_argument("-p", type=int, default=4, help="pipeline devices (default 4)")
    parser.add_argument("-m", type=int, default=None, help="microbatches per step (default: p)")
    seen: set[str] = set()
    for fam in families():
        for pr in fam.params:
            if pr.name in seen:
                continue
            seen.add(pr.name)
            parser.add_argument(
                f"--{pr.name.replace('_', '-')}",
                dest=f"fam_{pr.name}",
                type=pr.type,
                default=None,
                metavar=pr.name.upper(),
                help=f"{pr.help} ({fam.name}; default {pr.default})",
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
        metavar="X|SIZE",
        help="per-device activation cap: a multiple of M_F (e.g. 8) or bytes (e.g. 64GiB)",
    )
    from ...optimize import DEFAULT_MEMORY_MODEL

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
    from ...engines.simulate import SYNC_MODES

    s.add_argument(
        "--sync",
        choices=SYNC_MODES,
        default="eager",
        help="replica gradient all-reduce of two-pipe placements, as simulate runs it: eager (once "
        "a stage's last backward ends on every replica; default), after-flush, or none",
    )
    s.add_argument(
        "--dp-allreduce",
        type=int,
        nargs="?",
        const=2,
        default=0,
        metavar="N",
        help="end the step with a data-parallel gradient all-reduce among N pipeline replicas",
    )
    s.add_argument("--time-limit", type=float, default=60.0, help="seconds (default 60); never exceeded by much")
    s.add_argument("--workers", type=int, default=2, help="CP-SAT search workers (default 2)")
    s.add_argument("--seed", type=int, default=0, help="CP-SAT random seed (default 0)")


def _family_schedule(args: argparse.Namespace) -> Schedule | None:
    from ...io import load_schedule, looks_like_file
    from ...schedules import build, get_family

    if not args.schedule:
        return None
    if looks_like_file(args.schedule):
        return load_schedule(args.schedule)
    fam = get_family(args.schedule)
    params = {pr.name: getattr(args, f"fam_{pr.name}", None) for pr in fam.params}
    return build(fam.name, args.p, args.m if args.m is not None else args.p, **params)


def _placement(args: argparse.Namespace) -> Placement:
    name = getattr(args, "placement", None) or "linear"
    fn = NAMED[name]
    if name == "loop":
        return fn(args.p, getattr(args, "fam_v", None) or 2)
    if name == "wave":
        return fn(args.p, getattr(args, "fam_waves", None) or 1)
    return fn(args.p)


def problem_from_args(args: argparse.Namespace):
    """``(Problem, family schedule or None, description dict)`` from parsed arguments.

    Example:
        >>> ns = build_namespace(["-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--memory-cap", "4"])
        >>> pr, _, info = problem_from_args(ns)
        >>> pr.split, pr.memory_cap, info["placement"]
        (True, 4.0, 'linear')
    """
    from ...optimize import DEFAULT_MEMORY_MODEL, Problem, parse_memory_cap, parse_memory_model
    from ...optimize.problem import default_pipes
    from ..presets_args import preset_context_from_args

    sched = _family_schedule(args)
    if sched is not None and getattr(args, "placement", None):
        raise ParameterError("placement", args.placement, "give either a family/file or --placement, not both")
    if sched is not None:
        placement, m, pipes = sched.placement, sched.m, tuple(sched.pipe_of_mb)
    else:
        placement = _placement(args)
        m = args.m if args.m is not None else args.p
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ParameterError("m", m, "must be an integer >= 1")
        pipes = default_pipes(placement, m)
    carrier = sched or Schedule(placement, m, tuple(() for _ in range(placement.p)), pipes)
    ctx = preset_context_from_args(args, carrier)
    costs = ctx.costs
    named = parse_costs(args.costs) if args.costs else {}
    if args.backward == "auto":
        split = ("I" in named or "W" in named) or (sched is not None and sched.has_split_backward)
    else:
        split = args.backward == "split"
    mm = parse_memory_model(args.memory_model or DEFAULT_MEMORY_MODEL)
    applied = bool(args.memory_model) or not ctx.preset_mode
    if applied:
        costs = mm.apply(costs)
    cap = None
    if args.memory_cap is not None:
        from ...sizes import parse_size

        multiple = parse_memory_cap(args.memory_cap, mm)
        if costs.memory_unit == "bytes" and parse_size(args.memory_cap).is_bytes:
            # preset mode: the cost model counts bytes; take the size itself
            cap = float(parse_size(args.memory_cap).value)
        else:
            cap = float(Fraction(multiple) * Fraction(max(costs.activation)).limit_denominator(10**6))
    info = {
        "placement": placement.name,
        "p": placement.p,
        "m": m,
        "stages": placement.num_stages,
        "costs": costs.label or "custom",
        "comm": _comm_text(ctx),
        "memory_model": mm.name if applied else "the model preset's activation memory",
        "memory_cap": args.memory_cap,
        "backward": "split" if split else "full",
        "sync": getattr(args, "sync", "eager"),
        "dp_allreduce": getattr(args, "dp_allreduce", 0) or 0,
    }
    pr = Problem(placement, m, costs, ctx.comm, split, cap, args.objective, pipes, info["sync"], info["dp_allreduce"])
    return pr, sched, info


def _comm_text(ctx: Any) -> str:
    if ctx.system is not None:
        return f"system {getattr(ctx.system, 'name', ctx.system)}"
    return f"fixed delay {getattr(ctx.comm, 'delay', 0):g}"


def build_namespace(argv: list[str]) -> argparse.Namespace:
    """Parse ``optimize`` arguments (for tests and scripts)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Problem, solver and output options."""
    add_problem_arguments(parser)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--evaluate", action="store_true", help="keep the family's program order on every device (CP-SAT times it)"
    )
    out.add_argument("--save", metavar="OUT.json", default=None, help="write the schedule found (ppverify JSON)")
    out.add_argument("--table", action="store_true", help="print the schedule found as a slot table")
    out.add_argument("--no-chart", action="store_true", help="do not print the timeline chart")
    out.add_argument("--width", type=int, default=100, help="columns of the timeline chart (default 100)")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def summary_lines(res: Any, info: dict[str, Any]) -> list[str]:
    """The text report of a result (shared with ``gap``)."""
    u = "" if res.time_unit != "s" else " s"
    b = res.bounds
    val = "-" if res.objective is None else f"{res.objective:g}{u}"
    lines = [
        f"problem    {info['placement']} placement, p={info['p']}, m={info['m']}, {info['stages']} stages, "
        f"{info['backward']} backward, costs {info['costs']}, {info['comm']}",
        f"memory     cap {info['memory_cap'] or 'none'}"
        + (
            f" x M_F, {info['memory_model']}"
            if info["memory_cap"] and str(info["memory_cap"])[-1].isdigit()
            else (f", {info['memory_model']}" if info["memory_cap"] else "")
        ),
        f"status     {res.status}" + (f" ({res.reason})" if res.reason else ""),
        f"{res.objective_name:<10} {val}",
        *([f"collective {res.collectives}"] if res.collectives else []),
        f"bound      {res.bound:g}{u}  (critical path {b['critical_path']:g}, device work {b['device_work']:g}, "
        f"memory window {b['memory_window']:g}"
        + (f", one machine {b['one_machine']:g}" if b.get("one_machine") else "")
        + (f", device relaxation {b['device_relaxation']:g}" if b.get("device_relaxation") else "")
        + ")",
        f"gap        {'-' if res.gap is None else f'{100 * res.gap:.2f}%'}  (value - bound) / value",
        f"wall time  {res.wall_s:.1f} s  ({res.solver.get('workers', '-')} workers, seed {res.solver.get('seed', '-')}, "
        f"tick {res.tick:g}{'' if res.exact else ', durations rounded to ticks'})",
    ]
    if res.hint:
        lines.append(
            f"start      {res.hint}" + (f" ({res.hint_objective:g}{u})" if res.hint_objective is not None else "")
        )
    return lines


def run(args: argparse.Namespace) -> int:
    """Solve and print (text or JSON); save the schedule when asked."""
    from ...optimize import evaluate, optimize
    from ...optimize.deadline import Deadline

    deadline = Deadline.after(args.time_limit)  # the whole command, argument handling included
    pr, sched, info = problem_from_args(args)
    if args.evaluate:
        if sched is None:
            raise ParameterError("evaluate", True, "--evaluate needs a family or schedule file (its program order)")
        res = evaluate(
            sched,
            pr.costs,
            pr.comm,
            pr.memory_cap,
            pr.objective,
            args.time_limit,
            args.workers,
            args.seed,
            pr.sync,
            pr.dp_allreduce,
            deadline=deadline,
        )
    else:
        res = optimize(pr, args.time_limit, args.workers, args.seed, deadline=deadline)
    if args.save and res.schedule is not None:
        from ...io.json_comm import CommSettings
        from ...io.json_format import save_json

        # the transfers and collectives too, so simulate/plot of the file reproduce the value
        save_json(
            res.schedule,
            args.save,
            costs=pr.costs,
            comm=CommSettings(pr.comm, pr.sync, pr.dp_allreduce),
            comment=f"ppverify optimize: {res.status} {res.objective_name} {res.objective} bound {res.bound}",
        )
    if args.json:
        print_json(dict(info, **res.to_dict()))
    else:
        print("\n".join(summary_lines(res, info)))
        if res.timeline is not None and not args.no_chart:
            from .simulate import gantt

            print()
            print(gantt(res.timeline, args.width))
        if args.table and res.schedule is not None:
            from ...engines import run as run_engine
            from ...engines.table import format_table

            print()
            print(format_table(run_engine(res.schedule, pr.costs, semantics="slot")))
        if args.save and res.schedule is not None:
            print(f"saved      {args.save}")
    return 0 if res.status in ("OPTIMAL", "FEASIBLE") else 1


COMMAND = Command(
    "optimize",
    "optimal makespan/span or a certified lower bound (CP-SAT), with comm and memory caps",
    add_arguments,
    run,
    description=__doc__ or "",
)
