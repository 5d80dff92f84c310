"""After the points: a second, longer search of the frontier points still above the gap limit.

Every point gets the same work limit, and most need far less of it (proven optimal at once, or
skipped); the few frontier points above the gap limit are often those whose search stopped just
short of the schedule it would have found: linear, p = 8, m = 24, ``F = I = W = 1``, delay 1,
budget 15 ends at 87 against its bound 86 after 5 deterministic seconds and after 12, and proves
86 optimal given 15 (budget 11.5: 99, then 98 from 12). So each such point is searched again from
the start with ``--search-work`` of its own, all of it on schedules (:func:`deepen_point`; the
bound work of :mod:`.tighten` follows), on the run's executor as the points were, the better
schedule and the higher bound of the two runs kept. The runs stop on deterministic work, so the
result still depends on the limits alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace

from .points import EPS, Point, above_gap, solve_point
from .rework import Report, RunTasks, rework_front
from .spec import Limits, Setup, Task


def needs_more(point: Point, limits: Limits) -> bool:
    """Whether a point is left above the gap limit with a schedule (skipped and proven points are
    not: a skipped point's bound already shows that no schedule of it is faster).

    Example:
        >>> needs_more(Point("v", 4.0, "FEASIBLE", 179.5, 173.5, 4.0, None, None), Limits(5.0))
        True
        >>> needs_more(Point("v", 4.0, "FEASIBLE", 174.0, 173.5, 4.0, None, None), Limits(5.0))
        False
    """
    return not point.skipped and above_gap(point, limits)


def search_task(point: Point, setup: Setup, m: int, split: bool, limits: Limits, until: float | None = None) -> Task:
    """The second search of ``point``: its placement and budget, ``limits.search_work`` as the
    work limit, all of it on schedules (``search_only``).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0]
        >>> t = search_task(Point("linear", 2.0, "FEASIBLE", 16.0, 12.0, 2.0, None, None), s, 4, False, Limits(1.0, search_work=3.0))
        >>> t.budget, t.limits.work, t.search_only
        (2.0, 3.0, True)
    """
    return Task(0, setup, point.budget, m, replace(limits, work=limits.search_work), split, until, search_only=True)


def merge_search(point: Point, again: Point, limits: Limits) -> Point:
    """``point`` after its second search ``again``: the faster schedule and the higher bound of the
    two, the note saying what moved.

    Example:
        >>> first = Point("linear", 15.0, "FEASIBLE", 87.0, 86.0, 15.0, "greedy", None)
        >>> q = merge_search(first, Point("linear", 15.0, "FEASIBLE", 86.0, 80.0, 15.0, "block", None), Limits(5.0, search_work=10.0))
        >>> q.time, q.bound, q.status, q.start
        (86.0, 86.0, 'OPTIMAL', 'block')
        >>> q.note
        'searched again with 10 deterministic s (design --search-work): 87 -> 86, bound 86'
    """
    assert point.time is not None
    faster = again.time is not None and again.time < point.time - EPS
    bound = max(point.bound, again.bound)
    if not faster and bound <= point.bound + EPS:
        return replace(point, cut=point.cut or again.cut)
    best = again if faster else point
    assert best.time is not None
    bound = min(bound, best.time)  # both runs' bounds hold for every schedule, the kept one included
    status = "OPTIMAL" if bound >= best.time - EPS else best.status
    moved = f"{point.time:.10g} -> {best.time:.10g}" if faster else f"{point.time:.10g}"
    note = f"searched again with {limits.search_work:g} deterministic s (design --search-work): {moved}, bound {bound:.10g}"
    return replace(
        best,
        bound=bound,
        status=status,
        note=f"{point.note}; {note}" if point.note else note,
        cut=point.cut or again.cut,
    )


def deepen_point(point: Point, setup: Setup, m: int, split: bool, limits: Limits, until: float | None = None) -> Point:
    """``point`` searched again (:func:`search_task`, :func:`~ppverify.design.points.solve_point`)
    and merged (:func:`merge_search`); unchanged where it does not :func:`needs_more` or the
    search work is 0.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0]
        >>> slow = Point("linear", 2.0, "FEASIBLE", 16.0, 12.0, 2.0, None, None)
        >>> q = deepen_point(slow, s, 4, False, Limits(1.0, search_work=1.0))
        >>> q.time, q.bound, q.status  # 1F1B: (m + p - 1)(tF + tB)
        (15.0, 15.0, 'OPTIMAL')
    """
    if limits.search_work <= 0 or not needs_more(point, limits):
        return point
    return merge_search(point, solve_point(search_task(point, setup, m, split, limits, until)), limits)


def deepen_front(
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
    """Every point with the frontier's points above the gap limit searched again
    (:func:`search_task`, the largest budget first, on ``run_tasks``: one after another in this
    process by default, or the run's executor) and merged (:func:`merge_search`), made consistent
    across budgets again; ``until``: the run's wall-clock ceiling, after which no search starts;
    ``extra``: the families as frontier candidates (:func:`.rework_front`). Returns the points and
    whether Ctrl-C stopped the work (what was done is kept).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))
        >>> pts = [Point("linear", 2.0, "FEASIBLE", 16.0, 12.0, 2.0, None, None)]
        >>> [(q.time, q.status) for q in deepen_front(pts, s, 4, False, Limits(1.0, search_work=1.0))[0]]
        [(15.0, 'OPTIMAL')]
    """
    if limits.search_work <= 0 or (until is not None and time.time() >= until):
        return list(points), False
    by_label = {s.label: s for s in setups}
    return rework_front(
        points,
        lambda q: needs_more(q, limits),
        lambda q: search_task(q, by_label[q.placement], m, split, limits, until),
        lambda q, found: merge_search(q, found, limits),
        run_tasks,
        report,
        extra,
    )


def deepen_line(done: int, total: int, before: Point, after: Point) -> str:
    """One progress line on stderr after a frontier point's second search.

    Example:
        >>> a = Point("linear", 15.0, "FEASIBLE", 87.0, 86.0, 15.0, None, None)
        >>> deepen_line(1, 4, a, replace(a, time=86.0, status="OPTIMAL"))
        'design search [1/4] linear budget 15: 87 -> 86, bound 86, gap 0 %'
    """
    budget = "none" if math.isinf(before.budget) else f"{before.budget:g}"
    value = "no schedule" if after.time is None else f"{after.time:.10g}"
    if before.time is not None and after.time is not None and after.time < before.time - EPS:
        value = f"{before.time:.10g} -> {after.time:.10g}"
    gap = "" if after.gap is None else f", gap {100 * after.gap:.3g} %"
    return f"design search [{done}/{total}] {before.placement} budget {budget}: {value}, bound {after.bound:.10g}{gap}"
