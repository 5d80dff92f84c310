"""The unhinted search (``optimize/below.py``): a schedule better than the incumbent when there is
one, valid and within the cap; a bound that never exceeds the optimum; and, through ``optimize``
with ``design``'s shares, the V points whose periodic start held the hinted search."""

from __future__ import annotations

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import v_shape
from ppverify.optimize import Problem, optimize
from ppverify.optimize.below import search_below
from ppverify.optimize.bounds import lower_bounds
from ppverify.optimize.problem import instance
from ppverify.optimize.solver_setup import schedule_from_starts
from ppverify.verify import verify


def _v(p: int, m: int, delay: float, cap: float) -> Problem:
    pl = v_shape(p)
    return Problem(pl, m, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(delay), split=True, memory_cap=cap)


def test_a_better_schedule_is_valid_within_the_cap_and_the_bound_is_below_the_optimum():
    # V, p = 2, m = 4, cap 2, delay 1: the optimum is 17.5 (the end-gap test proves it), 35 ticks;
    # every op runs one after another in 4 * 12 = 48 ticks, an incumbent any search beats
    pr = _v(2, 4, 1, 2)
    inst = instance(pr)
    got = search_below(inst, lower_bounds(inst), 48, 60.0, 5.0, deterministic=True)
    assert got.value is not None and got.starts is not None and got.value < 48
    assert got.bound <= 35 <= got.value
    schedule, timeline = schedule_from_starts(inst, got.starts, "cp-sat")
    assert timeline.makespan == pytest.approx(got.value * inst.tick)
    assert verify(schedule, memory_cap=2).valid


def test_an_incumbent_at_the_optimum_gives_no_schedule_and_a_bound_at_most_it():
    pr = _v(2, 4, 1, 2)
    inst = instance(pr)
    got = search_below(inst, lower_bounds(inst), 35, 60.0, 5.0, deterministic=True)
    assert got.value is None and got.starts is None and got.bound <= 35


@pytest.mark.slow
@pytest.mark.parametrize("cap, optimum", [(2, 83.5), (3, 62.5)])
def test_the_v_points_the_periodic_start_held_reach_their_optimum(cap, optimum):
    # V, p = 4, m = 12, delay 1: the one-device relaxation proves 83.5 and 62.5; the periodic
    # starts are 86.5 and 64.5, where the hinted search alone stayed (design's work and shares)
    r = optimize(
        _v(4, 12, 1, cap), time_limit=300, workers=1, work_limit=5, deterministic=True, seed=0,
        gap_limit=0.01, relax_share=0.5, block_share=0.8,
    )  # fmt: skip
    assert (r.status, r.objective, r.bound) == ("OPTIMAL", optimum, optimum)
