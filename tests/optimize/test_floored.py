"""Bounds on a coarser grid rounded down (``ppverify.optimize.floored``): the one-device
relaxation of the rounded problem, times the grid, never exceeds the true optimum, which plain
CP-SAT (no bounds, no symmetry, no starts) proves here on small instances with irregular costs;
rounding down is what the module doc says; the two-device relaxation too; and profiled costs get
the grid that loses the least to the rounding, as computed here by hand."""

from __future__ import annotations

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear, loop, v_shape
from ppverify.optimize import optimize
from ppverify.optimize.floored import FINEST_TICKS, FLOOR_TICKS, critical_bound, floor_factor, floored_instance, kept
from ppverify.optimize.problem import Problem, instance
from ppverify.optimize.relax import device_bound

# irregular costs in tenths (a fine tick of 0.1), transfer delays, caps that bind
CASES = [
    ("v", 2, 3, (1.3, 1.1, 0.7), 0.3, 1.0),
    ("v", 2, 4, (1.9, 0.7, 1.3), 0.1, 1.5),
    ("loop", 2, 3, (2.3, 1.9, 1.1), 0.2, 1.0),
    ("linear", 3, 4, (1.7, 1.3, 0.9), 0.4, 2.0),
    ("v", 2, 4, (1.9, 2.1, 0.3), 0.0, None),
]


def _problem(place, p, m, costs, delay, cap) -> Problem:
    pl = {"v": v_shape, "loop": lambda p: loop(p, 2), "linear": linear}[place](p)
    f, i, w = costs
    return Problem(pl, m, CostModel.abstract(pl, F=f, I=i, W=w), FixedDelay(delay), split=True, memory_cap=cap)


def _optimum(pr: Problem) -> int:
    """The true optimum in ticks, by plain CP-SAT (none of the bounds under test in its model)."""
    res = optimize(
        pr, time_limit=120, workers=1, use_families=False, symmetry=False, redundant_bounds=False, hints=False,
        local_search=False, work_limit=60.0,
    )  # fmt: skip
    assert res.status == "OPTIMAL", res.status
    inst = instance(pr)
    return round(res.objective / inst.tick)


@pytest.mark.parametrize(("place", "p", "m", "costs", "delay", "cap"), CASES)
def test_every_devices_floored_bound_is_at_most_the_optimum(place, p, m, costs, delay, cap):
    pr = _problem(place, p, m, costs, delay, cap)
    inst = instance(pr)
    best = _optimum(pr)
    for g in (2, 3, 5):
        coarse = floored_instance(inst, g)
        for d in range(inst.p):
            bound = device_bound(coarse, d, "makespan", 60.0, 1, 0, 0, 5.0, deterministic=True)
            assert bound * g <= best, (g, d, bound * g, best)
        for pair in zip(range(inst.p), range(1, inst.p)):  # both capacities and memories at once
            bound = device_bound(coarse, pair, "makespan", 60.0, 1, 0, 0, 5.0, deterministic=True)
            assert bound * g <= best, (g, pair, bound * g, best)
    ticks, devices, grid = critical_bound(inst, 5.0, 60.0, pair_work=5.0)
    assert ticks <= best and 1 <= len(devices) <= 2 and grid >= 1


def test_rounding_down_is_by_whole_coarse_ticks():
    # F = 1.3, I = 1.1, W = 0.7 on V (halves per stage: 0.65, 0.55, 0.35 = 13, 11, 7 ticks of 0.05)
    inst = instance(_problem("v", 2, 1, (1.3, 1.1, 0.7), 0.3, None))
    coarse = floored_instance(inst, 4)
    assert sorted(set(inst.dur)) == [7, 11, 13]
    assert sorted(set(coarse.dur)) == [1, 2, 3]  # 7 // 4, 11 // 4, 13 // 4
    assert {x for row in inst.delay for x in row} <= {0, 6} and {x for row in coarse.delay for x in row} <= {0, 1}
    assert coarse.tick == pytest.approx(0.2) and not coarse.exact
    assert coarse.alloc == inst.alloc and coarse.free == inst.free and coarse.cap == inst.cap
    assert floored_instance(inst, 1) is inst


def test_the_grid_loses_the_least_of_the_work_and_the_holding_times():
    # the zero-bubble paper's profiled row 0 (ms): ticks of 0.5 us; per V stage F 9.261, I 9.043,
    # W 4.6685 ms. On a grid of 53.5 us (107 ticks) they are 173, 169 and 87 coarse ticks: each
    # device's 2 (F + I + W) per microbatch keeps 858 * 53.5 = 45903 of 45945 us
    pl = v_shape(4)
    inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=18.522, I=18.086, W=9.337), memory_cap=2))
    assert kept(inst, 107) <= 45903 / 45945 + 1e-12
    assert kept(inst, 107) > 0.999
    # a grid of 1166 ticks (0.583 ms, W about 8 coarse ticks) keeps less: F 15, I 15, W 8 ticks,
    # so 2 * 38 * 583 = 44308 us of work per microbatch, and device 0 holds stage 0 for 8 F + 8 I
    # + W and stage 7 for F + I + W: 286 * 583 = 166738 us of the exact 174073 (the smaller part)
    shortest = min(d for d in inst.dur if d > 0)
    assert shortest == 9337 and shortest // FLOOR_TICKS == 1167
    assert kept(inst, 1166) == pytest.approx(min(44308 / 45945, 166738 / 174073))
    g = floor_factor(inst)
    assert g == 107
    assert FLOOR_TICKS <= shortest // g <= FINEST_TICKS
    assert all(kept(inst, h) <= kept(inst, g) for h in range(shortest // FINEST_TICKS, shortest // FLOOR_TICKS + 1))
    unit = instance(Problem(pl, 12, CostModel.abstract(pl, F=1, I=1, W=1), memory_cap=1))
    assert floor_factor(unit) == 1  # the exact grid is coarse enough already


def test_two_devices_prove_what_one_cannot():
    # V, p = 4, m = 12, row 0 with its 0.601 ms transfers, budget 2 (V-Min's peak): device 3
    # alone proves at most 726.6 ms; devices 2 and 3 together, on the same grid, more than 750
    # (753.44 when proven; design finds 754.30)
    pl = v_shape(4)
    costs = CostModel.abstract(pl, F=18.522, I=18.086, W=9.337)
    inst = instance(Problem(pl, 12, costs, FixedDelay(0.601), split=True, memory_cap=2))
    one, devices, g = critical_bound(inst, 5.0, 600.0)
    assert devices == (3,) and g == 107 and inst.to_time(one) < 727
    two, devices, g = critical_bound(inst, 5.0, 600.0, pair_work=30.0)
    assert devices == (2, 3) and 750 < inst.to_time(two) <= 754.30
