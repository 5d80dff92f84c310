"""The search of the step's end: CP-SAT on the last part of the best schedule, everything before
it kept at its start, after the other searches.

Why: on one pipe with several stages per device under a cap the best schedule is often periodic
(:mod:`.periodic`, :mod:`.modulo`), and a periodic schedule is as fast as its interval allows in
the steady state but not at its end, where the last microbatches could run closer together than
the interval because no later microbatch needs their memory. The search on the whole model rarely
finds that within its work (V, p = 8, m = 24, unit costs, budget 4: 85.5 after 5 deterministic
seconds, 84.5 only after 30), while the model with every op that starts before the last 20 units
fixed proves its optimum, 84.5, within 0.1 CPU seconds (the bound there is 83.5). Windows of a
growing share of the step are tried in turn, each from the best schedule so far, until the work
is spent.

Each window is :func:`~.tail.search_after` (the search after the warm-up's model, cut at the
window's start instead of the warm-up's end): the whole model, the ops before the window fixed at
their starts, the schedule as hint and cut, the linear relaxation off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .bounds import Bounds
from .heuristic import Candidate
from .problem import Instance
from .tail import search_after

#: the windows, as shares of the step: the last 15 %, then 25 %, then 35 % of it are searched
WINDOWS = (0.15, 0.25, 0.35)


def search_before_end(
    inst: Instance,
    bounds: Bounds,
    starts: Sequence[int],
    value: int,
    time_limit: float,
    work: float,
    seed: int = 0,
    symmetry: bool = True,
    deterministic: bool = False,
) -> Candidate | None:
    """A schedule faster than ``starts`` (a schedule of ``inst`` of objective ``value`` ticks,
    meeting the model's symmetry order when ``symmetry``) that differs from it only in the ops of
    the step's last part (module doc), or None; ``work`` deterministic seconds in all and
    ``time_limit`` wall seconds at most.

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.optimize.bounds import lower_bounds
        >>> from ppverify.optimize.heuristic import canonical_starts
        >>> from ppverify.optimize.periodic import periodic_candidates
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(8)
        >>> inst = instance(Problem(pl, 24, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=4))
        >>> start = min(periodic_candidates(inst), key=lambda c: c.objective)
        >>> start.objective * inst.tick  # one microbatch every 3
        85.5
        >>> found = search_before_end(inst, lower_bounds(inst), canonical_starts(inst, start.starts), start.objective, 60.0, 1.0)
        >>> found.objective * inst.tick
        84.5
    """
    best_starts, best = list(starts), value
    spent = 0.0
    for share in WINDOWS:
        left = work - spent
        if left < 0.01:
            break
        window_start = best - math.floor(share * best)
        found, found_value, used = search_after(
            inst, bounds, best_starts, best, window_start, time_limit, left, 1, seed, None, symmetry, deterministic
        )
        spent += used
        if found is not None and found_value is not None:
            best_starts, best = found, found_value
    if best >= value:
        return None
    return Candidate("end", inst.programs_by_start(best_starts), best_starts, best)
