"""A design run: the budgets, the placement x budget points solved on an executor (in-process, a
process pool or a Ray cluster: :mod:`.execute`), the families beside them, the frontier, and Z3's verdict on every
frontier schedule.

Ctrl-C stops the points in flight and keeps the finished ones: the frontier is then that of the
points done, and the result says how many were.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..core.errors import ParameterError
from ..core.exact import exact_fraction
from ..core.sizes import format_apart
from ..optimize.solver_setup import check_seed
from ..systems.preset_models import PresetSettings
from .budget_list import budget_items, parse_budgets
from .budgets import budget_cap, budget_holding, within_budget
from .deepen import deepen_front, deepen_line, needs_more
from .execute import run_points
from .families import adopt_families, families_until, family_candidates, on_its_own
from .points import NOT_RUN, FamilyPoint, Point, frontier, held_and_time, monotone, same_time, value_at
from .rework import points_to_rework
from .spec import Limits, Setup, Task, model_options, setups, stage_split
from .tighten import tighten_front, tighten_line, wants_bound


def _typed_number(word: str) -> bool:
    """Whether a budget was typed as a number (``1e9``, ``inf``, ``none``), not a size or ``NMF``."""
    try:
        float(word)
    except ValueError:
        return word.strip().lower() == "none"
    return True


#: wall-clock seconds the families are timed for at least, whatever ``--time-limit``: at small
#: sizes they take milliseconds and are what a run cut short still shows (at m = 5000 they took
#: 12 s: the ceiling, or this floor, stops them between one family and the next)
FAMILY_FLOOR = 1.0


@dataclass(frozen=True)
class DesignRequest:
    """What ``ppverify design`` asks: sizes, placements, budgets (``auto`` or a list), costs and
    communication as preset settings, the limits per point, and whether the backward is split
    (None: split when the costs name I or W).

    Example:
        >>> DesignRequest(4, 12).placements
        'linear,v,loop:2'
    """

    p: int
    m: int
    placements: str = "linear,v,loop:2"
    budgets: str = "auto"
    settings: PresetSettings = field(default_factory=PresetSettings)
    limits: Limits = field(default_factory=Limits)
    split: bool | None = None
    #: skip a point whose bound is no faster than a step already found within its budget
    #: (:func:`~.execute.incumbent`); False: search every point (``--all-points``)
    skip: bool = True

    @property
    def split_backward(self) -> bool:
        """Split backward: as asked, else when the costs name I or W (as ``optimize`` decides),
        given as text or as ``(kind, cost)`` pairs.

        Example:
            >>> from ppverify.systems.preset_models import PresetSettings
            >>> [DesignRequest(4, 8, "v", "auto", PresetSettings(costs=c)).split_backward
            ...  for c in ("F=1,B=2", "F=1,I=1,W=1", (("F", 1.0), ("W", 1.0)))]
            [False, True, True]
        """
        if self.split is not None:
            return self.split
        from ..core.costs import parse_costs

        costs = self.settings.costs
        named = parse_costs(costs) if isinstance(costs, str) else dict(costs or ())
        return "I" in named or "W" in named


@dataclass(frozen=True)
class Design:
    """The result: every point, the families, the frontier, Z3's verdict on each frontier schedule
    (``verified[i]`` for ``front[i]``), how many points were done (fewer when interrupted) and how
    many of those found a schedule by their own search or were skipped, a faster step being
    found within their budget (``found``; before the families were adopted; None when not
    known, e.g. read back from a file).

    Example:
        >>> d = Design(DesignRequest(2, 2), (), (), (), (), 0, 0, False)
        >>> d.to_dict()["frontier"]
        []
    """

    request: DesignRequest
    setups: tuple[Setup, ...]
    points: tuple[Point, ...]
    families: tuple[FamilyPoint, ...]
    front: tuple[Point, ...]
    done: int
    total: int
    interrupted: bool
    verified: tuple[str, ...] = ()
    found: int | None = None
    #: the run's ``--time-limit`` passed while the families were timed: those after were not
    families_cut: bool = False

    @property
    def cut(self) -> int:
        """How many points the run's ``--time-limit`` cut (or left unstarted)."""
        return sum(q.cut for q in self.points)

    @property
    def skipped(self) -> int:
        """How many points were not searched, their bound no faster than a step already found
        within their budget."""
        return sum(q.skipped for q in self.points)

    def family_rows(self) -> list[dict[str, Any]]:
        """Each family with the frontier's value at its peak and the difference (frontier minus
        family). A family faster than the frontier at its peak, or fitting a peak below every
        frontier point's, has a note saying why (:meth:`why_not_on_frontier`); so has one that is
        the frontier there itself (:func:`.family_candidates`) because no budget searched its peak.

        Example:
            >>> from ppverify.systems.preset_models import PresetSettings
            >>> from .points import frontier
            >>> rq = DesignRequest(2, 4, "linear", "1,none", PresetSettings(costs="F=1,B=2"))
            >>> one = Point("linear", 1.0, "OPTIMAL", 24.0, 24.0, 1.0, None, None)
            >>> wide = Point("linear", math.inf, "OPTIMAL", 14.0, 14.0, 4.0, None, None)
            >>> fam = FamilyPoint("1f1b", "linear", 2.0, 15.0, None)
            >>> front = tuple(frontier([one, wide], family_candidates([one, wide], [fam])))
            >>> [(q.peak, q.time, q.bound) for q in front]  # 1F1B under the unconstrained bound
            [(1.0, 24.0, 24.0), (2.0, 15.0, 14.0), (4.0, 14.0, 14.0)]
            >>> d = Design(rq, setups("linear", 2, 4, rq.settings), (one, wide), (fam,), front, 2, 2, False)
            >>> row = d.family_rows()[0]
            >>> row["frontier"], row["difference"], row["note"]
            (15.0, 0.0, 'on the frontier as itself: no budget was searched between its peak 2 and none (the point there runs 14 at peak 4): add 2 to --budgets')
        """
        rows = []
        least = min((q.peak for q in self.front if q.peak is not None), default=None)
        for f in self.families:
            at = value_at(self.front, f.peak)
            diff = None if at is None or at.time is None else at.time - f.time
            if diff is not None and same_time(f.time + diff, f.time):  # one step summed in another order
                diff = 0.0
            row = dict(f.to_dict(), frontier=None if at is None else at.time, difference=diff)
            if diff is not None and diff > 0:
                row["note"] = f"faster than the frontier: {self.why_not_on_frontier(f)}"
            elif at is not None and at.start == f.family and at.note.startswith(on_its_own(f.family)):
                # the frontier there is the family itself: no point was searched at its peak
                why = self.why_not_on_frontier(f)
                if why.startswith("no budget was searched"):
                    row["note"] = f"on the frontier as itself: {why}"
            elif at is None:  # the family fits a peak no frontier point fits: better than nothing there
                where = "the frontier is empty" if least is None else f"its least peak is {least:g}"
                row["note"] = f"fits below every frontier point ({where}): {self.why_not_on_frontier(f)}"
            rows.append(row)
        return rows

    def why_not_on_frontier(self, f: FamilyPoint) -> str:
        """Why family ``f`` is not matched by the frontier at its peak: its placement was not
        searched, it splits the backward where the design does not, no budget searched holds its
        peak, or the least budget that holds it kept a faster step at a larger peak (a point keeps
        the fastest schedule within its budget, a family among them: :func:`.adopt_families`).

        Example:
            >>> d = Design(DesignRequest(2, 4, "linear"), (), (), (), (), 0, 0, False)
            >>> d.why_not_on_frontier(FamilyPoint("zbv", "v", 2.0, 12.5, None))
            'its placement was not searched'
        """
        if f.placement not in {s.label for s in self.setups}:
            return "its placement was not searched"
        if not f.fits_backward(self.request.split_backward):
            return "it splits the backward, the design does not (--backward split)"
        holders = [q for q in self.points if q.placement == f.placement and f.fits(q.budget)]
        if not holders:
            return self._no_budget_fits(f.placement, f.peak)
        q = min(holders, key=lambda x: x.budget)
        if q.time is not None and q.peak is not None and q.peak > f.peak:  # peaks: exact
            budget = "none" if math.isinf(q.budget) else f"{q.budget:g}"
            return (
                f"no budget was searched between its peak {f.peak:g} and {budget} (the point there runs "
                f"{q.time:.10g} at peak {q.peak:g}): add {budget_above(f.exact_peak)} to --budgets"
            )
        return "the search could not show otherwise within its limit"  # kept for safety: see the docstring

    def _no_budget_fits(self, placement: str, peak: float) -> str:
        """Why no point of ``placement`` holds a family of that peak: the run stopped first, or
        every budget done is smaller."""
        if self.interrupted:
            return "the run was stopped before a budget that holds its peak"
        done = [q.budget for q in self.points if q.placement == placement]
        if not done:
            return f"its peak {peak:g} is above every budget searched (none was)"
        # with the digits that tell them apart: a peak of 2 is not "above" a budget printed as 2
        top, held = format_apart([max(done), peak], "activations")
        return f"its peak {held} is above every budget searched (the largest: {top})"

    def activation_bytes(self) -> float | None:
        """The bytes of one budget unit with presets (None with abstract costs)."""
        if not self.setups or self.setups[0].costs.memory_unit != "bytes":
            return None
        return self.setups[0].unit

    def memory_unit(self) -> str:
        """What budgets and peaks count, in words (with presets, the bytes of one)."""
        size = self.activation_bytes()
        if size is None:
            return "activations of one microbatch on a device's share"
        from ..core.sizes import format_bytes

        even = ", the layers split evenly" if stage_split(self.request.settings) is not None else ""
        return f"activations of {format_bytes(size)} (one microbatch on a linear pipeline's largest stage{even})"

    def budget_name(self, budget: float) -> str:
        """``budget`` as ``--budgets`` typed it where it was typed as a number (``inf``, ``1e9``);
        one typed as a size or ``NMF`` in activations, as the peaks beside it (``8GiB``: 2.6184),
        and one not typed (``auto``, a result read back) as ``none`` or its number.

        Example:
            >>> sets = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))
            >>> d = Design(DesignRequest(2, 4, "linear", "2.0,1e9"), sets, (), (), (), 0, 0, False)
            >>> d.budget_name(2.0), d.budget_name(1e9), d.budget_name(math.inf)
            ('2.0', '1e9', 'none')
            >>> Design(DesignRequest(2, 4, "linear", "1,inf"), sets, (), (), (), 0, 0, False).budget_name(math.inf)
            'inf'
        """
        if str(self.request.budgets).strip().lower() != "auto":
            try:
                items = reversed(budget_items(self.request.budgets, self.setups))
                typed = {v: w for w, v in items if _typed_number(w)}
            except ParameterError:  # the run read it; a request built by hand may not be readable
                typed = {}
            if budget in typed:
                return typed[budget]
        return "none" if math.isinf(budget) else f"{budget:g}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, free of wall-clock times: the same at any machine load."""
        rq = self.request
        return {
            "design": {
                "p": rq.p,
                "m": rq.m,
                "placements": [s.label for s in self.setups],
                "costs": rq.settings.costs,
                "comm_delay": rq.settings.comm_delay,
                "system": rq.settings.system,
                "model": rq.settings.model,
                "model_options": model_options(rq.settings),  # --mfu, --tp...: the costs need them
                "backward": "split" if rq.split_backward else "full",
                "work_limit": rq.limits.work,
                "time_limit": rq.limits.ceiling,
                "gap_limit": rq.limits.gap,
                "seed": rq.limits.seed,
                "bound_work": rq.limits.tighten_work,
                "search_work": rq.limits.search_work,
                "pair_work": rq.limits.pair_work,
                "all_points": not rq.skip,
                "memory_unit": self.memory_unit(),
                "activation_bytes": self.activation_bytes(),
                "time_unit": self.setups[0].costs.time_unit if self.setups else "units",
            },
            "points_done": self.done,
            "points_total": self.total,  # more than done when interrupted
            "points_cut": self.cut,
            "points_skipped": self.skipped,
            "points": [q.to_dict() for q in self.points],
            "frontier": [dict(q.to_dict(), verified=v) for q, v in zip(self.front, self.verified)],
            "families": self.family_rows(),
            "interrupted": self.interrupted,
            **({"families_cut": True} if self.families_cut else {}),  # absent: every family timed
        }


