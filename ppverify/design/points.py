"""The values of a design: one point (CP-SAT's best schedule and certified bound for a placement
under a budget), the registered families as points (built and adopted in :mod:`.families`), and
the frontier (the Pareto-optimal points in peak memory and step time).

:func:`solve_point` is the unit of work a process pool or a Ray worker runs; it depends on nothing
but its :class:`~ppverify.design.spec.Task`, and CP-SAT stops on deterministic work with one
search worker, so a point's result is the same on any executor and at any machine load.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..core.exact import exact_fraction
from ..core.schedule import Schedule
from .budgets import budget_cap, exact_held, within_budget
from .spec import Limits, Setup, Task

#: tolerance of step-time comparisons (sums of costs and delays in two orders differ in their last
#: bits); peaks and budgets compare exactly (:mod:`.budgets`), as ``verify`` holds a cap
EPS = 1e-9
#: the note of a point the run's ``--time-limit`` left no time to start
NOT_RUN = "not run: the run's --time-limit had passed"
#: wall-clock seconds a not-run point's bound may take past the ceiling (then the cheaper one):
#: the skipped points' bound took 0.03 s at V, p = 8, m = 24, and 1.1 s at linear, m = 5000
NOT_RUN_GRACE = 0.25


@dataclass(frozen=True)
class Point:
    """One placement x budget point: the best schedule found (``time``, its ``peak`` in budget
    units) and the proven lower bound on every schedule of that placement within the budget.
    ``start`` names the schedule the search started from (a family or a greedy rule); ``cut``:
    the run's wall-clock ceiling (``--time-limit``) stopped the point before its work limit did
    (or before it started: then no schedule, and the bound that needs no search,
    :func:`analytic_bound`); ``skipped``: not searched, its bound being no faster than a step
    already found within its budget (the note says which).

    Example:
        >>> Point("linear", 4.0, "FEASIBLE", 20.0, 19.0, 4.0, "1f1b", None).gap
        0.05
    """

    placement: str
    budget: float
    status: str
    time: float | None
    bound: float
    peak: float | None
    start: str | None
    schedule: Schedule | None
    note: str = ""
    cut: bool = False
    skipped: bool = False

    @property
    def gap(self) -> float | None:
        """``(time - bound) / time`` (0 = proven optimal), None without a schedule; 0 where the two
        are one step summed in another order (:func:`same_time`), not a gap of 1e-14 %.

        Example:
            >>> Point("linear", 2.0, "OPTIMAL", 1.5000000000000002, 1.5, 2.0, "1f1b", None).gap
            0.0
        """
        from ..optimize import relative_gap

        if self.time is not None and same_time(self.time, self.bound):
            return 0.0
        return relative_gap(self.time, self.bound)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (budget ``None`` when unconstrained; programs as action text)."""
        out: dict[str, Any] = {
            "placement": self.placement,
            "budget": None if math.isinf(self.budget) else self.budget,
            "status": self.status,
            "time": self.time,
            "bound": self.bound,
            "gap": self.gap,
            "peak": self.peak,
            "start": self.start,
        }
        if self.note:
            out["note"] = self.note
        if self.cut:
            out["cut"] = True
        if self.skipped:
            out["skipped"] = True
        if self.schedule is not None:
            out["programs"] = [[str(a) for a in prog] for prog in self.schedule.programs]
        return out


@dataclass(frozen=True)
class FamilyPoint:
    """A registered family at its own (peak, step time) under the design's costs and communication.

    Example:
        >>> FamilyPoint("1f1b", "linear", 4.0, 45.0, None).to_dict()["family"]
        '1f1b'
    """

    family: str
    placement: str
    peak: float
    time: float
    schedule: Schedule | None
    #: the peak in budget units exactly (None: read from ``peak``), what a budget holds or not
    held: Fraction | None = None

    @property
    def exact_peak(self) -> Fraction:
        """The peak in budget units exactly: ``held``, else ``peak`` read exactly.

        Example:
            >>> FamilyPoint("1f1b", "linear", 0.5, 15.0, None).exact_peak
            Fraction(1, 2)
        """
        return exact_fraction(self.peak) if self.held is None else self.held

    def fits(self, budget: float) -> bool:
        """Whether the family's peak is within ``budget``, exactly (:func:`.budgets.within_budget`).

        Example:
            >>> f = FamilyPoint("1f1b", "linear", 2.0, 15.0, None)
            >>> f.fits(2.0), f.fits(1.9999999995), f.fits(math.inf)
            (True, False, True)
        """
        return within_budget(self.exact_peak, budget)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"family": self.family, "placement": self.placement, "peak": self.peak, "time": self.time}

    def fits_backward(self, split: bool) -> bool:
        """Whether the family solves a design's problem: with a full backward (``split`` False)
        one that splits it into I and W solves another.

        Example:
            >>> from ppverify.schedules import build
            >>> zb = FamilyPoint("zb-h1", "linear", 2.0, 13.0, build("zb-h1", 2, 4))
            >>> zb.fits_backward(True), zb.fits_backward(False)
            (True, False)
        """
        return split or self.schedule is None or not self.schedule.has_split_backward


