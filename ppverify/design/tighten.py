"""After the points: more work on the bounds of the frontier points still above the gap limit.

A point's own search shares its work limit among the starts, the blocks, the search and the
one-device relaxation (:func:`~ppverify.optimize.optimize`), so the relaxation of the critical
device often stops before it proves anything: V, p = 8, m = 24, delay 1, budget 3 gets 1.25
deterministic seconds there and needs between 1 and 2 for 218.5 (the point's bound is then
device 0's 207). The frontier is a handful of points, and it is their bounds that the design
reports, so each gets that relaxation again with ``--bound-work`` of its own
(:func:`~ppverify.design.points.bound_point`, on a coarser grid rounded down where the exact tick
is too fine), on the run's executor as the points were. A raised bound holds for every smaller
budget of the placement too (:func:`~ppverify.design.points.monotone`). The same task then keeps
that device together with its busier neighbour (``--pair-work``): one device alone does not see
how busy its neighbour keeps it (V, p = 4, m = 12, the zero-bubble paper's row 0, budget 2:
device 3 proves 725.62 ms, devices 2 and 3 753.44, against the 754.30 found).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace

from .points import EPS, Point, above_gap, solve_point
from .rework import Report, RunTasks, rework_front
from .spec import Limits, Setup, Task


def wants_bound(point: Point, limits: Limits) -> bool:
    """Whether the bound work is spent on ``point``: it has a schedule, is neither proven optimal
    nor within the gap limit, and the bound work is not 0.

    Example:
        >>> wants_bound(Point("v", 3.0, "FEASIBLE", 228.5, 207.0, 3.0, None, None), Limits(5.0))
        True
        >>> wants_bound(Point("v", 3.0, "OPTIMAL", 218.5, 218.5, 3.0, None, None), Limits(5.0))
        False
    """
    return limits.tighten_work > 0 and above_gap(point, limits)


def bound_task(point: Point, setup: Setup, m: int, split: bool, limits: Limits, until: float | None = None) -> Task:
    """The bound work on ``point``: its placement and budget, ``limits.tighten_work`` as the work
    limit, no search (``bound_only``).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 3, 3, PresetSettings(costs="F=1,B=2"))[0]
        >>> t = bound_task(Point("linear", 2.0, "FEASIBLE", 16.0, 12.0, 2.0, None, None), s, 3, False, Limits(1.0, bound_work=3.0))
        >>> t.budget, t.limits.work, t.bound_only
        (2.0, 3.0, True)
    """
    return Task(0, setup, point.budget, m, replace(limits, work=limits.tighten_work), split, until, bound_only=True)


def merge_bound(point: Point, found: Point) -> Point:
    """``point`` with the bound of its bound work ``found`` (:func:`bound_task`) where that is
    higher (never above the point's own schedule), the note saying where it came from; OPTIMAL
    where it meets the schedule.

    Example:
        >>> pt = Point("v", 3.0, "FEASIBLE", 228.5, 207.0, 3.0, None, None)
        >>> q = merge_bound(pt, Point("v", 3.0, "UNKNOWN", None, 218.5, None, None, None, "the relaxation of device 7"))
        >>> q.bound, q.status, q.note
        (218.5, 'FEASIBLE', 'bound raised from 207 to 218.5 by the relaxation of device 7 (design --bound-work)')
        >>> merge_bound(pt, Point("v", 3.0, "UNKNOWN", None, 200.0, None, None, None)) is pt
        True
    """
    if point.time is None:
        return point
    bound = min(found.bound, point.time)
    if bound <= point.bound + EPS:
        return point
    note = f"bound raised from {point.bound:.10g} to {bound:.10g} by {found.note} (design --bound-work)"
    status = "OPTIMAL" if bound >= point.time - EPS else point.status
    return replace(point, bound=bound, status=status, note=f"{point.note}; {note}" if point.note else note)


def tighten_point(point: Point, setup: Setup, m: int, split: bool, limits: Limits, wall: float) -> Point:
    """``point`` with its bound raised by the critical device's relaxation given
    ``limits.tighten_work`` (``wall``: a wall-clock stop, in seconds from now); unchanged where it
    found no schedule, is proven optimal or within the gap limit already, or where nothing higher
    was proven.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 3, 3, PresetSettings(costs="F=1,B=2"))[0]
        >>> pt = Point("linear", math.inf, "FEASIBLE", 16.0, 12.0, 3.0, None, None)
        >>> q = tighten_point(pt, s, 3, False, Limits(1.0), 60.0)
        >>> q.bound, q.note  # (m + p - 1)(tF + tB): device 2's first F arrives at 2, 9 of work, 4 back
        (15.0, 'bound raised from 12 to 15 by the relaxation of device 2 (design --bound-work)')
    """
    if not wants_bound(point, limits) or wall <= 0:
        return point
    return merge_bound(point, solve_point(bound_task(point, setup, m, split, limits, time.time() + wall)))


def tighten_front(
    points: Sequence[Point],
    setups: Sequence[Setup],
    m: int,
    split: bool,
    limits: Limits,
    until: float | None = None,
    report: Report | None = None,
    run_tasks: RunTasks | None = None,
    extra: Sequence[Point] = (),
) -> tuple[list[Point], bool]:
    """Every point with the frontier's bounds tightened (:func:`bound_task`, the largest budget
    first, on ``run_tasks``: one after another in this process by default, or the run's executor;
    :func:`merge_bound`) and made consistent across budgets again; ``until``: the run's wall-clock
    ceiling (a ``time.time()`` instant) after which no bound work starts; ``extra``: the families
    as frontier candidates (:func:`.rework_front`). Returns the points and whether Ctrl-C stopped
    the work (what was done is kept).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 3, 3, PresetSettings(costs="F=1,B=2"))
        >>> pts = [Point("linear", math.inf, "FEASIBLE", 16.0, 12.0, 3.0, None, None)]
        >>> [(q.bound, q.status) for q in tighten_front(pts, s, 3, False, Limits(1.0))[0]]
        [(15.0, 'FEASIBLE')]
    """
    if limits.tighten_work <= 0 or (until is not None and time.time() >= until):
        return list(points), False
    by_label = {s.label: s for s in setups}
    return rework_front(
        points,
        lambda q: wants_bound(q, limits),
        lambda q: bound_task(q, by_label[q.placement], m, split, limits, until),
        merge_bound,
        run_tasks,
        report,
        extra,
    )


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
