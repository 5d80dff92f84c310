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

#: runs tasks (in this process, a process pool, Ray) and returns the points done, in task order,
#: and whether Ctrl-C stopped it: :func:`in_turn`, or :func:`~ppverify.design.execute.run_points`
#: without its skips
RunTasks = Callable[[Sequence[Task]], tuple[list[Point], bool]]

#: after each point: (how many done, how many in all, the point before, the point after)
Report = Callable[[int, int, Point, Point], None]


def in_turn(tasks: Sequence[Task]) -> tuple[list[Point], bool]:
    """The tasks solved one after another in this process
    (:func:`~ppverify.design.points.solve_point`); on Ctrl-C the points done so far and True.

    Example:
        >>> in_turn([])
        ([], False)
    """
    done: list[Point] = []
    try:
        for t in tasks:
            done.append(solve_point(t))
    except KeyboardInterrupt:
        return done, True
    return done, False


def rework_front(
    points: Sequence[Point],
    wanted: Callable[[Point], bool],
    task_of: Callable[[Point], Task],
    merge: Callable[[Point, Point], Point],
    run_tasks: RunTasks | None = None,
    report: Report | None = None,
) -> tuple[list[Point], bool]:
    """Every point, with the frontier points that are ``wanted`` each given its task
    (``task_of``, the largest budget first, all run by ``run_tasks``: :func:`in_turn` by default)
    and what it found merged in (``merge(point, found)``); then made consistent across budgets
    (:func:`~ppverify.design.points.monotone`). Returns the points and whether Ctrl-C stopped the
    work (what was done is kept).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import Limits, setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0]
        >>> pts = [Point("linear", 2.0, "FEASIBLE", 16.0, 12.0, 2.0, None, None)]
        >>> def search_again(q):
        ...     return Task(0, s, q.budget, 4, Limits(1.0), split=False)
        >>> def keep_faster(q, found):
        ...     return found if found.time < q.time else q
        >>> out, stopped = rework_front(pts, lambda q: True, search_again, keep_faster)
        >>> out[0].time, out[0].status, stopped  # 1F1B: (m + p - 1)(tF + tB)
        (15.0, 'OPTIMAL', False)
    """
    out = list(points)
    todo = sorted((q for q in frontier(out) if wanted(q)), key=lambda q: -q.budget)
    tasks = [replace(task_of(q), index=n) for n, q in enumerate(todo)]
    done, interrupted = (run_tasks or in_turn)(tasks)
    by_point = {(f.placement, f.budget): f for f in done}
    for n, q in enumerate(todo):
        f = by_point.get((q.placement, q.budget))
        if f is None:  # not done (Ctrl-C)
            continue
        i = next(k for k, x in enumerate(out) if x is q)
        out[i] = merge(q, f)
        if report is not None:
            report(n + 1, len(todo), q, out[i])
    return monotone(out), interrupted