def peak_and_time(schedule: Schedule, setup: Setup) -> tuple[float, float]:
    """A schedule's peak (in budget units) and step time, timed by the async engine under the
    setup's costs and communication, as every point and family is.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0]
        >>> peak_and_time(build("1f1b", 2, 4), s)  # (m + p - 1)(tF + tB) at peak p
        (2.0, 15.0)
    """
    held, time = held_and_time(schedule, setup)
    return float(held), time


def held_and_time(schedule: Schedule, setup: Setup) -> tuple[Fraction, float]:
    """:func:`peak_and_time` with the peak exact (budget units), as a budget holds it or not.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> held_and_time(build("1f1b", 2, 4), setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0])
        (Fraction(2, 1), 15.0)
    """
    from ..engines import run

    tl = run(schedule, setup.costs, setup.comm, semantics="async")
    return exact_held(float(max(tl.peak_memory())), setup.unit), float(tl.makespan)


def point_problem(setup: Setup, budget: float, m: int, split: bool = True) -> Any:
    """The optimization problem of a placement under a budget (``inf``: no cap).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("v", 2, 4, PresetSettings(costs="F=1,I=1,W=1"))[0]
        >>> point_problem(s, 1.5, 4).memory_cap
        1.5
        >>> point_problem(s, 1e9, 4).memory_cap is None  # above the most a device can hold (4)
        True
    """
    from ..optimize import Problem

    # a budget no schedule can fill is no cap: the memory bounds' work grows with the cap (a
    # budget of 1e7 ran out of memory in the energy bound), the answer is the unconstrained one
    exact = budget_cap(budget, setup.unit)
    cap = None if exact is None or budget >= setup.most_held() else float(exact)
    return Problem(setup.placement, m, setup.costs, setup.comm, split, cap, pipe_of_mb=setup.pipes)


