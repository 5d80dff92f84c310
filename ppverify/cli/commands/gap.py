"""``ppverify gap FAMILY|FILE``: a schedule's makespan (async engine) against the certified lower
bound for the same ops, placement, costs, delays and memory, and the gap to bound between them,
``(value - bound) / value``.

Like for like by default: the optimum is capped at the family's own peak (its highest per-device
activation peak), so a schedule is never compared with one that needs more memory;
``--memory-cap X`` caps it at X instead and ``--memory-cap none`` leaves memory unlimited. The bound
is CP-SAT's proven bound (with the analytic and relaxation bounds); when CP-SAT also proves the
optimum, the gap is the family's distance to the best possible schedule at that memory. Exit code 0;
130 after Ctrl-C, 143 after SIGTERM during the search (the bound and gap so far printed).
"""

from __future__ import annotations

import argparse
import dataclasses

from ...core.sizes import memory_formatter
from ...optimize.request import own_peak_problem, summary_lines
from .. import Command
from ..common import file_faults, print_json, schedule_source
from ..gap_text import family_value, optimum_line, over_texts
from ..optimize_args import add_problem_arguments, problem_from_args
from ..optimize_report import memory_shown, shown_json
from ..signals import interruptible, stopped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The same problem options as ``optimize`` (the family is required), plus ``--json``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["zb-h1", "-p", "4", "--memory-cap", "none"])
        >>> ns.schedule, ns.memory_cap, ns.objective
        ('zb-h1', 'none', 'makespan')
    """
    add_problem_arguments(parser, family_optional=False)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    """Time the family, optimize the same problem, print value, bound and gap.

    Example:
        GPipe with two devices and two microbatches is already optimal at its own peak:

        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["gpipe", "-p", "2", "-m", "2"]))  # doctest: +ELLIPSIS
        family       gpipe p=2 m=2  (makespan under the async engine: 9; peak 2)
        memory       cap 2 activations: the family's own peak
        bound        9  certified lower bound on every schedule of these ops within that memory
        gap to bound 0.00%  (makespan - bound) / makespan
        optimum      9  (proven, peak 2; the family is 0 above it)
        ...
        0
    """
    from ...core.errors import ParameterError
    from ...optimize import optimize, relative_gap
    from ...optimize.deadline import Deadline
    from ...optimize.solver_run import Progress, run_limits

    work, wall = run_limits(args.time_limit, args.work_limit)
    pr, sched, info = problem_from_args(args)
    if sched is None:  # an empty FAMILY|FILE
        raise ParameterError("schedule", args.schedule, "gap needs a family or a schedule file")
    # the bound is on schedules of the family's own ops: a B against I and W compared different steps
    # (zb-h1 --backward full printed a bound below a proven optimum and a family "-6 above it")
    own = "split" if sched.has_split_backward else "full"
    if args.backward not in ("auto", own):
        why = f"gap bounds schedules of {sched.describe()}'s own ops, whose backward is {own}: leave it out"
        raise ParameterError(
            "backward", args.backward, f"{why} (optimize --backward {args.backward} bounds the others)"
        )
    pr, info = dataclasses.replace(pr, split=own == "split"), dict(info, backward=own)
    with file_faults(schedule_source(args), sched):  # a file's missing op or deadlock names the file
        value, tl = family_value(sched, pr.costs, pr.comm, pr.objective, pr.sync, pr.dp_allreduce)
    peak = tl.peak_memory().max() if len(tl.ops) else 0.0
    if info["memory_cap"] is None:  # like for like: the optimum may use the family's own peak
        pr, info = own_peak_problem(pr, info, float(peak))
    over_cap = pr.memory_cap is not None and peak > pr.memory_cap  # exact peaks, exact caps
    progress = Progress.for_command("gap", args.progress)
    with interruptible(args) as stop:  # Ctrl-C (SIGTERM): the bound so far is printed, then exit 130 (143)
        limits = dict(work_limit=work, deadline=Deadline.after(wall, stop), gap_limit=args.gap_limit)
        res = optimize(pr, wall, args.workers, args.seed, **limits, deterministic=True, progress=progress)
        if progress is not None:
            progress.close()
    bound = min(res.bound, value) if not over_cap else res.bound
    best = res.objective  # the order timed at the true durations where ticks were rounded (optimize)
    proven = res.status == "OPTIMAL" and res.exact
    opt_peak = float(res.timeline.peak_memory().max()) if res.timeline is not None and len(res.timeline.ops) else None
    out = dict(
        info,
        memory_cap=pr.memory_cap,
        optimum_peak=opt_peak,
        family=sched.describe(),
        family_value=value,
        family_peak_memory=float(peak),
        family_over_cap=bool(over_cap),
        bound=bound,
        # over the cap the bound is for other schedules (those within it): no gap to state
        gap_to_bound=None if over_cap else relative_gap(value, bound),
        optimum=res.objective if proven else None,
        best_found=best,
        status=res.status,
        # what ended the search: a wall-clock cut (its value may differ at another load), the gap
        # limit, or empty (CP-SAT's deterministic work, or a proof); solver: limits, workers, seed
        reason=res.reason,
        solver=dict(res.solver),
        objective=res.objective_name,
        analytic_bounds=dict(res.bounds),
        wall_s=round(res.wall_s, 3),
        time_unit=res.time_unit,
        collectives=res.collectives,
    )
    if args.json:  # memory in the unit the cap's label counts (activations of the largest share, or bytes)
        print_json(shown_json(out, pr))
        return stopped(args, "ppverify gap", "the bound and gap found so far") if stop.is_set() else 0
    u = "" if res.time_unit != "s" else " s"
    gap = out["gap_to_bound"]
    shown, fmt = memory_shown(pr), memory_formatter(pr.costs.memory_unit)

    def mem(x: float) -> str:  # raw units (the solver's) as printed: the cap's label counts the same
        return fmt(shown(x))

    # a peak over its cap with the digits that tell the two apart, as verify says a breach
    held, capped = (mem(peak), "") if not over_cap else over_texts(peak, pr)
    print(
        f"family       {sched.describe()}  ({pr.objective} under the async engine: {value:g}{u}; peak {held}"
        + (f", over the cap {capped}" if over_cap else "")
        + ")"
    )
    print(f"memory       {info['memory_cap_label']}")
    print(
        f"bound        {bound:g}{u}  certified lower bound on every schedule of these ops within that memory"
        + (f" ({res.collectives})" if res.collectives else "")
    )
    if over_cap:
        print(
            f"gap to bound -  (the family's peak {held} is over the cap {capped}: "
            "the bound holds for the schedules within the cap)"
        )
    else:
        print(f"gap to bound {'-' if gap is None else f'{100 * gap:.2f}%'}  ({pr.objective} - bound) / {pr.objective}")
    line = optimum_line(res, best, value, over_cap, wall, stop.is_set(), "" if opt_peak is None else mem(opt_peak))
    if line:
        print(line)
    print()
    print("\n".join(summary_lines(res, info)))
    return stopped(args, "ppverify gap", "the bound and gap found so far") if stop.is_set() else 0


COMMAND = Command(
    "gap",
    "a family's makespan against the certified lower bound (CP-SAT) and the gap",
    add_arguments,
    run,
    description=__doc__ or "",
)