def budget_above(peak: float | Fraction) -> str:
    """The shortest budget text, six digits or more, that holds ``peak`` (budget units; exact
    where a Fraction): a peak printed to six digits may read below itself (4.809774 as 4.80977),
    and a budget typed so would not hold it; a budget holds a peak exactly (:mod:`.budgets`).

    Example:
        >>> budget_above(4.809774), budget_above(2.0), budget_above(4.8097700000001)
        ('4.809774', '2', '4.8097700000001')
    """
    held = peak if isinstance(peak, Fraction) else exact_fraction(peak)
    for digits in range(6, 18):
        text = f"{float(held):.{digits}g}"
        if within_budget(held, float(text)):
            return text
    return repr(budget_holding(held))


def auto_budgets(sets: Sequence[Setup], fams: Sequence[FamilyPoint], p: int) -> tuple[float, ...]:
    """``--budgets auto``: the least feasible budget, every family's peak up to ``2p`` on the way,
    and unconstrained (``inf``).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> s = setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))
        >>> auto_budgets(s, [FamilyPoint("1f1b", "linear", 2.0, 15.0, None)], 2)
        (1.0, 2.0, inf)
    """
    least = min(s.least_budget() for s in sets)
    # each family's own peak as the least budget that holds it exactly (rounded to 9 digits, a
    # peak in bytes read below itself and the family did not fit its own budget)
    peaks = {budget_holding(f.exact_peak) for f in fams}
    peaks = {b for b in peaks if least <= b <= 2 * p}
    return tuple(sorted({least, *peaks})) + (math.inf,)