def solve_point(task: Task) -> Point:
    """CP-SAT on one point (:func:`ppverify.optimize.optimize` with the budget as memory cap, the
    families and greedy rules as starts, one search worker, the work limit as its stop; with
    ``task.search_only`` all of it on schedules, none on the one-device relaxation's bound; with
    ``task.bound_only`` no schedule, only that relaxation: :func:`bound_point`). The
    wall clock only stops it at :attr:`~ppverify.design.spec.Limits.wall` or at the run's ceiling
    ``task.until``, whichever comes first (then ``cut``); a point whose ceiling has passed is not
    run: no schedule, and the bounds that need no search.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import Limits, setups
        >>> s = setups("linear", 2, 2, PresetSettings(costs="F=1,B=2"))[0]
        >>> pt = solve_point(Task(0, s, 2.0, 2, Limits(5.0), split=False))
        >>> pt.status, pt.time, pt.bound, pt.peak  # 1F1B: (m + p - 1)(tF + tB)
        ('OPTIMAL', 9.0, 9.0, 2.0)
        >>> late = solve_point(Task(0, s, 2.0, 2, Limits(5.0), split=False, until=0.0))
        >>> late.status, late.time, late.bound, late.cut  # the bound a skipped point gets: 1F1B's 9
        ('UNKNOWN', None, 9.0, True)
    """
    import time

    from ..optimize import optimize

    st, lim = task.setup, task.limits
    problem = point_problem(st, task.budget, task.m, task.split)
    cap = problem.memory_cap
    wall = lim.wall
    if task.until is not None:
        wall = min(wall, task.until - time.time())
        if wall <= 0:  # the bounds that need no search still hold
            bound = analytic_bound(problem, NOT_RUN_GRACE)
            return Point(st.label, task.budget, "UNKNOWN", None, bound, None, None, None, NOT_RUN, cut=True)
    if task.bound_only:
        return bound_point(task, problem, wall)
    if task.beat is not None:
        skipped = skip_point(task, problem)
        if skipped is not None:
            return skipped
    # several stages per device under a cap: the one-device relaxation with its memory-slot
    # precedences is what proves those points (V, p = 8, m = 24, budget 2: 129.5 after 1.25
    # deterministic s on device 7, nothing beyond the analytic 113 after 0.75), so it gets half
    several = st.placement.num_stages * st.placement.num_pipes > st.placement.p and cap is not None
    res = optimize(
        problem,
        time_limit=wall,
        workers=1,
        seed=lim.seed,
        work_limit=lim.work,
        gap_limit=lim.gap,
        relax_share=0.0 if task.search_only else 0.5 if several else 0.3,
        # and all of it before the search there: where it proves the start optimal the search is
        # not run (V, p = 8, delay 1, budget 1: 596.5 proven after 72 CPU s, not 190); where it
        # does not, it would run after the search anyway (the search never reads its bound)
        relax_first=several and not task.search_only,
        # and the modulo blocks (optimize/modulo.py) up to 0.8 of it, what they use taken from the
        # search's: V, p = 8, m = 24, budget 3 reaches its bound 92.5 (three microbatches per
        # 20 ticks) after 4 deterministic s of blocks, 96.5 after 2 (two per 14), 109 without
        block_share=0.8 if several else 0.2,
    )
    peak, step = None, res.objective
    if res.schedule is not None:
        peak, timed = peak_and_time(res.schedule, st)
        # durations that share no small tick (presets, in seconds) were rounded down for CP-SAT;
        # optimize then reports the order timed at the true durations, as the families are timed
        # here (the same async run). With exact ticks the schedule's own time is its order timed as soon as possible, never
        # slower than the solver's value (a FEASIBLE timeline may hold slack the order does not need)
        step = timed if not res.exact or step is None else min(step, timed)
    cut = bool(res.solver.get("wall_limited"))
    return Point(
        st.label, task.budget, res.status, step, float(res.bound), peak, res.hint, res.schedule, res.reason,
        cut=cut,
    )  # fmt: skip


def analytic_bound(problem: Any, wall: float | None = None) -> float:
    """The bound of ``problem`` that needs no search: :func:`~ppverify.optimize.bounds.lower_bounds`
    (the skipped points' bound: critical path, device work, what the memory cap forces), given
    ``wall`` seconds (None: no limit); past them the bound of the problem alone
    (:func:`~ppverify.optimize.bounds.problem_bounds`: device work and critical path, no cap).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,I=1,W=1"))[0]
        >>> analytic_bound(point_problem(s, 1.0, 4)), analytic_bound(point_problem(s, 1.0, 4), 0.0)
        (20.0, 12.0)
    """
    from ..optimize import instance
    from ..optimize.bounds import lower_bounds, problem_bounds
    from ..optimize.deadline import Deadline, WallLimitReached

    deadline = None if wall is None else Deadline.after(wall)
    try:
        if deadline is not None and deadline.expired():
            raise WallLimitReached
        inst = instance(problem, deadline=deadline)
        return inst.bound_time(lower_bounds(inst, deadline=deadline).best)
    except WallLimitReached:
        return float(problem_bounds(problem)["best"])


