"""The unhinted search: after the hinted one, on one-pipe placements with several stages per
device under a memory cap.

Why: there the best start is often a periodic one (:mod:`.periodic`, :mod:`.modulo`), and CP-SAT
with one worker, given it as a hint, stays at it. V, p = 4, m = 12, unit costs, delay 1, budget
3: the hinted search ends at the periodic start's 64.5 whatever the seed, while the same model
without a hint proves 62.5 optimal within 1.25 deterministic seconds. With the objective cut at
the start's value as well, that search found nothing within 2.5 seconds: a tight horizon leaves
CP-SAT no easy first schedule, so the model here is the whole one. It runs after the hinted
search, which keeps all of its work, with work of its own (``UNHINTED_SHARE`` in :mod:`.solve`);
the better schedule and the higher bound of the two are kept, so nothing is worse than without it.

The three steps of :func:`search_below` follow the optimizer's: build the model (whole, no hint),
solve, read a schedule better than the incumbent if found, and what the solve proved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ortools.sat.python import cp_model

from .bounds import Bounds
from .interrupt import stoppable
from .model import build_model
from .problem import Instance
from .solver_setup import make_solver, run_solver


@dataclass(frozen=True)
class Below:
    """What the unhinted search found below ``incumbent``: a better schedule's ``starts`` and
    ``value`` (None if none), and ``bound``, the lower bound on the optimum (ticks) the solve
    proved on the whole model, never above the incumbent.

    Example:
        >>> Below(None, None, 40).bound
        40
    """

    starts: list[int] | None
    value: int | None
    bound: int


def search_below(
    inst: Instance,
    bounds: Bounds,
    incumbent: int,
    time_limit: float,
    work: float,
    workers: int = 1,
    seed: int = 0,
    symmetry: bool = True,
    deterministic: bool = False,
    gap_limit: float | None = None,
) -> Below:
    """Search, without a hint, for a schedule better than ``incumbent`` (ticks), within ``work``
    deterministic seconds and ``time_limit`` wall seconds (module doc).

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.optimize.bounds import lower_bounds
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(2)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(1), split=True, memory_cap=2))
        >>> b = search_below(inst, lower_bounds(inst), 40, 30.0, 2.0, deterministic=True)  # 20 units: improvable
        >>> b.value is not None and b.value < 40 and b.bound <= b.value
        True
    """
    # build: the whole model, no hint
    built = build_model(inst, bounds, symmetry=symmetry)
    # solve
    solver = make_solver(time_limit, workers, seed, work, deterministic)
    if gap_limit is not None:
        solver.parameters.relative_gap_limit = float(gap_limit)
    with stoppable(solver):
        code = run_solver(solver, built.model)
    # read: a schedule better than the incumbent, and what the solve proved about the optimum
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Below(None, None, _proven(solver, incumbent))
    value = round(solver.objective_value)
    proven = min(value, incumbent) if code == cp_model.OPTIMAL else _proven(solver, incumbent)
    if value >= incumbent:
        return Below(None, None, proven)
    return Below([solver.value(v) for v in built.start], value, proven)


def _proven(solver: cp_model.CpSolver, incumbent: int) -> int:
    # the solver's bound holds for the whole model; never above what is already achieved
    b = solver.best_objective_bound
    return min(incumbent, math.ceil(b - 1e-9)) if math.isfinite(b) else 0
