"""The memory-cycle bound (``ppverify.optimize.cycle``): never above an optimum proven by CP-SAT
without any analytic bound, and the hand-derived values on linear placements with F=I=W=1,
c=1 and cap p activations."""

from __future__ import annotations

import dataclasses

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear
from ppverify.optimize import Problem, instance, lower_bounds, optimize, zero_bubble
from ppverify.optimize.bounds import heads_tails
from ppverify.optimize.cycle import memory_cycle_bounds


# each optimum below comes from 30 deterministic seconds of CP-SAT work (what time_limit=30 gave),
# not from the wall clock: with three CPU burners on the 2-core machine the wall limit cut the span
# case (3, 6, 1, 3, zb) after 27 s, FEASIBLE, twice of two; the 600 s only guards against a hang
def _problem(p, m, c, cap, memory, objective="makespan"):
    pl = linear(p)
    if memory == "zb":
        costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    elif memory == "half":
        costs = dataclasses.replace(CostModel.abstract(pl, F=1, I=2, W=1), freed_by_I=(0.5,) * p)
    elif memory == "w-frees":
        costs = dataclasses.replace(CostModel.abstract(pl, F=1, I=1, W=2), freed_by_I=(0.0,) * p)
    else:  # one B that frees everything
        costs = CostModel.abstract(pl, F=1, B=2)
    return Problem(pl, m, costs, FixedDelay(c), split=memory != "B", memory_cap=cap, objective=objective)


GRID = [
    (p, m, c, cap, memory)
    for p in (2, 3, 4)
    for m in (3, 5, 8)
    for c in (0, 1)
    for cap in (1, 1.5, p)
    for memory in ("zb", "half", "w-frees", "B")
    if not (cap == p and p == 2 and memory == "B")  # keep the grid small: a duplicate of cap 1.5 cases
]


@pytest.mark.parametrize("p,m,c,cap,memory", GRID, ids=lambda v: str(v))
def test_never_above_the_optimum(p, m, c, cap, memory):
    pr = _problem(p, m, c, cap, memory)
    # the optimum from CP-SAT alone: no analytic bound posted, no start proven by a bound
    r = optimize(pr, time_limit=600, work_limit=30, workers=1, redundant_bounds=False)
    assert r.status == "OPTIMAL"
    inst = instance(pr)
    cycle = memory_cycle_bounds(inst, *heads_tails(inst), "makespan")
    assert max(cycle) * inst.tick <= r.objective
    assert lower_bounds(inst).best * inst.tick <= r.objective


@pytest.mark.parametrize("p,m,c,cap,memory", [(2, 5, 1, 1, "zb"), (3, 6, 1, 3, "zb"), (4, 8, 0, 1.5, "half")])
def test_span_never_above_the_optimum(p, m, c, cap, memory):
    pr = _problem(p, m, c, cap, memory, objective="span")
    r = optimize(pr, time_limit=600, work_limit=30, workers=1, redundant_bounds=False)
    assert r.status == "OPTIMAL"
    inst = instance(pr)
    assert max(memory_cycle_bounds(inst, *heads_tails(inst), "span")) * inst.tick <= r.objective


@pytest.mark.parametrize("p", [4, 5, 8, 16])
@pytest.mark.parametrize("blocks", [2, 3, 4])
def test_hand_derived_value_on_device_0(p, blocks):
    """F=I=W=1, c=1, cap p, zero-bubble memory, m = blocks*p: the first p forwards back to back,
    then the gradients arrive from R = 4(p-1)+1 on; F(2p-1) waits for the p I's, the p W's and the
    p-1 forwards before it (3p-1 ticks from R), each later block one memory cycle R+2 = 4p-1 after
    the previous one, and the last forward's tail is R-1 + I + W = 4p-2."""
    m = blocks * p
    inst = instance(_problem(p, m, 1, p, "zb"))
    first_cycle = (4 * p - 3) + 3 * p - 1  # x of F(2p-1)
    x_last = first_cycle + (blocks - 2) * (4 * p - 1)
    by_hand = x_last + 1 + (4 * p - 2)
    assert memory_cycle_bounds(inst, *heads_tails(inst), "makespan")[0] == by_hand
    if blocks == 2:
        assert by_hand == 11 * p - 5  # the optimum at m = 2p (unit rows (16,32), (32,64) c=1)


def test_meets_the_optimum_at_m_2p():
    """(4, 8): 39 = 11p - 5 is the optimum; the start meets the bound, proven with no search."""
    r = optimize(_problem(4, 8, 1, 4, "zb"), time_limit=600, work_limit=30, workers=1)
    assert r.status == "OPTIMAL" and r.objective == 39
    assert r.bounds["memory_cycle"] == 39