def bound_point(task: Task, problem: Any, wall: float) -> Point:
    """No schedule, only a bound on ``task``'s ``problem`` (:func:`point_problem`): the one-device
    relaxation of the critical device (:func:`~ppverify.optimize.floored.critical_bound`, on a
    coarser grid rounded down where the exact tick is too fine) given ``task.limits.work``
    deterministic seconds, then that device with its busier neighbour given
    ``task.limits.pair_work``, ``wall`` the wall-clock stop; the note names the devices and the grid.
    :func:`solve_point` runs it for a ``bound_only`` task (the bound work of :mod:`.tighten`, on
    the design's executor as the points are), once the run's ceiling is checked.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import Limits, setups
        >>> s = setups("linear", 3, 3, PresetSettings(costs="F=1,B=2"))[0]
        >>> t = Task(0, s, math.inf, 3, Limits(1.0), split=False, bound_only=True)
        >>> pt = bound_point(t, point_problem(s, math.inf, 3, split=False), 60.0)
        >>> pt.time, pt.bound, pt.note  # (m + p - 1)(tF + tB): device 2's first F arrives at 2, 9 of work, 4 back
        (None, 15.0, 'the relaxation of device 2')
    """
    from ..optimize.floored import critical_bound
    from ..optimize.problem import instance

    inst = instance(problem)
    ticks, devices, grid = critical_bound(
        inst, task.limits.work, wall, task.limits.seed, pair_work=task.limits.pair_work
    )
    on = f" on a grid of {inst.to_time(grid):.4g} rounded down" if grid > 1 else ""
    which = f"device {devices[0]}" if len(devices) == 1 else f"devices {' and '.join(map(str, devices))}"
    note = f"the relaxation of {which}{on}"
    return Point(task.setup.label, task.budget, "UNKNOWN", None, inst.bound_time(ticks), None, None, None, note)


def above_gap(point: Point, limits: Limits) -> bool:
    """Whether ``point`` has a schedule that is neither proven optimal nor within the gap limit of
    its bound: the frontier points that get more work after the points (:mod:`.deepen`,
    :mod:`.tighten`).

    Example:
        >>> from ppverify.design.spec import Limits
        >>> above_gap(Point("v", 4.0, "FEASIBLE", 179.5, 173.5, 4.0, None, None), Limits(5.0))
        True
        >>> above_gap(Point("v", 4.0, "FEASIBLE", 174.0, 173.5, 4.0, None, None), Limits(5.0))
        False
    """
    if point.time is None or point.status == "OPTIMAL":
        return False
    return point.gap is None or limits.gap is None or point.gap > limits.gap + EPS


def skip_point(task: Task, problem: Any) -> Point | None:
    """The point not searched when its bound (:func:`~ppverify.optimize.bounds.lower_bounds`,
    no search) is no faster than ``task.beat``: no schedule of its placement within the budget
    can beat the step already found there, so the fastest step at this budget is the same
    without it. None: search.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import Limits, setups
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0]
        >>> t = Task(0, s, 1.0, 4, Limits(1.0), split=False, beat=(20.0, "v at budget 1"))
        >>> pt = skip_point(t, point_problem(s, 1.0, 4, split=False))  # one at a time: 4 * 6
        >>> pt.skipped, pt.bound, pt.note
        (True, 24.0, 'skipped: its bound 24 is no faster than 20, found by v at budget 1')
        >>> skip_point(replace(t, beat=(30.0, "v at budget 1")), point_problem(s, 1.0, 4, split=False)) is None
        True
    """
    assert task.beat is not None
    bound = analytic_bound(problem)
    step, by = task.beat
    if bound < step - EPS:
        return None
    note = f"skipped: its bound {bound:.10g} is no faster than {step:.10g}, found by {by}"
    return Point(task.setup.label, task.budget, "UNKNOWN", None, bound, None, None, None, note, skipped=True)


def same_time(a: float, b: float) -> bool:
    """Whether two step times are the same step (within :data:`EPS`, relative beyond 1: one step
    summed in two orders differs in its last bits, at any scale).

    Example:
        >>> same_time(1.5, 1.5000000000000002), same_time(1.5e10, 1.5e10 + 2e-6), same_time(1.5, 1.6)
        (True, True, False)
    """
    return abs(a - b) <= EPS * max(1.0, abs(a), abs(b))


