"""The search after the warm-up: CP-SAT on the rest of the step, with the starting schedule's
warm-up kept, before the search on the whole model.

Why: on placements that put several stages on one device (loop, V) the search on the whole
model does not improve the greedy start within its budget (loop v=2, p=8, m=32, c=1, cap
2p·M_F: still the start's 115.5 after 360 s with two workers), while the start's warm-up is
already as short as the memory-window bound allows (device 0 idles exactly that bound's 17.5
before its first gradient op). Keeping every op that starts before the last device's first
gradient op at its start leaves a model in which CP-SAT, with its linear relaxation off (the
relaxation costs most of the time and finds nothing here), improves the start within a few
deterministic seconds: 114.0 within 2 on that row (with the relaxation on, the same
neighbourhood reached 113.5, the bound and so the optimum, after 19).

The three steps of :func:`search_after` follow the optimizer's: build the model (the whole
model, the ops before a cut fixed at their starts: here the warm-up's), solve, read the schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ortools.sat.python import cp_model

from ..core.ops import B, I
from .bounds import Bounds
from .heuristic import Candidate
from .interrupt import stoppable
from .model import build_model
from .problem import Instance
from .solver_run import Progress
from .solver_setup import make_solver, run_solver


def several_stages_per_device(inst: Instance) -> bool:
    """True when some device holds more than one stage (loop, V, two-pipe placements).

    Example:
        >>> from ppverify.core.placement import linear, loop
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> [several_stages_per_device(instance(Problem(pl, 2, CostModel.abstract(pl)))) for pl in (linear(2), loop(2, 2))]
        [False, True]
    """
    pl = inst.problem.placement
    return pl.num_stages * pl.num_pipes > pl.p


def warmup_end(inst: Instance, starts: Sequence[int]) -> int:
    """The start of the last device's first gradient op (I or B): before it, some device is
    still in its warm-up.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> [str(o) for o in inst.dag.ops], warmup_end(inst, [0, 4, 1, 2])
        (['0F0', '0B0', '1F0', '1B0'], 4)
    """
    first: list[int | None] = [None] * inst.p
    for i, op in enumerate(inst.dag.ops):
        if op.kind in (I, B):
            d = inst.dag.device[i]
            cur = first[d]
            first[d] = starts[i] if cur is None else min(cur, starts[i])
    return max((t for t in first if t is not None), default=0)


def search_after_warmup(
    inst: Instance,
    bounds: Bounds,
    start: Candidate,
    hint: Sequence[int],
    time_limit: float,
    work_limit: float,
    workers: int = 1,
    seed: int = 0,
    gap_limit: float | None = None,
    symmetry: bool = True,
    deterministic: bool = False,
    progress: Progress | None = None,
) -> Candidate | None:
    """A better schedule than ``start`` (whose start ticks, made canonical, are ``hint``) with
    the same warm-up, or None when CP-SAT finds none within ``work_limit`` deterministic
    seconds (``time_limit`` wall seconds at most; ``gap_limit``, ``deterministic`` and
    ``progress`` as in the optimizer).

    Example:
        >>> from ppverify.core.placement import loop
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import lower_bounds
        >>> from ppverify.optimize.heuristic import greedy, canonical_starts
        >>> pl = loop(2, 2)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(1), split=True))
        >>> g = greedy(inst, "GWF")  # W before F: a poor start
        >>> better = search_after_warmup(inst, lower_bounds(inst), g, canonical_starts(inst, g.starts), 10, 1.0)
        >>> better.objective < g.objective
        True
    """
    callback = None
    if progress is not None:
        callback = progress.search_callback(inst.tick, bounds=False)  # a bound with the warm-up fixed
    starts, value, _ = search_after(
        inst, bounds, hint, start.objective, warmup_end(inst, hint), time_limit, work_limit, workers, seed,
        gap_limit, symmetry, deterministic, callback,
    )  # fmt: skip
    if starts is None or value is None:
        return None
    return Candidate(start.source + "+tail", inst.programs_by_start(starts), starts, value)


def search_after(
    inst: Instance,
    bounds: Bounds,
    hint: Sequence[int],
    upper: int,
    cut: int,
    time_limit: float,
    work_limit: float,
    workers: int = 1,
    seed: int = 0,
    gap_limit: float | None = None,
    symmetry: bool = True,
    deterministic: bool = False,
    callback: Any = None,
    shift_from: int | None = None,
) -> tuple[list[int] | None, int | None, float]:
    """CP-SAT on the whole model with every op that starts before ``cut`` in the schedule
    ``hint`` (objective ``upper``, ticks) fixed at that start, its linear relaxation off (it costs
    most of the time and finds nothing here); returns the start ticks and objective of a faster
    schedule (None, None when none is found) and the deterministic seconds spent. The search after
    the warm-up cuts at the warm-up's end, the search of the step's end (:mod:`.ending`) at
    windows before the step's end. With ``shift_from``, the ops that start at or after it keep
    their starts relative to each other, all moved by one amount, at most ``shift_from - cut``
    earlier: only the window between is searched (:func:`.ending.search_middle`).

    Example:
        >>> from ppverify.core import costs, placement
        >>> from ppverify.optimize import bounds, heuristic, problem
        >>> pl = placement.loop(2, 2)  # W before F: a poor start, improved once nothing is fixed
        >>> inst = problem.instance(problem.Problem(pl, 4, costs.CostModel.abstract(pl, F=1, I=1, W=1)))
        >>> start = heuristic.greedy(inst, "GWF")
        >>> hint, lb = heuristic.canonical_starts(inst, start.starts), bounds.lower_bounds(inst)
        >>> search_after(inst, lb, hint, start.objective, 0, 10.0, 1.0)[1] < start.objective
        True
        >>> search_after(inst, lb, hint, start.objective, start.objective, 10.0, 1.0)[:2]  # all fixed
        (None, None)
    """
    # build: the whole model, the ops before the cut at their starts
    built = build_model(inst, bounds, hint=hint, upper=upper, symmetry=symmetry)
    shift = None
    if shift_from is not None:
        shift = built.model.new_int_var(min(0, cut - shift_from), 0, "shift_after_window")
    for i, var in enumerate(built.start):
        if hint[i] < cut:
            built.model.add(var == int(hint[i]))
        elif shift is not None and shift_from is not None and hint[i] >= shift_from:
            built.model.add(var == int(hint[i]) + shift)
    # solve
    solver = make_solver(time_limit, workers, seed, work_limit, deterministic)
    solver.parameters.linearization_level = 0
    if gap_limit is not None:
        solver.parameters.relative_gap_limit = float(gap_limit)
    with stoppable(solver):
        code = run_solver(solver, built.model, callback)
    # read
    used = float(solver.deterministic_time)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or round(solver.objective_value) >= upper:
        return None, None, used
    return [solver.value(v) for v in built.start], round(solver.objective_value), used
