"""The registered families as design points: each family that builds at the design's sizes, timed
under its costs and communication (:func:`family_points`), labelled with the searched placement it
runs on, and put on the points of that placement whose budget it fits where it beats what the
search found there (:func:`adopt_families`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..core.errors import PPVerifyError
from ..core.schedule import Schedule
from .points import EPS, FamilyPoint, Point, held_and_time, same_time
from .spec import Setup, design_unit, stage_split


def family_points(setups: Sequence[Setup], p: int, m: int, settings: Any) -> list[FamilyPoint]:
    """Every registered family that builds at ``(p, m)`` (default parameters; ``v`` or ``waves``
    as the searched ``loop:V`` and ``wave:W`` placements ask), simulated by the async engine under
    the design's costs and communication (two-pipe families with their replica all-reduce); under
    ``--layers-per-stage`` only those with as many stages as it has counts.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> pts = family_points(setups("linear", 2, 2, PresetSettings(costs="F=1,B=2")), 2, 2, PresetSettings(costs="F=1,B=2"))
        >>> [(f.family, f.peak, f.time) for f in pts if f.family == "1f1b"]
        [('1f1b', 2.0, 9.0)]
    """
    return families_until(setups, p, m, settings)[0]


def families_until(
    setups: Sequence[Setup], p: int, m: int, settings: Any, until: float | None = None
) -> tuple[list[FamilyPoint], bool]:
    """:func:`family_points`, stopped once ``until`` (a ``time.time()`` instant: the run's
    ``--time-limit``) has passed; returns the families timed and whether it stopped before the
    last (each is simulated over all ``m`` microbatches: at m = 5000 they took 12 s, which a
    ceiling of 2 s did not stop).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> s = PresetSettings(costs="F=1,B=2")
        >>> families_until(setups("linear", 2, 2, s), 2, 2, s, until=0.0)
        ([], True)
    """
    import time as clock

    from ..core.limits import check_family
    from ..schedules import build
    from ..systems.preset_models import resolve_presets

    split = stage_split(settings)
    out: list[FamilyPoint] = []
    seen: set[tuple[str, tuple]] = set()
    for fam, extra in family_tries(setups, p):
        if until is not None and clock.time() >= until:
            return out, True
        try:
            args = fam.arguments(dict(extra))
            check_family(fam.name, p, m, args)
            sched = build(fam.name, p, m, **extra)
        except (PPVerifyError, ValueError, TypeError):
            continue
        key = (fam.name, tuple(sorted(args.items())))
        if key in seen or (split is not None and sched.num_stages != split):
            continue  # --layers-per-stage's counts split the searched placements' stages only
        seen.add(key)
        ctx = resolve_presets(settings, sched)
        unit = design_unit(ctx.costs, sched.placement, settings, m)
        label = searched_label(sched, setups)
        st = Setup(label, sched.placement, ctx.costs, ctx.comm, tuple(sched.pipe_of_mb), float(unit))
        try:
            held, time = held_and_time(sched, st)
        except PPVerifyError:
            continue
        out.append(FamilyPoint(family_name(fam.name, extra), label, float(held), time, sched, held))
    return out, False


def family_tries(setups: Sequence[Setup], p: int) -> list[tuple[Any, dict[str, int]]]:
    """Each registered family with each set of parameters design tries it with, in order: its
    defaults, and the ``v`` or ``waves`` a searched loop or wave placement gives it (where the
    family takes that parameter).

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> tries = family_tries(setups("linear,loop:3", 2, 6, PresetSettings()), 2)
        >>> [e for f, e in tries if f.name == "interleaved-1f1b"], [e for f, e in tries if f.name == "gpipe"]
        ([{}, {'v': 3}], [{}])
    """
    from ..schedules import families

    tries: list[dict[str, int]] = [{}]
    for s in setups:
        if s.placement.name == "loop":
            tries.append({"v": s.placement.num_stages // p})
        if s.placement.name == "wave":
            tries.append({"waves": s.placement.num_stages // (2 * p)})
    return [(fam, extra) for fam in families() for extra in tries if set(extra) <= {prm.name for prm in fam.params}]


def family_name(name: str, extra: dict[str, int]) -> str:
    """A family's name on the frontier, with the parameters design gave it.

    Example:
        >>> family_name("interleaved-1f1b", {"v": 3}), family_name("gpipe", {})
        ('interleaved-1f1b v=3', 'gpipe')
    """
    return name + "".join(f" {k}={v}" for k, v in extra.items())


def placement_label(schedule: Schedule) -> str:
    """The ``--placements`` label of a schedule's placement (``loop:2``, ``wave:1``, ``v``...).

    Example:
        >>> from ppverify.schedules import build
        >>> placement_label(build("interleaved-1f1b", 2, 4, v=3)), placement_label(build("zbv", 2, 4))
        ('loop:3', 'v')
    """
    pl = schedule.placement
    if pl.name == "loop":
        return f"loop:{pl.num_stages // pl.p}"
    if pl.name == "wave":
        return f"wave:{pl.num_stages // (2 * pl.p)}"
    return pl.name


def searched_label(schedule: Schedule, setups: Sequence[Setup]) -> str:
    """The label of ``schedule``'s placement: a searched placement's own where it is the same
    placement under another name (Hanayo's one wave is V: ``wave:1`` is ``v``), so the family is a
    start of that placement's points and is compared with them; else :func:`placement_label`.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> h = build("hanayo", 3, 6)
        >>> searched_label(h, setups("v", 3, 6, PresetSettings())), searched_label(h, setups("linear", 3, 6, PresetSettings()))
        ('v', 'wave:1')
    """
    label = placement_label(schedule)
    if any(s.label == label for s in setups):
        return label
    same = [s.label for s in setups if s.placement.maps == schedule.placement.maps]
    return same[0] if same else label


def adopt_families(points: Sequence[Point], fams: Sequence[FamilyPoint], split: bool = True) -> list[Point]:
    """Each point, or the fastest family of its placement within its budget when that family is
    faster than what the search found, or as fast at a smaller peak (the point keeps its bound,
    which holds for every schedule within the budget, and says so in its note). Among families
    equally fast the one of the smallest peak is taken. Without ``split`` only families with a
    full backward count (a split one solves another problem).

    Example:
        >>> pt = Point("linear", 4.0, "FEASIBLE", 50.0, 40.0, 4.0, "greedy", None)
        >>> adopt_families([pt], [FamilyPoint("1f1b", "linear", 4.0, 45.0, None)])[0].time
        45.0
        >>> none = Point("linear", math.inf, "OPTIMAL", 1.5, 1.5, 4.0, "gpipe", None)
        >>> adopt_families([none], [FamilyPoint("1f1b", "linear", 2.0, 1.5000000000000002, None)])[0].peak
        2.0
    """
    out = []
    for pt in points:
        fits = [f for f in fams if f.placement == pt.placement and f.fits(pt.budget) and f.fits_backward(split)]
        fastest = min((f.time for f in fits), default=math.inf)
        # one step summed in two orders differs in its last bits: the smaller peak wins a tie (GPipe's
        # 1.4999999999999998 at peak 4 beat 1F1B's 1.5000000000000002 at peak 2, off the frontier)
        best = min((f for f in fits if same_time(f.time, fastest)), key=lambda f: (f.peak, f.family), default=None)
        faster = best is not None and (pt.time is None or (best.time < pt.time and not same_time(best.time, pt.time)))
        leaner = (
            best is not None
            and pt.time is not None
            and same_time(best.time, pt.time)
            and (pt.peak is None or best.peak < pt.peak)  # peaks: exact, as budgets
        )
        if best is not None and (faster or leaner):
            if pt.time is None:  # skipped, not run, or nothing found: no search to compare with
                note = f"{pt.note or 'the search found no schedule within its limit'}; the family {best.family} kept"
            elif leaner:
                note = f"the family {best.family} is as fast as what the search found, at a smaller peak: kept"
            else:
                note = f"the family {best.family} is faster than what the search found within its limit: kept"
            pt = replace(pt, time=best.time, peak=best.peak, start=best.family, schedule=best.schedule, note=note)
            if best.time <= pt.bound + EPS:  # times: one step summed in two orders
                pt = replace(pt, status="OPTIMAL")
            elif pt.status == "UNKNOWN":
                pt = replace(pt, status="FEASIBLE")
        out.append(pt)
    return out


def family_candidates(points: Sequence[Point], fams: Sequence[FamilyPoint], split: bool = True) -> list[Point]:
    """Every family of a searched placement as a frontier candidate: a valid schedule at its own
    (peak, time), under the bound of the smallest budget of its placement that holds its peak (a
    bound on every schedule within that budget, so on the family too). A point keeps the fastest
    schedule within its budget, often at a larger peak than the family's; without these the
    frontier at the family's peak would show a slower schedule, or none, though the family is
    known (ZB-H1 at peak 3 in 29 where V's point of budget 5 gave 29.5, p = 3, delay 1). A family
    above every budget of its placement has no bound and is not one.

    Example:
        >>> pt = Point("linear", 4.0, "OPTIMAL", 40.0, 40.0, 4.0, "greedy", None)
        >>> [(q.peak, q.time, q.bound, q.budget, q.start) for q in
        ...  family_candidates([pt], [FamilyPoint("zb-h1", "linear", 3.0, 45.0, None)])]
        [(3.0, 45.0, 40.0, 4.0, 'zb-h1')]
    """
    out = []
    for f in fams:
        if not f.fits_backward(split):
            continue  # another problem (adopt_families)
        holders = [q for q in points if q.placement == f.placement and f.fits(q.budget)]
        if not holders:
            continue
        q = min(holders, key=lambda x: x.budget)
        status = "OPTIMAL" if f.time <= q.bound + EPS else "FEASIBLE"
        budget = "none" if math.isinf(q.budget) else f"{q.budget:g}"
        note = f"{on_its_own(f.family)}, under the bound of budget {budget}"
        out.append(Point(f.placement, q.budget, status, f.time, q.bound, f.peak, f.family, f.schedule, note))
    return out


def on_its_own(family: str) -> str:
    """How a frontier candidate made of a family begins its note (:func:`family_candidates`).

    Example:
        >>> on_its_own("zb-h1")
        'the family zb-h1 at its own peak'
    """
    return f"the family {family} at its own peak"
