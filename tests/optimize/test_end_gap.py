"""The end-gap bound of devices holding several stages under a cap
(``ppverify.optimize.window.multi_stage_end_gap``, posted through ``lower_bounds``): its value on
an instance worked by hand, and never above the optimum CP-SAT proves with no analytic bound and
no starting schedule (where it raises the bound it had before)."""

from __future__ import annotations

import dataclasses

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import loop, v_shape
from ppverify.optimize import Problem, instance, optimize
from ppverify.optimize.bounds import heads_tails, lower_bounds
from ppverify.optimize.window import multi_stage_end_gap


def _problem(place: str, p: int, m: int, cap: float, delay: int, i_frees: float = 0.0) -> Problem:
    pl = v_shape(p) if place == "v" else loop(p, 2)
    cm = dataclasses.replace(CostModel.abstract(pl, F=1, I=1, W=1), freed_by_I=(i_frees,) * pl.num_stages)
    return Problem(pl, m, cm, FixedDelay(delay), split=True, memory_cap=cap)


def test_end_gap_by_hand_and_tight():
    """V, p = 2, m = 4, cap 2 (four stage activations), 1 tick per op, transfers of 2 ticks.
    Device 1 holds stages 1 and 2. Its last forward F(2, 3) is followed by F(3) on device 0
    (2 + 1), I(3) (1), I(2) back on device 1 (2 + 1), I(1) (1), I(0) on device 0 (2 + 1) and
    W(0) (1): a tail of 12 ticks. After it device 1 runs at most I(2), I(1), W(2), W(1) of
    microbatch 3 (4) and the I and W of the two activations the cap leaves (2 * 2): at least
    12 - 4 - 4 = 4 ticks are not busy. Before it: released at 3 (F(0) and a transfer), its
    first gradient op I(2, 0) at least 8 after its first forward, at most 4 forwards held:
    4 idle. So the step is at least 3 + 4 + 24 (work) + 4 = 35 ticks = 17.5, where the bound
    was 16.5 without the end gap; CP-SAT proves 17.5 optimal."""
    pr = _problem("v", 2, 4, 2.0, 1)
    inst = instance(pr)
    assert multi_stage_end_gap(inst, 1, heads_tails(inst)[1]) == 4
    assert lower_bounds(inst).best == 35
    r = optimize(pr, time_limit=60, workers=1, redundant_bounds=False, hints=False)
    assert r.status == "OPTIMAL" and r.objective == pytest.approx(17.5)


SMALL = [
    ("v", 2, 3, 1.0, 1),
    ("v", 2, 4, 1.5, 1, 0.5),
    ("v", 3, 3, 1.5, 0),
    ("v", 3, 3, 1.5, 1),
    ("v", 3, 4, 2.0, 1, 0.5),
    ("loop", 2, 4, 1.0, 1),
]


@pytest.mark.parametrize("case", SMALL, ids=str)
def test_end_gap_never_above_the_optimum(case):
    """Every analytic bound, the end gap's included, stays at or below the exact optimum."""
    pr = _problem(*case)
    r = optimize(pr, time_limit=60, workers=1, redundant_bounds=False, hints=False)
    assert r.status == "OPTIMAL"
    inst = instance(pr)
    assert lower_bounds(inst).best <= round(r.objective / inst.tick)