def plan(
    request: DesignRequest, sets: Sequence[Setup], budgets: Sequence[float], until: float | None = None
) -> list[Task]:
    """The points: every placement at every budget it can meet (``until``: the run's ceiling, a
    ``time.time()`` instant). A given budget below every placement's least feasible one is
    refused, naming that least.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> rq = DesignRequest(2, 2, "linear", "0.5", PresetSettings(costs="F=1,B=2"))
        >>> plan(rq, setups("linear", 2, 2, rq.settings), [0.5])
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter budgets=0.5: below the least feasible budget 1 (one microbatch's activations on a device's stages of one pipe)
    """
    least = min(s.least_budget() for s in sets)
    typed = (
        {}
        if parse_budgets(request.budgets, sets) is None
        else dict((v, w) for w, v in budget_items(request.budgets, sets))
    )
    for b in budgets:
        if b < least:  # budgets: exact (the least is the least budget that holds the need)
            word = typed.get(b, f"{b:g}")
            # a size or NMF is named as typed, with what it reads as: 5GiB is no number to compare
            read = "" if word == f"{b:g}" else f"{b:g} activations, "
            raise ParameterError(
                "budgets",
                word,
                f"{read}below the least feasible budget {least:g} (one microbatch's activations on a device's stages of one pipe)",
            )
    tasks: list[Task] = []
    for s in sets:
        for b in budgets:
            if b >= s.least_budget():
                tasks.append(Task(len(tasks), s, float(b), request.m, request.limits, request.split_backward, until))
    return tasks


