"""After the points: more work on the bounds of the frontier points still above the gap limit.

A point's own search shares its work limit among the starts, the blocks, the search and the
one-device relaxation (:func:`~ppverify.optimize.optimize`), so the relaxation of the critical
device often stops before it proves anything: V, p = 8, m = 24, delay 1, budget 3 gets 1.25
deterministic seconds there and needs between 1 and 2 for 218.5 (the point's bound is then
device 0's 207). The frontier is a handful of points, and it is their bounds that the design
reports, so each gets that relaxation again with ``--bound-work`` of its own
(:func:`~ppverify.optimize.floored.critical_bound`, on a coarser grid rounded down where the exact
tick is too fine). A raised bound holds for every smaller budget of the placement too
(:func:`~ppverify.design.points.monotone`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from .points import EPS, Point, frontier, monotone, point_problem
from .spec import Limits, Setup


def tighten_point(point: Point, setup: Setup, m: int, split: bool, limits: Limits, wall: float) -> Point:
    """``point`` with its bound raised by the critical device's relaxation given
    ``limits.tighten_work`` (``wall``: a wall-clock stop); unchanged where it found no schedule, is
    proven optimal or within the gap limit already, or where nothing higher was proven.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 3, 3, PresetSettings(costs="F=1,B=2"))[0]
        >>> pt = Point("linear", math.inf, "FEASIBLE", 16.0, 12.0, 3.0, None, None)
        >>> q = tighten_point(pt, s, 3, False, Limits(1.0), 60.0)
        >>> q.bound, q.note  # (m + p - 1)(tF + tB): device 2's first F arrives at 2, 9 of work, 4 back
        (15.0, 'bound raised from 12 to 15 by the relaxation of device 2 (design --bound-work)')
    """
    from ..optimize.floored import critical_bound
    from ..optimize.problem import instance

    work = limits.tighten_work
    if point.time is None or point.status == "OPTIMAL" or work <= 0 or wall <= 0:
        return point
    if point.gap is not None and limits.gap is not None and point.gap <= limits.gap + EPS:
        return point
    inst = instance(point_problem(setup, point.budget, m, split))
    ticks, device, grid = critical_bound(inst, work, wall, limits.seed)
    bound = min(inst.to_time(ticks), point.time)
    if bound <= point.bound + EPS:
        return point
    on = f" on a grid of {inst.to_time(grid):.4g} rounded down" if grid > 1 else ""
    note = f"bound raised from {point.bound:.10g} to {bound:.10g} by the relaxation of device {device}{on} (design --bound-work)"
    status = "OPTIMAL" if bound >= point.time - EPS else point.status
    return replace(point, bound=bound, status=status, note=f"{point.note}; {note}" if point.note else note)


def tighten_front(
    points: Sequence[Point],
    setups: Sequence[Setup],
    m: int,
    split: bool,
    limits: Limits,
    until: float | None = None,
    report: Callable[[int, int, Point, Point], None] | None = None,
) -> tuple[list[Point], bool]:
    """Every point with the frontier's bounds tightened (:func:`tighten_point`, one frontier
    point after another, the largest budget first) and made consistent across budgets again;
    ``until``: the run's wall-clock ceiling (a ``time.time()`` instant) after which no point is
    started; returns the points and whether Ctrl-C stopped the work (what was done is kept).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 3, 3, PresetSettings(costs="F=1,B=2"))
        >>> pts = [Point("linear", math.inf, "FEASIBLE", 16.0, 12.0, 3.0, None, None)]
        >>> [(q.bound, q.status) for q in tighten_front(pts, s, 3, False, Limits(1.0))[0]]
        [(15.0, 'FEASIBLE')]
    """
    by_label = {s.label: s for s in setups}
    out = list(points)
    todo = sorted(frontier(out), key=lambda q: -q.budget)
    interrupted = False
    try:
        for n, q in enumerate(todo):
            wall = limits.wall if until is None else min(limits.wall, until - time.time())
            i = next(k for k, x in enumerate(out) if x is q)
            out[i] = tighten_point(q, by_label[q.placement], m, split, limits, wall)
            if report is not None:
                report(n + 1, len(todo), q, out[i])
    except KeyboardInterrupt:
        interrupted = True
    return monotone(out), interrupted


def tighten_line(done: int, total: int, before: Point, after: Point) -> str:
    """One progress line on stderr after a frontier point's bound work.

    Example:
        >>> a = Point("v", 3.0, "FEASIBLE", 228.5, 207.0, 3.0, None, None)
        >>> tighten_line(1, 5, a, replace(a, bound=218.5))
        'design bound [1/5] v budget 3: 228.5, bound 207 -> 218.5, gap 4.38 %'
    """
    budget = "none" if math.isinf(before.budget) else f"{before.budget:g}"
    moved = f"{before.bound:.10g} -> {after.bound:.10g}" if after.bound > before.bound + EPS else f"{after.bound:.10g}"
    gap = "" if after.gap is None else f", gap {100 * after.gap:.3g} %"
    value = "no schedule" if after.time is None else f"{after.time:.10g}"
    return f"design bound [{done}/{total}] {before.placement} budget {budget}: {value}, bound {moved}{gap}"
