"""The phases of :func:`~ppverify.optimize.solve.optimize` that stand alone: one call's state
(:class:`Run`), its early results (a proof, the requested gap, infeasible), the local search and the
one-device relaxation on a start, the CP-SAT search in its three steps (build, solve, read), and
the search of the step's end. :mod:`.solve` runs them in order; each function takes the
:class:`Run` and returns what the next phase needs.

Example (the CP-SAT search from a greedy start, as :func:`~ppverify.optimize.solve.optimize`
runs it after the starting schedules):
    >>> from ppverify.core.placement import linear
    >>> from ppverify.core.costs import CostModel
    >>> from ppverify.core.comm import FixedDelay
    >>> from ppverify.optimize.problem import Problem, instance
    >>> from ppverify.optimize.bounds import lower_bounds
    >>> from ppverify.optimize.heuristic import greedy
    >>> pl = linear(3)
    >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, B=2), FixedDelay(1), split=False))
    >>> dl = Deadline.after(10)
    >>> run = Run(inst, dl, dl.at(0.9), 10.0, 10.0, 1, 0, True, True, 0.01, None, {}, {}, [])
    >>> start = greedy(inst, "GWF")
    >>> found = cp_search(run, lower_bounds(inst), start, start.starts, 0, 5.0)
    >>> found.status, found.value, found.bound  # (m+p-1)(tF+tB) + 2(p-1)c = 18 + 4
    ('OPTIMAL', 22, 22)
    >>> run.gap_reached(101, 100), run.gap_reached(110, 100)  # within 1 % of the bound?
    (True, False)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from .bounds import Bounds
from .deadline import Deadline, WallLimitReached
from .ending import search_windows
from .heuristic import Candidate
from .interrupt import stoppable
from .localsearch import improve
from .model import build_model
from .problem import Instance
from .relax import relaxation_bound
from .result import CommonFields, OptimizeResult, relative_gap
from .solver_run import Progress
from .solver_setup import STATUS, as_soon_as_possible, cut_stats, make_solver, run_solver, schedule_from_starts

#: the search of the step's end and windows through it (ending.py) get these shares of a point's
#: work, after the other searches
ENDING_SHARE, MIDDLE_SHARE = 0.1, 0.4


@dataclass(frozen=True)
class Run:
    """One call of :func:`~ppverify.optimize.solve.optimize`: what its phases read, and the phases the clock cut so far
    (``cut``, appended to as they happen; ``common["bounds"]`` follows the bounds as they rise)."""

    inst: Instance
    dl: Deadline
    hard: Deadline  # the last 10 % of ``dl`` kept for the solver's answer and the result
    time_limit: float
    work: float
    workers: int
    seed: int
    symmetry: bool
    deterministic: bool
    gap_limit: float | None
    progress: Progress | None
    common: CommonFields
    limits_note: dict[str, Any]
    cut: list[str]

    def phase(self, name: str, value: int | None = None, bound: int | None = None) -> None:
        # tell the progress display (if any) that a phase starts; value and bound in ticks
        if self.progress is not None:
            tick = self.inst.tick
            self.progress.phase(
                name, None if value is None else value * tick, None if bound is None else self.inst.bound_time(bound)
            )

    def gap_reached(self, value: int | None, bound: int) -> bool:
        # a schedule within the requested gap of a proven bound (no gap limit: never)
        return (
            self.gap_limit is not None and value is not None and (relative_gap(value, bound) or 0.0) <= self.gap_limit
        )

    def within_gap(self, start: Candidate | None, bound: int) -> bool:
        # a start already within the requested gap of the proven bound, without meeting it
        return start is not None and start.objective > bound and self.gap_reached(start.objective, bound)


def infeasible_result(t0: float, common: CommonFields, reason: str, **solver: Any) -> OptimizeResult:
    """The result when no schedule meets the constraints (the cap, or CP-SAT's proof)."""
    return OptimizeResult(
        "INFEASIBLE",
        objective=None,
        bound=float("inf"),
        wall_s=time.monotonic() - t0,
        schedule=None,
        timeline=None,
        hint=None,
        hint_objective=None,
        reason=reason,
        **solver,
        **common,
    )


def start_result(
    run: Run, best: Candidate | None, hint: Sequence[int] | None, bound: int, note: dict[str, Any], reason: str = ""
) -> OptimizeResult:
    """The starting schedule (if any) as the result, without search: OPTIMAL when it meets
    ``bound``, UNKNOWN without one."""
    inst = run.inst
    sched = tl = None
    value = best.objective if best is not None else None
    if value is not None and hint is not None:
        hint, value = as_soon_as_possible(inst, hint, value)
        sched, tl = schedule_from_starts(inst, hint, "cp-sat")
    if value is not None:
        bound = min(bound, value)
    return OptimizeResult(
        "UNKNOWN" if value is None else ("OPTIMAL" if bound >= value else "FEASIBLE"),
        objective=None if value is None else value * inst.tick,
        bound=inst.bound_time(bound),
        wall_s=time.monotonic() - run.dl.start,
        schedule=sched,
        timeline=tl,
        hint=best.source if best is not None else None,
        hint_objective=None if value is None else value * inst.tick,
        solver={**note, **run.limits_note, **cut_stats(run.cut, run.dl.stopped())},
        reason=reason,
        **run.common,
    )


def proven(run: Run, best: Candidate | None, hint: Sequence[int] | None, proof: str) -> OptimizeResult:
    """The start as the result, proven optimal by ``proof``."""
    return start_result(run, best, hint, best.objective if best is not None else 0, {"proof": proof})


def gap_met(run: Run, best: Candidate | None, hint: Sequence[int] | None, bound: int, phase: str) -> OptimizeResult:
    """The result when the start is within the gap limit before the search: the start and the
    bound so far, with the phase that got there."""
    note = {"stopped": f"within the gap limit after {phase}", "gap_limit": run.gap_limit}
    reason = f"within the gap limit {run.gap_limit:.4g} of the bound after {phase}; not searched further"
    return start_result(run, best, hint, bound, note, reason)


def improved(run: Run, best: Candidate | None, floor: int, safety: float) -> tuple[Candidate | None, str]:
    """The local search (:mod:`.localsearch`) on the best start, unless it already meets the
    bound or the requested gap; also the phase's name for the notes."""
    if best is None or best.objective <= floor or time.monotonic() >= safety or run.gap_reached(best.objective, floor):
        return best, "the starting schedules"
    run.phase("local search", best.objective)
    best = improve(run.inst, best, seed=run.seed, deadline=run.dl.at(0.5).end, stop=run.dl.stop)
    if time.monotonic() > run.dl.at(0.5).end:
        run.cut.append("local search")
    return best, "the local search"


def relaxed(run: Run, bounds: Bounds, start: Bounds, wall: float, work: float) -> Bounds:
    """``bounds`` raised by the one-device relaxation (:mod:`.relax`) run from ``start``'s
    bounds."""
    relax_best, relax_per = relaxation_bound(
        run.inst, start, wall, run.workers, run.seed, work, run.deterministic, run.dl.stop
    )
    raised = replace(
        bounds,
        device_relaxation=max(bounds.device_relaxation, relax_best),
        per_device=tuple(max(a, b) for a, b in zip(bounds.per_device, relax_per)),
    )
    run.common["bounds"] = raised.as_dict(run.inst.tick)
    return raised


@dataclass(frozen=True)
class Searched:
    """What the CP-SAT search gave: its solver (for the statistics), CP-SAT's status, the bound in
    ticks (the floor or CP-SAT's), and the best schedule's starts and value (the hint's where the
    search found nothing faster)."""

    solver: cp_model.CpSolver
    status: str
    bound: int
    starts: list[int] | None
    value: int | None


def cp_search(
    run: Run,
    used_bounds: Bounds,
    best: Candidate | None,
    hint: Sequence[int] | None,
    floor: int,
    search_work: float,
) -> Searched | None:
    """The CP-SAT search in three steps: build the model (hinted, cut at the start's value),
    solve, read the solution; None when the clock leaves no time to search. The module's
    docstring shows a call."""
    inst, hard = run.inst, run.hard
    try:
        built = build_model(
            inst, used_bounds, hint=hint, upper=best.objective if best else None, symmetry=run.symmetry, deadline=hard
        )
    except WallLimitReached:
        run.cut.append("model building")
        return None
    if hard.remaining() < 0.01:
        run.cut.append("search")
        return None

    solver = make_solver(hard.remaining(), run.workers, run.seed, search_work, run.deterministic)
    if run.gap_limit is not None:
        solver.parameters.relative_gap_limit = float(run.gap_limit)  # CP-SAT's gap is ours: (value - bound) / value
    callback = None
    if run.progress is not None:
        run.phase("search", best.objective if best else None, floor)
        callback = run.progress.search_callback(inst.tick)
        run.progress.watch_bound(solver, inst.tick)
    with stoppable(solver):  # Ctrl-C / SIGTERM stop it (interrupt.py)
        code = run_solver(solver, built.model, callback)
    if hard.expired():
        run.cut.append("search")

    status = STATUS.get(code, "UNKNOWN")
    solver_bound = solver.best_objective_bound if status in ("OPTIMAL", "FEASIBLE", "UNKNOWN") else None
    # without redundant bounds (plain CP-SAT) only what the solver proved is reported
    bound = max(
        floor, int(np.ceil(solver_bound - 1e-9)) if solver_bound is not None and np.isfinite(solver_bound) else 0
    )
    starts: list[int] | None = None
    value: int | None = None
    if status in ("OPTIMAL", "FEASIBLE"):
        starts = [solver.value(v) for v in built.start]
        value = round(solver.objective_value)
    if best is not None and (value is None or best.objective < value):
        assert hint is not None  # set together with best
        starts, value = list(hint), best.objective
    if value is not None and status == "INFEASIBLE":
        # the cut `objective <= hint` was infeasible below the hint: the hint is optimal
        bound = value
    return Searched(solver, status, bound, starts, value)


def search_ending(
    run: Run,
    used_bounds: Bounds,
    origins: Sequence[tuple[Sequence[int], int]],
    value: int,
) -> Candidate | None:
    """The search of the step's end and of windows through it (:mod:`.ending`) from each origin
    in turn, until one finds a schedule faster than ``value``."""
    for from_starts, from_value in origins:
        if run.hard.expired():
            break
        found = search_windows(
            run.inst, used_bounds, from_starts, from_value, run.hard, ENDING_SHARE * run.work, MIDDLE_SHARE * run.work,
            run.seed, run.symmetry, run.deterministic,
        )  # fmt: skip
        if found is not None and found.objective < value:
            return found
    return None


__all__ = [
    "ENDING_SHARE",
    "MIDDLE_SHARE",
    "Run",
    "Searched",
    "cp_search",
    "gap_met",
    "improved",
    "infeasible_result",
    "proven",
    "relaxed",
    "search_ending",
    "start_result",
]