def progress_line(done: int, total: int, pt: Point, wall: float) -> str:
    """One line of progress on stderr after a point.

    Example:
        >>> progress_line(1, 4, Point("v", 2.0, "FEASIBLE", 41.5, 40.0, 2.0, "v-min", None), 1.25)
        'design [1/4] v budget 2: 41.5, bound 40, gap 3.61 % (FEASIBLE, from v-min) 1.2 s'
        >>> progress_line(2, 4, Point("v", 3.0, "UNKNOWN", None, 36.0, None, None, None, NOT_RUN, cut=True), 2.0)
        "design [2/4] v budget 3: not run: the run's --time-limit had passed 2.0 s"
    """
    budget = "none" if math.isinf(pt.budget) else f"{pt.budget:g}"
    if pt.skipped or pt.note == NOT_RUN:
        return f"design [{done}/{total}] {pt.placement} budget {budget}: {pt.note} {wall:.1f} s"
    value = "no schedule" if pt.time is None else f"{pt.time:.10g}"
    gap = "" if pt.gap is None else f", gap {100 * pt.gap:.3g} %"
    start = f", from {pt.start}" if pt.start else ""
    cut = ", cut by the run's --time-limit" if pt.cut else ""  # else it reads as the work limit's answer
    return f"design [{done}/{total}] {pt.placement} budget {budget}: {value}, bound {pt.bound:.10g}{gap} ({pt.status}{start}{cut}) {wall:.1f} s"


def verify_front(front: Sequence[Point], sets: Sequence[Setup]) -> tuple[str, ...]:
    """Z3's verdict on each frontier schedule, every property checked with the point's budget
    (its own peak when unconstrained) as the memory cap: ``"valid"`` or the first violation.

    Example:
        >>> verify_front([], [])
        ()
    """
    from ..verify import verify

    by_label = {s.label: s for s in sets}
    out = []
    for q in front:
        st = by_label[q.placement]
        if q.schedule is None:
            out.append("no schedule")
            continue
        # the budget's own cap as optimize was given it (point_problem), no slack: a schedule one
        # byte over its budget is not valid within it; unconstrained: the schedule's own peak
        cap = budget_cap(q.budget, st.unit)
        if cap is None:
            cap = held_and_time(q.schedule, st)[0] * exact_fraction(st.unit)
        rep = verify(q.schedule, st.costs, st.comm, memory_cap=float(cap))
        out.append("valid" if rep.valid else rep.violations[0].to_text())
    return tuple(out)


