"""Lower bounds on a coarser time grid, for costs whose exact tick is too fine for the one-device
relaxation (:mod:`.relax`) to prove anything within a few deterministic seconds.

Profiled costs (milliseconds with three decimals, such as the zero-bubble paper's: Qi et al.,
*Zero Bubble Pipeline Parallelism*, ICLR 2024, arXiv 2401.10241) share a tick of 0.5 us: an op
lasts thousands of ticks and the relaxation of the critical device proves nothing beyond the
analytic bound (V, p = 4, m = 12, budget 1: nothing given 4 deterministic seconds). Here every
duration, delay and collective is rounded **down** to whole coarse ticks of ``g`` ticks
(:func:`floored_instance`), the dual of :mod:`.coarse`, which rounds up to find schedules. The
optimum of the rounded problem, times ``g``, is a lower bound on the true one:

* take any schedule of the true problem and floor its starts to the coarse grid,
  ``s' = floor(s / g)``; for every dependency (or two runs in order on a device, or the step's
  end after an op's tail) ``s_j >= s_i + d_i + c`` gives ``floor(s_j / g) >= floor(s_i / g) +
  floor(d_i / g) + floor(c / g)``, since a floor of a sum is at least the sum of the floors;
* an activation held in the coarse schedule at coarse tick ``t`` (its forward started by then, its
  freeing op not ended) is held in the true one at tick ``(t + 1) g - 1``, so the coarse schedule
  holds at every coarse tick a subset of what the true one holds at one instant: within the cap;
* so the floored starts are a schedule of the rounded problem, no longer than the true one in
  coarse ticks, and any lower bound there, times ``g``, bounds the true step.

The grid is chosen so that the shortest op spans about :data:`FLOOR_TICKS` coarse ticks: the
relaxation then behaves as on the exact grid of unit costs, and what rounding down loses is a
fraction of a tick per op (:func:`floor_factor`).
"""

from __future__ import annotations

import math

from .bounds import lower_bounds
from .modulo import least_interval
from .problem import Instance, on_grid
from .relax import device_bound

#: the shortest op spans about this many coarse ticks: V, p = 4, m = 12, the zero-bubble paper's
#: row 0, budget 1, 5 deterministic seconds on device 3: 1266.4, 1276.5 and 1277.4 ms on grids of
#: 0.4, 0.5 and 0.6 ms (about 12, 9 and 8 ticks for W's 4.67 ms), nothing beyond the analytic
#: bound on 0.25 ms (19) within 4 nor on the exact grid; the schedule found is 1307.41
FLOOR_TICKS = 8
#: grids up to this factor above the least one are weighed (:func:`floor_factor`)
FACTOR_SPAN = 1.25


def floored_instance(inst: Instance, factor: int) -> Instance:
    """``inst`` on a grid of ``factor`` ticks: durations, delays and the collectives' durations
    rounded down (a duration may become 0), memory unchanged (:func:`~.problem.on_grid`; module
    doc: its bounds, times ``factor``, hold for ``inst``).

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize.problem import Problem, instance
        >>> costs = CostModel.abstract(linear(1), F=0.7, I=0.4, W=0.3)  # ticks of 0.1: 7, 4, 3
        >>> coarse = floored_instance(instance(Problem(linear(1), 2, costs, split=True)), 3)
        >>> coarse.dur, round(coarse.tick, 6)
        ([2, 1, 1, 2, 1, 1], 0.3)
    """
    return on_grid(inst, factor, up=False)


def floor_factor(inst: Instance) -> int:
    """The grid (in ticks) of :func:`critical_bound`: 1 where the shortest op lasts at most
    :data:`FLOOR_TICKS` ticks; else, among the grids from the one that leaves it about that many
    coarse ticks up to :data:`FACTOR_SPAN` times coarser, the one that keeps the most of the least
    interval (:func:`~.modulo.least_interval`: the busiest device's work and the activations'
    holding times) once rounded down.

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.optimize.problem import Problem, instance
        >>> zb = CostModel.abstract(v_shape(8), F=18.522, I=18.086, W=9.337)  # ms: ticks of 0.5 us
        >>> round(floor_factor(instance(Problem(v_shape(8), 24, zb, memory_cap=4))) * 0.0005, 4)
        0.6455
        >>> unit = CostModel.abstract(v_shape(8), F=1, I=1, W=1)  # the exact grid already
        >>> floor_factor(instance(Problem(v_shape(8), 24, unit, memory_cap=4)))
        1
    """
    shortest = min((d for d in inst.dur if d > 0), default=1)
    lo = shortest // FLOOR_TICKS
    if lo <= 1:
        return 1
    # the most of the least interval kept; at a tie the coarser grid (a smaller model)
    grids = range(lo, math.floor(lo * FACTOR_SPAN) + 1)
    return max(grids, key=lambda g: (least_interval(floored_instance(inst, g)) * g, g))


def critical_bound(
    inst: Instance, work: float, wall: float, seed: int = 0, device: int | None = None
) -> tuple[int, int, int]:
    """A lower bound (ticks of ``inst``) on the makespan from the one-device relaxation of the
    critical device (the largest analytic bound; or ``device``) on the grid of
    :func:`floor_factor`, given ``work`` deterministic seconds (``wall``: a wall-clock stop);
    returns ``(bound, device, grid)``.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(3)  # device 2: its first F arrives at 2, then 9 of work, the last B's 4 back
        >>> critical_bound(instance(Problem(pl, 3, CostModel.abstract(pl, F=1, B=2), split=False)), 1.0, 60.0)
        (15, 2, 1)
    """
    g = floor_factor(inst)
    coarse = floored_instance(inst, g)
    analytic = lower_bounds(coarse, "makespan")
    if device is None:
        device = max(range(inst.p), key=lambda d: (analytic.per_device[d], d))
    found = device_bound(
        coarse, device, "makespan", wall, 1, seed, analytic.per_device[device], work, deterministic=True
    )
    return max(found, analytic.best) * g, device, g
