"""After the points: more work on some frontier points, on the run's executor as the points ran.

The second searches (:mod:`.deepen`) and the bound work (:mod:`.tighten`) both pick frontier points,
make one task each, run the tasks together (one after another in this process, a process pool or
Ray: the result is the same) and merge what each found into its point; :func:`rework_front` is
that loop, the largest budget first, made consistent across budgets again at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .points import Point, frontier, monotone, solve_point
from .spec import Task

#: runs tasks (in this process, a process pool, Ray), calling its second argument (when not None)
#: with each point as it is done, and returns the points done, in task order, and whether Ctrl-C
#: stopped it: :func:`in_turn`, or :func:`~ppverify.design.execute.run_points` without its skips
RunTasks = Callable[[Sequence[Task], Callable[[Point], None] | None], tuple[list[Point], bool]]

#: after each point: (how many done, how many in all, the point before, the point after)
Report = Callable[[int, int, Point, Point], None]


def in_turn(tasks: Sequence[Task], each: Callable[[Point], None] | None = None) -> tuple[list[Point], bool]:
    """The tasks solved one after another in this process
    (:func:`~ppverify.design.points.solve_point`), ``each`` called with every point as it is
    done; on Ctrl-C the points done so far and True.

    Example:
        >>> in_turn([])
        ([], False)
    """
    done: list[Point] = []
    try:
        for t in tasks:
            done.append(solve_point(t))
            if each is not None:
                each(done[-1])
    except KeyboardInterrupt:
        return done, True
    return done, False


def points_to_rework(
    points: Sequence[Point], wanted: Callable[[Point], bool], extra: Sequence[Point] = ()
) -> list[Point]:
    """The frontier's points (of ``points``, the families ``extra`` competing with them but never
    picked: a family gets no work) that are ``wanted``.

    Example:
        >>> a = Point("linear", 2.0, "FEASIBLE", 16.0, 12.0, 2.0, None, None)
        >>> fam = Point("linear", 4.0, "FEASIBLE", 15.0, 12.0, 2.0, "1f1b", None)
        >>> points_to_rework([a], lambda q: True), points_to_rework([a], lambda q: True, [fam])
        ([Point(placement='linear', budget=2.0, status='FEASIBLE', time=16.0, bound=12.0, peak=2.0, start=None, schedule=None, note='', cut=False, skipped=False)], [])
    """
    ids = {id(q) for q in points}
    return [q for q in frontier(points, extra) if id(q) in ids and wanted(q)]


def rework_front(
    points: Sequence[Point],
    wanted: Callable[[Point], bool],
    task_of: Callable[[Point], Task],
    merge: Callable[[Point, Point], Point],
    run_tasks: RunTasks | None = None,
    report: Report | None = None,
    extra: Sequence[Point] = (),
) -> tuple[list[Point], bool]:
    """Every point, with the frontier points that are ``wanted`` each given its task
    (``task_of``, the largest budget first, all run by ``run_tasks``: :func:`in_turn` by default)
    and what it found merged in (``merge(point, found)``) and reported as each is done; then made consistent across budgets
    (:func:`~ppverify.design.points.monotone`). ``extra``: the families as frontier candidates, so
    that a point a family beats at its peak gets no work (a family itself gets none). Returns the
    points and whether Ctrl-C stopped the work (what was done is kept).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import Limits, setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0]
        >>> pts = [Point("linear", 2.0, "FEASIBLE", 16.0, 12.0, 2.0, None, None)]
        >>> def search_again(q):
        ...     return Task(0, s, q.budget, 4, Limits(1.0), split=False)
        >>> def keep_faster(q, found):
        ...     return found if found.time < q.time else q
        >>> seen = []
        >>> out, stopped = rework_front(pts, lambda q: True, search_again, keep_faster, report=lambda *a: seen.append(a[:2]))
        >>> out[0].time, out[0].status, stopped, seen  # 1F1B: (m + p - 1)(tF + tB)
        (15.0, 'OPTIMAL', False, [(1, 1)])
    """
    out = list(points)
    todo = sorted(points_to_rework(out, wanted, extra), key=lambda q: -q.budget)
    tasks = [replace(task_of(q), index=n) for n, q in enumerate(todo)]
    by_key = {(q.placement, q.budget): q for q in todo}
    merged: dict[tuple[str, float], Point] = {}

    def each(found: Point) -> None:  # merged and reported as it is done: a second search takes minutes
        q = by_key[(found.placement, found.budget)]
        merged[(q.placement, q.budget)] = merge(q, found)
        if report is not None:
            report(len(merged), len(todo), q, merged[(q.placement, q.budget)])

    done, interrupted = (run_tasks or in_turn)(tasks, each)
    for f in done:  # a runner that called no one back
        if (f.placement, f.budget) not in merged:
            each(f)
    for i, q in enumerate(out):
        if (q.placement, q.budget) in by_key and by_key[(q.placement, q.budget)] is q:
            out[i] = merged.get((q.placement, q.budget), q)  # not done (Ctrl-C): as it was
    return monotone(out), interrupted