def design(
    request: DesignRequest,
    executor: str = "local",
    workers: int = 1,
    progress: bool = True,
) -> Design:
    """Run a design: the points (placements x budgets), the families, the frontier, verified.
    The request's ``limits.ceiling`` (``--time-limit``) counts from this call.

    Example:
        >>> rq = DesignRequest(2, 2, "linear", "auto", PresetSettings(costs="F=1,B=2"), Limits(5.0))
        >>> d = design(rq, progress=False)
        >>> [(q.peak, q.time, q.bound, v) for q, v in zip(d.front, d.verified)]
        [(1.0, 12.0, 12.0, 'valid'), (2.0, 9.0, 9.0, 'valid')]
    """
    check_seed(request.limits.seed)  # here, not in a worker after the families have run
    ceiling = request.limits.ceiling
    until = None if ceiling is None or math.isinf(ceiling) else time.time() + ceiling
    sets = setups(request.placements, request.p, request.m, request.settings)
    # the families get FAMILY_FLOOR seconds whatever the ceiling: what a run cut short still shows
    fams_until = None if until is None else max(until, time.time() + FAMILY_FLOOR)
    fams, fams_cut = families_until(sets, request.p, request.m, request.settings, fams_until)
    given = parse_budgets(request.budgets, sets)
    budgets = auto_budgets(sets, fams, request.p) if given is None else given
    tasks = plan(request, sets, budgets, until)
    t0 = time.monotonic()
    count = [0]

    def report(pt: Point) -> None:
        count[0] += 1
        if progress:
            print(progress_line(count[0], len(tasks), pt, time.monotonic() - t0), file=sys.stderr, flush=True)

    searched = {s.label for s in sets}
    skip = [f for f in fams if f.placement in searched] if request.skip else None
    points, interrupted = run_points(tasks, executor, workers, report, skip, request.split_backward)
    # a skipped point's budget has its answer already (a faster step found within it)
    found = sum(q.time is not None or q.skipped for q in points)
    points = monotone(adopt_families(points, fams, request.split_backward))

    def on_executor(ts: Sequence[Task], each: Callable[[Point], None] | None = None) -> tuple[list[Point], bool]:
        return run_points(ts, executor, workers, each)  # as the points ran

    lim = request.limits

    def extra() -> list[Point]:  # the families as frontier candidates, under the points' bounds now
        return family_candidates(points, fams, request.split_backward)

    def begin(what: str, wanted: Callable[[Point], bool], work: str) -> None:  # a phase of minutes says so first
        todo = points_to_rework(points, wanted, extra())
        if progress and todo and (until is None or time.time() < until):
            print(
                f"design {what}: {len(todo)} frontier point(s) above the gap limit, {work}", file=sys.stderr, flush=True
            )

    if not interrupted and lim.search_work > 0:
        begin(
            "search",
            lambda q: needs_more(q, lim),
            f"each searched again with {lim.search_work:g} deterministic s (--search-work)",
        )

        def report_search(done: int, total: int, before: Point, after: Point) -> None:
            if progress:
                line = deepen_line(done, total, before, after)
                print(f"{line} {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)

        points, interrupted = deepen_front(
            points, sets, request.m, request.split_backward, request.limits, until, report_search, on_executor, extra()
        )
    if not interrupted and lim.tighten_work > 0:
        pair = f", then {lim.pair_work:g} on it with a neighbour (--pair-work)" if lim.pair_work > 0 else ""
        begin(
            "bound",
            lambda q: wants_bound(q, lim),
            f"each bound given {lim.tighten_work:g} deterministic s (--bound-work){pair}",
        )

        def report_bound(done: int, total: int, before: Point, after: Point) -> None:
            if progress:
                line = tighten_line(done, total, before, after)
                print(f"{line} {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)

        points, interrupted = tighten_front(
            points, sets, request.m, request.split_backward, request.limits, until, report_bound, on_executor, extra()
        )
    front = frontier(points, extra())
    verified = verify_front(front, sets)
    return Design(
        request, sets, tuple(points), tuple(fams), tuple(front), len(points), len(tasks), interrupted, verified, found,
        fams_cut,
    )  # fmt: skip
