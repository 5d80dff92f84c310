"""CP-SAT with the program order fixed (:func:`evaluate`: a schedule's own value, what the async
engine computes) and the problem a schedule poses (:func:`problem_for`: the same ops, placement
and pipes)."""

from __future__ import annotations

import time

import numpy as np

from ..core.comm import NO_COMM, CommModel
from ..core.costs import CostModel
from ..core.errors import DeadlockError, ParameterError
from ..core.ops import Overlap
from ..core.schedule import Schedule
from ..core.timeline import Timeline
from .bounds import lower_bounds
from .cap_text import cap_breach
from .deadline import Deadline, WallLimitReached
from .heuristic import order_peaks, time_programs
from .interrupt import stoppable
from .model import build_model
from .problem import Problem, instance
from .result import CommonFields, OptimizeResult
from .solver_run import Progress
from .solver_setup import (
    STATUS,
    check_limits,
    collectives_text,
    cut_reason,
    cut_result,
    cut_stats,
    make_solver,
    run_solver,
    schedule_from_starts,
    solver_stats,
    true_timed,
)


def problem_for(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel = NO_COMM,
    memory_cap: float | None = None,
    objective: str = "makespan",
    sync: str = "eager",
    dp_allreduce: int = 0,
) -> Problem:
    """The optimization problem over the same ops, placement and microbatch pipes as a schedule,
    with the collectives the async engine runs under ``sync`` and ``dp_allreduce``.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=3)
        >>> problem_for(s, CostModel.abstract(s.placement)).num_ops
        12
    """
    return Problem(
        schedule.placement,
        schedule.m,
        costs,
        comm,
        schedule.has_split_backward,
        memory_cap,
        objective,
        tuple(schedule.pipe_of_mb),
        sync,
        dp_allreduce,
    )


def evaluate(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel = NO_COMM,
    memory_cap: float | None = None,
    objective: str = "makespan",
    time_limit: float = 60.0,
    workers: int = 2,
    seed: int = 0,
    sync: str = "eager",
    dp_allreduce: int = 0,
    deadline: Deadline | None = None,
    work_limit: float | None = None,
    progress: Progress | None = None,
) -> OptimizeResult:
    """CP-SAT with each device's program order fixed to the schedule's: the optimum is the
    schedule's own value (for the makespan, what the async engine computes with the same ``sync``
    and ``dp_allreduce``); INFEASIBLE when the order breaks the memory cap (decided from the
    order alone, :func:`order_peaks`, before any search). ``deadline`` as for :func:`optimize`
    (UNKNOWN when the clock runs out before the solver on the span; the makespan is then the
    order's as-soon-as-possible timing, exact without CP-SAT); ``work_limit``: CP-SAT's deterministic
    seconds, as for :func:`optimize`; ``progress`` is told the order's value and bound as the
    timing finds them.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("1f1b", p=4, m=4)
        >>> evaluate(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(1)).objective
        31.0

    Durations in seconds with no small common tick are rounded to ticks for CP-SAT; the value is
    then the order timed at the true durations by the async engine, as ``optimize`` gives it
    (:func:`~ppverify.optimize.solver_setup.true_timed`), so it is what ``simulate`` gives.
    """
    check_limits(time_limit, workers, seed)
    if any(type(a) is Overlap for prog in schedule.programs for a in prog):
        raise ParameterError(
            "schedule",
            schedule.describe(),
            "evaluate mode does not model overlapped F&B slots; run them in sequence first",
        )
    problem = problem_for(schedule, costs, comm, memory_cap, objective, sync, dp_allreduce)
    dl = deadline if deadline is not None else Deadline.after(time_limit)
    rounded = _on_ticks(problem, schedule, time_limit, workers, seed, dl, work_limit, progress)
    return true_timed(problem, rounded)