def monotone(points: Sequence[Point]) -> list[Point]:
    """Each placement's points made consistent across budgets: a schedule found under a smaller
    budget fits every larger one (kept when faster, with a note), and a bound proven under a
    larger budget holds under every smaller one (the larger of the two bounds is kept).

    Example:
        >>> a = Point("loop:2", 4.0, "FEASIBLE", 68.0, 60.0, 4.0, None, None)
        >>> b = Point("loop:2", 5.0, "FEASIBLE", 72.0, 54.0, 4.5, None, None)
        >>> c = Point("loop:2", 6.0, "OPTIMAL", 51.0, 51.0, 5.5, None, None)
        >>> [(q.time, q.bound) for q in monotone([a, b, c])]
        [(68.0, 60.0), (68.0, 54.0), (51.0, 51.0)]
        >>> monotone([a, b])[1].note, monotone([a, replace(b, time=None, peak=None)])[1].note
        ('the schedule found under budget 4 is faster: kept', 'the schedule found under budget 4 fits this budget too: kept')
    """
    out = list(points)
    for label in {q.placement for q in points}:
        idx = sorted((i for i, q in enumerate(out) if q.placement == label), key=lambda i: out[i].budget)
        origin = [out[i].budget for i in idx]  # the budget each point's schedule was found under
        for k in range(1, len(idx)):  # upwards: the best schedule of a smaller budget
            prev, cur = out[idx[k - 1]], out[idx[k]]
            if prev.time is not None and (cur.time is None or prev.time < cur.time - EPS):
                origin[k] = origin[k - 1]
                # "faster" only beside a schedule of its own: a point skipped or cut has none to beat
                fits = "is faster" if cur.time is not None else "fits this budget too"
                note = f"the schedule found under budget {origin[k]:g} {fits}: kept"
                if cur.skipped or cur.note.startswith(NOT_RUN):  # what it was stays said
                    note = f"{cur.note}; {note}"
                status = "OPTIMAL" if prev.time <= cur.bound + EPS else "FEASIBLE"
                out[idx[k]] = replace(
                    cur,
                    time=prev.time,
                    peak=prev.peak,
                    start=prev.start,
                    schedule=prev.schedule,
                    note=note,
                    status=status,
                )
        for k in range(len(idx) - 2, -1, -1):  # downwards: the bound of a larger budget
            nxt, cur = out[idx[k + 1]], out[idx[k]]
            if nxt.bound > cur.bound + EPS:
                status = "OPTIMAL" if cur.time is not None and cur.time <= nxt.bound + EPS else cur.status
                out[idx[k]] = replace(cur, bound=nxt.bound, status=status)
    return out


def frontier(points: Sequence[Point], extra: Sequence[Point] = ()) -> list[Point]:
    """The Pareto-optimal points: by peak, each strictly faster than every point of smaller or
    equal peak. Ties (one peak, one step) go to the first found: ``points`` before ``extra`` (the
    families as candidates, :func:`~ppverify.design.families.family_candidates`), then the
    placement that comes first in ``points`` (their order is ``--placements``'), then the smaller
    budget.

    Example:
        >>> a = Point("linear", 2.0, "OPTIMAL", 30.0, 30.0, 2.0, None, None)
        >>> b = Point("v", 2.0, "OPTIMAL", 28.0, 28.0, 2.0, None, None)
        >>> c = Point("linear", 4.0, "OPTIMAL", 29.0, 29.0, 3.0, None, None)
        >>> [(q.placement, q.time) for q in frontier([a, b, c])]
        [('v', 28.0)]
        >>> v, loop = (Point(pl, 4.0, "OPTIMAL", 25.5, 25.5, 4.0, None, None) for pl in ("v", "loop:2"))
        >>> [q.placement for q in frontier([v, loop])], [q.placement for q in frontier([loop, v])]
        (['v'], ['loop:2'])
    """
    order: dict[str, int] = {}
    for q in points:
        order.setdefault(q.placement, len(order))
    extras = {id(q) for q in extra}
    done = sorted(
        (q for q in [*points, *extra] if q.time is not None and q.peak is not None),
        key=lambda q: (q.peak, q.time, id(q) in extras, order.get(q.placement, len(order)), q.budget),
    )
    out: list[Point] = []
    for q in done:
        assert q.time is not None
        if not out or q.time < (out[-1].time or 0) - EPS:
            out.append(q)
    return out


def value_at(front: Sequence[Point], peak: float) -> Point | None:
    """The frontier's point at ``peak``: the fastest one whose peak is at most ``peak`` (None
    when every frontier point needs more memory).

    Example:
        >>> a = Point("v", 2.0, "OPTIMAL", 28.0, 28.0, 2.0, None, None)
        >>> value_at([a], 3.0).time, value_at([a], 1.0)
        (28.0, None)
    """
    fits = [q for q in front if q.peak is not None and q.peak <= peak]  # peaks: exact
    return min(fits, key=lambda q: (q.time, q.peak), default=None)
