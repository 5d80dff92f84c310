"""Modulo blocks on a coarser time grid, for costs whose exact tick is too fine for the block
model (:mod:`.modulo`: a boolean per op and tick of the period).

Profiled costs (milliseconds with three decimals, such as the zero-bubble paper's: Qi et al.,
*Zero Bubble Pipeline Parallelism*, ICLR 2024, arXiv 2401.10241) share a tick of 0.5 us, so one
period spans hundreds of thousands of ticks and :func:`~.modulo.modulo_candidates` seeks no
block. Here the block is sought on a grid of ``g`` ticks instead: every duration and delay is
rounded **up** to whole coarse ticks (:func:`coarse_instance`), ``g`` the least that puts the
least period under :data:`COARSE_PERIOD_TICKS` (or a little larger, where rounding loses less,
:func:`coarse_factor`). The block found there is turned into a schedule of the true costs:

* its nominal times (coarse ticks times ``g``) are a valid timing of the true ops: each true
  duration and delay is at most its rounded one, so every dependency that waits for the rounded
  end waits at least for the true one, and on a device the true run ``[s, s + d)`` lies inside
  the rounded ``[s, s + g ceil(d / g))``, so runs that did not overlap modulo the period still
  do not;
* it keeps the cap: an activation is held from its forward's start to the end of the op that
  frees it; with the same starts and true ends no later than the rounded ones every holding
  interval only shrinks, so at every instant the true schedule holds a subset of what the coarse
  one holds, which the block model bounds by the cap in the steady state;
* so each device's order of the coarse nominal times (:func:`~.periodic.periodic_programs`),
  timed as soon as possible with the true durations (:func:`~.heuristic.time_programs`), is
  complete and no slower than ``g`` times the coarse nominal step; memory depends on the orders
  only, and :func:`~.heuristic.memory_ok` checks it again on the true instance.

The coarse candidates carry exactly those orders (:func:`~.modulo.modulo_candidates` builds them
with :func:`~.periodic.periodic_programs`), so :func:`coarse_candidates` re-times them.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.errors import PPVerifyError
from .heuristic import Candidate, memory_ok, time_programs
from .modulo import MAX_COPIES, MAX_PERIOD_TICKS, least_interval, modulo_candidates
from .problem import Instance, on_grid

#: the least period of a coarse block (:data:`~.modulo.MAX_COPIES` microbatches at the least
#: interval) spans about this many coarse ticks: CP-SAT finds blocks of about twenty ticks per
#: interval within a few deterministic seconds, as on the exact grid of unit costs, and fails on
#: finer ones; what rounding up loses is mostly won back by the squeeze with the true costs (row
#: 0 of the zero-bubble profiles, V, 4 deterministic s: p = 8, m = 24, budget 5: 1372.5 ms with
#: this grid, a tick of 2.3 ms, 1443.5 with 1.6 ms ticks (100), 1383.5 with 3.4 ms ticks (40);
#: p = 4, m = 12, budget 3: 651.7, 675.1 and 652.1; the periodic starts 1619.5 and 725.0)
COARSE_PERIOD_TICKS = 60
#: coarse ticks up to this factor above the least one are weighed (:func:`coarse_factor`)
FACTOR_SPAN = 1.25


def coarse_instance(inst: Instance, factor: int) -> Instance:
    """``inst`` on a grid of ``factor`` ticks: durations (at least one coarse tick), delays and
    the collectives' durations rounded up, memory unchanged (:func:`~.problem.on_grid`).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1.5, I=1, W=0.5), split=True))
        >>> coarse_instance(inst, 2).dur, coarse_instance(inst, 2).tick
        ([2, 1, 1, 2, 1, 1], 1.0)
    """
    return on_grid(inst, factor, up=True)


def coarse_factor(inst: Instance, copies: int) -> int | None:
    """The coarse tick (in ticks) for :func:`coarse_candidates`: among the least ``g`` whose least
    interval (:func:`~.modulo.least_interval`) times ``copies`` fits in
    :data:`COARSE_PERIOD_TICKS` and those up to :data:`FACTOR_SPAN` times it, the one whose
    rounded least interval, back in ticks, is the smallest (what rounding up costs the tightest
    periodic schedule: the busiest device's work and the activations' holding times); None where
    no coarse tick is needed (the grid is coarse enough already).

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=18.522, I=18.086, W=9.337), memory_cap=1))
        >>> coarse_factor(inst, 3) * inst.tick  # ms, from ticks of 0.5 us: W per stage, 4.6685
        4.6685
    """
    least = least_interval(inst)
    lo = max(1, math.ceil(least * copies / COARSE_PERIOD_TICKS))
    if lo == 1:
        return None
    best: tuple[Any, int] | None = None
    for g in range(lo, math.floor(lo * FACTOR_SPAN) + 1):
        coarse = coarse_instance(inst, g)
        rounded = least_interval(coarse)
        if rounded * copies > COARSE_PERIOD_TICKS * FACTOR_SPAN:
            continue
        key = (rounded * g, -g)  # at a tie the coarser grid: a smaller model
        if best is None or key < best[0]:
            best = (key, g)
    return best[1] if best is not None else lo


def coarse_candidates(
    inst: Instance, best: int | None = None, work: float = 1.0, wall: float = 60.0, stop: Any = None
) -> tuple[list[Candidate], float]:
    """The modulo blocks of :func:`~.modulo.modulo_candidates` sought on the coarse grid of
    :func:`coarse_factor` and timed with the true costs (module doc), and the deterministic
    seconds spent; ``best`` (ticks) is scaled to the coarse grid, loosened by what rounding adds
    to the least interval (a coarse step that long may still beat it once squeezed).

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=18.522, I=18.086, W=9.337), memory_cap=3))
        >>> from ppverify.optimize.periodic import periodic_candidates
        >>> start = min(c.objective for c in periodic_candidates(inst))
        >>> start * inst.tick  # ms: the periodic starts' best
        704.6005
        >>> found, used = coarse_candidates(inst, start, work=1.0)
        >>> fastest = min(found, key=lambda c: c.objective)  # 3 microbatches per 142.4 ms
        >>> fastest.source, round(fastest.objective * inst.tick, 4)
        ('coarse-block3-T47.4682', 640.9495)
    """
    copies = min(MAX_COPIES, inst.problem.m)
    g = coarse_factor(inst, copies)
    if g is None:
        return [], 0.0
    coarse = coarse_instance(inst, g)
    loss = least_interval(coarse) * g / least_interval(inst)  # >= 1: rounding up
    best_c = None if best is None else math.ceil(best * loss / g)
    found, used = modulo_candidates(coarse, best_c, work, wall, stop, top_first=True)
    out = []
    for c in found:
        if not memory_ok(inst, c.programs):  # pragma: no cover - holding intervals only shrink
            continue
        try:
            out.append(time_programs(inst, c.programs, f"coarse-{c.source}"))
        except PPVerifyError:  # pragma: no cover - the nominal times are a valid timing
            continue
    return out, used


def block_candidates(
    inst: Instance, best: int | None = None, work: float = 1.0, wall: float = 60.0, stop: Any = None
) -> tuple[list[Candidate], float]:
    """The modulo blocks (:func:`~.modulo.modulo_candidates`, same arguments) on the exact grid
    where three least intervals fit in :data:`~.modulo.MAX_PERIOD_TICKS`, else on the coarse grid
    (:func:`coarse_candidates`); none on placements of two pipes.

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=1, I=1, W=1), memory_cap=1.5))
        >>> min(block_candidates(inst, best=138)[0], key=lambda c: c.objective).source  # the exact grid: modulo.py's
        'block1-T5'
    """
    if len(set(inst.dag.schedule.pipe_of_mb)) != 1:
        return [], 0.0
    if least_interval(inst) * min(MAX_COPIES, inst.problem.m) <= MAX_PERIOD_TICKS:
        return modulo_candidates(inst, best, work, wall, stop)
    return coarse_candidates(inst, best, work, wall, stop)
