"""A design point's time is its schedule's own, timed as soon as possible (docs/design.md: "timed by
the async engine"), and so is ``optimize``'s value: the hunt's V, p = 3, m = 6 point at budget 4
printed 21.5, CP-SAT's FEASIBLE objective, while ``simulate`` of the saved schedule gave 21.45
(the solver's timeline held slack its order does not need)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from ppverify.design.points import point_problem, solve_point
from ppverify.design.spec import Limits, Task, setups
from ppverify.optimize import optimize
from ppverify.systems.preset_models import PresetSettings

# V on 3 devices: stages 0..5 on devices 0, 1, 2, 2, 1, 0; costs per device share over 2 stages
# each: F = 1.2/2 = 0.6, I = 1.1/2 = 0.55, W = 0.6/2 = 0.3; 0.5 between stages on two devices
_DEV = [0, 1, 2, 2, 1, 0]
_DUR = {"F": Fraction("0.6"), "I": Fraction("0.55"), "W": Fraction("0.3")}
_DELAY = Fraction("0.5")


def _asap(programs) -> Fraction:
    """An independent as-soon-as-possible timing of V's programs: F after the previous stage's F,
    I after its own F and the next stage's I, W after its I, each device in its program's order."""
    last = len(_DEV) - 1

    def hop(a: int, b: int) -> Fraction:
        return _DELAY if _DEV[a] != _DEV[b] else Fraction(0)

    def preds(s: int, k: str, j: int) -> list[tuple[tuple[int, str, int], Fraction]]:
        if k == "F":
            return [((s - 1, "F", j), hop(s - 1, s))] if s > 0 else []
        if k == "I":
            return [((s, "F", j), Fraction(0))] + ([((s + 1, "I", j), hop(s + 1, s))] if s < last else [])
        return [((s, "I", j), Fraction(0))]

    progs = []
    for prog in programs:
        ops = []
        for op in prog:
            s, k, j = re.fullmatch(r"(\d+)([FIW])(\d+)", str(op)).groups()
            ops.append((int(s), k, int(j)))
        progs.append(ops)
    end: dict[tuple[int, str, int], Fraction] = {}
    ptr, free = [0] * len(progs), [Fraction(0)] * len(progs)
    moved = True
    while moved:
        moved = False
        for d, ops in enumerate(progs):
            while ptr[d] < len(ops) and all(q in end for q, _ in preds(*ops[ptr[d]])):
                op = ops[ptr[d]]
                start = max([free[d]] + [end[q] + dl for q, dl in preds(*op)])
                end[op] = free[d] = start + _DUR[op[1]]
                ptr[d] += 1
                moved = True
    assert len(end) == sum(len(o) for o in progs), "the programs deadlock"
    return max(end.values())


@pytest.fixture(scope="module")
def setup():
    return setups("v", 3, 6, PresetSettings(costs="F=1.2,I=1.1,W=0.6", comm_delay=0.5))[0]


def test_design_point_time_is_the_schedules_asap_time(setup):
    # the hunt's `design ... --work-limit 0.2 --bound-work 0 --search-work 0` point at budget 4
    pt = solve_point(Task(0, setup, 4.0, 6, Limits(0.2, bound_work=0, search_work=0)))
    assert pt.schedule is not None
    assert pt.time == pytest.approx(float(_asap(pt.schedule.programs)), abs=1e-9)
    assert pt.bound <= pt.time + 1e-9


def test_optimize_value_is_the_schedules_asap_time(setup):
    # the same point's optimize call (as solve_point makes it): a FEASIBLE value is the order's
    # ASAP time too, and so is its timeline's makespan
    res = optimize(
        point_problem(setup, 4.0, 6), time_limit=900, workers=1, seed=0, work_limit=0.2, gap_limit=0.01,
        relax_share=0.5, relax_first=True, block_share=0.8,
    )  # fmt: skip
    assert res.schedule is not None
    asap = float(_asap(res.schedule.programs))
    assert res.objective == pytest.approx(asap, abs=1e-9)
    assert float(res.timeline.makespan) == pytest.approx(asap, abs=1e-9)