def _on_ticks(
    problem: Problem,
    schedule: Schedule,
    time_limit: float,
    workers: int,
    seed: int,
    dl: Deadline,
    work_limit: float | None,
    progress: Progress | None,
) -> OptimizeResult:
    """:func:`evaluate` on the instance's ticks (durations rounded where they share no small tick)."""
    costs, objective = problem.costs, problem.objective
    t0, hard = dl.start, dl.at(0.9)
    try:
        inst = instance(problem, schedule, deadline=hard)
        bounds = lower_bounds(inst, deadline=hard)
    except WallLimitReached:
        return cut_result(problem, t0, time_limit, workers, seed)
    order = [list(inst.device_ops(d)) for d in range(inst.p)]
    common: CommonFields = dict(
        objective_name=objective,
        bounds=bounds.as_dict(inst.tick),
        tick=inst.tick,
        exact=inst.exact,
        time_unit=costs.time_unit,
        collectives=collectives_text(inst),
        memory_cap=problem.memory_cap,
    )

    def infeasible(reason: str) -> OptimizeResult:  # decided from the order alone, before any search
        # no timing of this order holds the cap: its bound is infinite, as an INFEASIBLE optimize's
        # (the free problem's bounds stay in ``bounds``: they bound other orders, not this one)
        return OptimizeResult(
            "INFEASIBLE",
            objective=None,
            bound=float("inf"),
            wall_s=time.monotonic() - t0,
            schedule=schedule,
            timeline=None,
            hint=schedule.family,
            hint_objective=None,
            reason=reason,
            **common,
        )

    try:
        asap = time_programs(inst, [[inst.dag.ops[i] for i in prog] for prog in order], schedule.family)
    except DeadlockError as exc:
        return infeasible(f"the program order cannot run: {exc}")
    over = cap_breach(inst, order)
    if over:
        return infeasible(f"the program order breaks the memory cap: {over}")
    hint = asap.starts
    if progress is not None:  # the order's own timing; the bounds on all schedules are no bound on it
        progress.phase("timing the order", asap.objective * inst.tick)

    def timed_asap(stats: dict, chart: bool = True) -> OptimizeResult:
        # the makespan of a fixed order is its as-soon-as-possible timing (each op starts when its
        # inputs and the op before it on its device allow; collectives after the ops they wait
        # for): exact without CP-SAT, so a limit that stops CP-SAT does not make it UNKNOWN
        value = asap.objective * inst.tick
        note = "the order timed as soon as possible (the least makespan of a fixed order)"
        tl = None
        if chart:  # not where the clock cut the model building: the timeline is as large
            _, tl = schedule_from_starts(inst, hint, schedule.family)
            tl = Timeline(schedule, costs, "asap", tl.ops, tl.device, tl.start, tl.end, tl.transfers, info=tl.info)
        return OptimizeResult(
            "OPTIMAL",
            objective=value,
            bound=value,
            wall_s=time.monotonic() - t0,
            schedule=schedule,
            timeline=tl,
            hint=schedule.family,
            hint_objective=value,
            solver=dict(stats, proof=note),
            **common,
        )

    try:
        built = build_model(inst, bounds, order=order, hint=hint, deadline=hard)
    except WallLimitReached:
        cut = {"workers": workers, "seed": seed, "time_limit_s": time_limit, "wall_limited": "model building"}
        if objective == "makespan":
            return timed_asap(cut, chart=False)
        return OptimizeResult(
            "UNKNOWN",
            objective=None,
            bound=inst.bound_time(bounds.best),
            wall_s=time.monotonic() - t0,
            schedule=schedule,
            timeline=None,
            hint=schedule.family,
            hint_objective=asap.objective * inst.tick,
            reason=cut_reason(["model building"]),
            solver={"workers": workers, "seed": seed, "time_limit_s": time_limit, "wall_limited": "model building"},
            **common,
        )
    solver = make_solver(max(0.01, hard.remaining()), workers, seed, work_limit, work_limit is not None)
    if progress is not None:
        progress.watch_bound(solver, inst.tick)
    with stoppable(solver):
        status = STATUS.get(run_solver(solver, built.model), "UNKNOWN")
    stats = solver_stats(solver, workers, seed, time_limit, status)
    if status not in ("OPTIMAL", "FEASIBLE"):
        # UNKNOWN: CP-SAT's work ran out, or else the wall clock (or Ctrl-C) stopped it; the
        # command names the limit from this
        worked_out = work_limit is not None and solver.deterministic_time >= 0.99 * work_limit
        if status == "INFEASIBLE":
            reason = "the program order breaks the memory cap"
        elif worked_out:
            reason = "no solution within the work limit"
        else:
            reason = cut_reason(["search"], dl.stopped())
            stats.update(cut_stats(["search"], dl.stopped()))
        if status == "UNKNOWN" and objective == "makespan":
            return timed_asap(stats)
        return OptimizeResult(
            status,
            objective=None,
            bound=float("inf") if status == "INFEASIBLE" else inst.bound_time(bounds.best),
            wall_s=time.monotonic() - t0,
            schedule=schedule,
            timeline=None,
            hint=schedule.family,
            hint_objective=None,
            reason=reason,
            solver=stats,
            **common,
        )
    starts = [solver.value(v) for v in built.start]
    if progress is not None:
        progress.phase("done", solver.objective_value * inst.tick, inst.bound_time(solver.best_objective_bound))
    value = round(solver.objective_value)
    bound = max(bounds.best, int(np.ceil(solver.best_objective_bound - 1e-9)))
    _, tl = schedule_from_starts(inst, starts, schedule.family)
    tl = Timeline(schedule, costs, "cp-sat", tl.ops, tl.device, tl.start, tl.end, tl.transfers, info=tl.info)
    return OptimizeResult(
        status,
        objective=value * inst.tick,
        bound=inst.bound_time(min(bound, value)),
        wall_s=time.monotonic() - t0,
        schedule=schedule,
        timeline=tl,
        hint=schedule.family,
        hint_objective=asap.objective * inst.tick,
        solver=stats,
        **common,
    )


__all__ = ["evaluate", "order_peaks", "problem_for"]
