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
from .deadline import Deadline, WallLimitReached
from .heuristic import time_programs
from .interrupt import stoppable
from .model import build_model
from .problem import Problem, instance
from .result import CommonFields, OptimizeResult
from .solver_setup import (
    STATUS,
    check_limits,
    collectives_text,
    cut_reason,
    cut_result,
    make_solver,
    schedule_from_starts,
    solver_stats,
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
) -> OptimizeResult:
    """CP-SAT with each device's program order fixed to the schedule's: the optimum is the
    schedule's own value (for the makespan, what the async engine computes with the same ``sync``
    and ``dp_allreduce``); INFEASIBLE when the order breaks the memory cap. ``deadline`` as for
    :func:`optimize` (UNKNOWN when the clock runs out before the solver).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("1f1b", p=4, m=4)
        >>> evaluate(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(1)).objective
        31.0
    """
    check_limits(time_limit, workers, seed)
    if any(type(a) is Overlap for prog in schedule.programs for a in prog):
        raise ParameterError(
            "schedule",
            schedule.describe(),
            "evaluate mode does not model overlapped F&B slots; run them in sequence first",
        )
    dl = deadline if deadline is not None else Deadline.after(time_limit)
    t0, hard = dl.start, dl.at(0.9)
    problem = problem_for(schedule, costs, comm, memory_cap, objective, sync, dp_allreduce)
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
    )
    try:
        asap = time_programs(inst, [[inst.dag.ops[i] for i in prog] for prog in order], schedule.family)
    except DeadlockError as exc:
        return OptimizeResult(
            "INFEASIBLE",
            objective=None,
            bound=bounds.best * inst.tick,
            wall_s=time.monotonic() - t0,
            schedule=schedule,
            timeline=None,
            hint=schedule.family,
            hint_objective=None,
            reason=f"the program order cannot run: {exc}",
            **common,
        )
    hint = asap.starts
    try:
        built = build_model(inst, bounds, order=order, hint=hint, deadline=hard)
    except WallLimitReached:
        return OptimizeResult(
            "UNKNOWN",
            objective=None,
            bound=bounds.best * inst.tick,
            wall_s=time.monotonic() - t0,
            schedule=schedule,
            timeline=None,
            hint=schedule.family,
            hint_objective=asap.objective * inst.tick,
            reason=cut_reason(["model building"]),
            solver={"workers": workers, "seed": seed, "time_limit_s": time_limit, "wall_limited": "model building"},
            **common,
        )
    solver = make_solver(max(0.01, hard.remaining()), workers, seed)
    with stoppable(solver):
        status = STATUS.get(solver.solve(built.model), "UNKNOWN")
    stats = solver_stats(solver, workers, seed, time_limit, status)
    if status not in ("OPTIMAL", "FEASIBLE"):
        reason = (
            "the program order breaks the memory cap" if status == "INFEASIBLE" else "no solution within the time limit"
        )
        return OptimizeResult(
            status,
            objective=None,
            bound=bounds.best * inst.tick,
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
    value = round(solver.objective_value)
    bound = max(bounds.best, int(np.ceil(solver.best_objective_bound - 1e-9)))
    _, tl = schedule_from_starts(inst, starts, schedule.family)
    tl = Timeline(schedule, costs, "cp-sat", tl.ops, tl.device, tl.start, tl.end, tl.transfers, info=tl.info)
    return OptimizeResult(
        status,
        objective=value * inst.tick,
        bound=min(bound, value) * inst.tick,
        wall_s=time.monotonic() - t0,
        schedule=schedule,
        timeline=tl,
        hint=schedule.family,
        hint_objective=asap.objective * inst.tick,
        solver=stats,
        **common,
    )


__all__ = ["evaluate", "problem_for"]
