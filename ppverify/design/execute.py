"""The placement x budget points of a design solved on an executor: in this process, a process
pool or a Ray cluster, with the same points skipped on each (a point waits for the points that
may let it be skipped, never for whichever finished first).

Ctrl-C stops the points in flight and keeps the finished ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import replace
from typing import Any

from ..core.errors import ParameterError
from ..sweep.executor import EXECUTORS, stop_pool
from .points import EPS, FamilyPoint, Point, solve_point
from .spec import Task


def blockers(task: Task, tasks: Sequence[Task]) -> list[Task]:
    """The tasks whose points may let ``task`` be skipped: those of the placements before its
    own (in ``--placements`` order) at a budget within its own. Only they, never whichever
    finished first, so the skipped points are the same on every executor.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.run import DesignRequest, plan
        >>> from ppverify.design.spec import setups
        >>> rq = DesignRequest(2, 4, "linear,v", "1,2", PresetSettings(costs="F=1,I=1,W=1"))
        >>> ts = plan(rq, setups(rq.placements, 2, 4, rq.settings), [1.0, 2.0])
        >>> [(b.setup.label, b.budget) for b in blockers(ts[3], ts)]  # v at budget 2
        [('linear', 1.0), ('linear', 2.0)]
    """
    return [t for t in tasks if t.index < task.index and t.setup.label != task.setup.label and t.budget <= task.budget]


def incumbent(
    task: Task, done: Sequence[Point], fams: Sequence[FamilyPoint], split: bool = True
) -> tuple[float, str] | None:
    """The fastest step already found within ``task``'s budget, and what found it: a point
    ``done`` (its :func:`blockers`) or a family of a searched placement that fits the budget
    (:func:`~.points.adopt_families` puts it on its placement's point), None when none is.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import Limits, setups
        >>> s = setups("linear,v", 2, 4, PresetSettings(costs="F=1,I=1,W=1"))
        >>> t = Task(1, s[1], 2.0, 4, Limits(1.0))
        >>> incumbent(t, [Point("linear", 2.0, "OPTIMAL", 15.0, 15.0, 2.0, None, None)], [])
        (15.0, 'linear at budget 2')
        >>> incumbent(t, [], [FamilyPoint("zbv", "v", 2.0, 12.0, None)])
        (12.0, 'the family zbv')
    """
    best: tuple[float, str] | None = None
    for q in done:
        if q.time is not None and (best is None or q.time < best[0] - EPS):
            budget = "none" if math.isinf(q.budget) else f"{q.budget:g}"
            best = (q.time, f"{q.placement} at budget {budget}")
    for f in fams:
        if f.fits(task.budget) and f.fits_backward(split) and (best is None or f.time < best[0] - EPS):
            best = (f.time, f"the family {f.family}")
    return best


def run_points(
    tasks: Sequence[Task],
    executor: str = "local",
    workers: int = 1,
    report: Callable[[Point], None] | None = None,
    skip: Sequence[FamilyPoint] | None = None,
    split: bool = True,
) -> tuple[list[Point], bool]:
    """Solve every task; returns the points in task order and whether Ctrl-C cut the run (the
    points done by then are kept). ``workers`` > 1 runs a process pool; ``executor="ray"`` a Ray
    cluster (``RAY_ADDRESS``, else a local Ray). The result does not depend on either. ``skip``:
    the families of the searched placements; then a task waits for its :func:`blockers` and is
    skipped when its bound is no faster than their :func:`incumbent` (None: every task runs,
    all at once).

    Example:
        >>> run_points([])
        ([], False)
    """
    if executor not in EXECUTORS:
        raise ParameterError("executor", executor, f"expected one of {', '.join(EXECUTORS)}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ParameterError("workers", workers, "must be an integer >= 1")
    found: dict[int, Point] = {}
    waits = {t.index: blockers(t, tasks) if skip is not None else [] for t in tasks}

    def keep(i: int, pt: Point) -> None:
        found[i] = pt
        if report is not None:
            report(pt)

    def ready(t: Task) -> Task | None:  # t with what it must beat, once its blockers are done
        if any(b.index not in found for b in waits[t.index]):
            return None
        if skip is None:
            return t
        return replace(t, beat=incumbent(t, [found[b.index] for b in waits[t.index]], skip, split))

    interrupted = False
    try:
        if executor == "ray":
            _run_ray(tasks, keep, ready)
        elif workers == 1 or len(tasks) <= 1:
            for t in tasks:
                r = ready(t)
                assert r is not None  # in order, every blocker comes first
                keep(t.index, solve_point(r))
        else:
            _run_pool(tasks, keep, ready, workers)
    except KeyboardInterrupt:
        interrupted = True
    return [found[t.index] for t in tasks if t.index in found], interrupted


def _worker_init() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the pool on Ctrl-C
    # by terminate(): the handler a worker inherits from the command raises in Python, which
    # waits for CP-SAT's solve to return, and the pool's worker loop then takes the exception for
    # a task's result and runs the next queued point, while the parent waits at its exit for it
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _submit_ready(pending: list[Task], ready: Callable[[Task], Task | None], submit: Callable[[Task], None]) -> None:
    """Submit, in task order, every pending task whose blockers are done."""
    for t in list(pending):
        r = ready(t)
        if r is not None:
            pending.remove(t)
            submit(r)


def _run_pool(
    tasks: Sequence[Task],
    keep: Callable[[int, Point], None],
    ready: Callable[[Task], Task | None],
    workers: int,
) -> None:
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), initializer=_worker_init)
    try:
        live: dict[Any, int] = {}
        pending = list(tasks)

        def submit(t: Task) -> None:
            live[pool.submit(solve_point, t)] = t.index

        _submit_ready(pending, ready, submit)
        while live:
            finished, _ = wait(set(live), return_when=FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: live[f]):
                keep(live.pop(fut), fut.result())
            _submit_ready(pending, ready, submit)
        pool.shutdown()
    except BaseException:
        stop_pool(pool)  # also when a worker was stopped halfway through sending its point
        raise


def _run_ray(tasks: Sequence[Task], keep: Callable[[int, Point], None], ready: Callable[[Task], Task | None]) -> None:
    from ..sweep.executor import connect_ray

    ray = connect_ray()
    remote = ray.remote(solve_point)
    refs: dict[Any, int] = {}
    pending = list(tasks)

    def submit(t: Task) -> None:
        refs[remote.remote(t)] = t.index

    _submit_ready(pending, ready, submit)
    while refs:
        done, _ = ray.wait(list(refs), num_returns=1)
        for ref in done:
            keep(refs.pop(ref), ray.get(ref))
        _submit_ready(pending, ready, submit)
