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

The grid is the one that loses the least of the least interval (the busiest device's work and
the activations' least holding times per microbatch) to the rounding, among those that leave the
shortest op between :data:`FINEST_TICKS` and :data:`FLOOR_TICKS` coarse ticks
(:func:`floor_factor`): for the zero-bubble paper's row 0 a grid of 53.5 us keeps 99.9 % of it,
where the coarsest, 0.6455 ms (8 ticks of its W), keeps 98.3 % and drops every 0.601 ms
transfer to 0; device 3 of V at p = 4, m = 12, budget 2 proves 725.62 ms on the first, 691.33 on
the second.
"""

from __future__ import annotations

import time
from fractions import Fraction

from .bounds import lower_bounds
from .modulo import interval_terms
from .problem import Instance, on_grid
from .relax import device_bound

#: the coarsest grid leaves the shortest op this many coarse ticks (:func:`floor_factor`)
FLOOR_TICKS = 8
#: the finest grid weighed leaves it this many: on finer grids rounding down loses little more
FINEST_TICKS = 128


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


def kept(inst: Instance, factor: int, exact: tuple[Fraction, Fraction] | None = None) -> float:
    """How much of the least interval's two limits (:func:`~.modulo.interval_terms`: the busiest
    device's work, the activations' least holding times over the cap) the grid of ``factor``
    ticks keeps once rounded down: the smaller of the two ratios, at most 1 (``exact``: those
    limits of ``inst`` when already known).

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize.problem import Problem, instance
        >>> inst = instance(Problem(linear(1), 2, CostModel.abstract(linear(1), F=0.7, B=0.6)))
        >>> kept(inst, 3)  # F 7 -> 6 ticks, B 6 -> 6: 12 of 13 kept
        0.9230769230769231
    """
    exact = interval_terms(inst) if exact is None else exact
    rounded = interval_terms(floored_instance(inst, factor))
    return float(min(r * factor / e for r, e in zip(rounded, exact) if e > 0))


def floor_factor(inst: Instance) -> int:
    """The grid (in ticks) of :func:`critical_bound`: 1 where the shortest op lasts at most
    :data:`FLOOR_TICKS` ticks; else, among the grids that leave it from :data:`FINEST_TICKS` down
    to :data:`FLOOR_TICKS` coarse ticks, the one that :func:`kept` the most of the least interval
    (at a tie the coarser: a smaller model).

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.optimize.problem import Problem, instance
        >>> zb = CostModel.abstract(v_shape(4), F=18.522, I=18.086, W=9.337)  # ms: ticks of 0.5 us
        >>> round(floor_factor(instance(Problem(v_shape(4), 12, zb, memory_cap=2))) * 0.0005, 4)
        0.0535
        >>> unit = CostModel.abstract(v_shape(8), F=1, I=1, W=1)  # the exact grid already
        >>> floor_factor(instance(Problem(v_shape(8), 24, unit, memory_cap=4)))
        1
    """
    shortest = min((d for d in inst.dur if d > 0), default=1)
    hi = shortest // FLOOR_TICKS
    if hi <= 1:
        return 1
    grids = range(max(2, shortest // FINEST_TICKS), hi + 1)
    exact = interval_terms(inst)  # once, not per grid
    return max(grids, key=lambda g: (kept(inst, g, exact), g))


def critical_bound(
    inst: Instance, work: float, wall: float, seed: int = 0, device: int | None = None, pair_work: float = 0.0
) -> tuple[int, tuple[int, ...], int]:
    """A lower bound (ticks of ``inst``) on the makespan from the one-device relaxation of the
    critical device (the largest analytic bound; or ``device``) on the grid of
    :func:`floor_factor`, given ``work`` deterministic seconds (``wall``: a wall-clock stop); then,
    given ``pair_work`` more, from the relaxation that keeps it together with the busier of its
    neighbours (both capacities and both memories: :func:`~.relax.device_bound` with two
    devices); returns ``(bound, devices, grid)``, ``devices`` those of the relaxation that proved
    the bound.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(3)  # device 2: its first F arrives at 2, then 9 of work, the last B's 4 back
        >>> critical_bound(instance(Problem(pl, 3, CostModel.abstract(pl, F=1, B=2), split=False)), 1.0, 60.0)
        (15, (2,), 1)
    """
    stop = time.monotonic() + wall
    g = floor_factor(inst)
    coarse = floored_instance(inst, g)
    analytic = lower_bounds(coarse, "makespan")
    if device is None:
        device = max(range(inst.p), key=lambda d: (analytic.per_device[d], d))
    found = max(
        analytic.best,
        device_bound(coarse, device, "makespan", wall, 1, seed, analytic.per_device[device], work, deterministic=True),
    )
    best = found
    devices: tuple[int, ...] = (device,)
    left = stop - time.monotonic()
    neighbours = [d for d in (device - 1, device + 1) if 0 <= d < inst.p]
    if pair_work > 0 and neighbours and left > 0:
        # the two devices of the turn of a V (or the last two of a line) hold each other back in a
        # way neither alone shows: V, p = 4, m = 12, the zero-bubble paper's row 0, budget 2:
        # devices 2 and 3 prove 753.44 ms on this grid given 20 deterministic s, device 3 725.62
        other = max(neighbours, key=lambda d: (analytic.per_device[d], d))
        pair = tuple(sorted((device, other)))
        both = device_bound(coarse, pair, "makespan", left, 1, seed, found, pair_work, deterministic=True)
        if both > best:
            best, devices = both, pair
    return best * g, devices, g
