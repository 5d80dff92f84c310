"""The warm-up bound (ppverify/optimize/warmup.py): derived by hand on the zero-bubble paper's
profiled settings, met there by the greedy with its limits (so the optimizer proves those rows
optimal at once), and never above an optimum that CP-SAT proves without it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear, loop
from ppverify.optimize import Problem, instance, lower_bounds, optimize, zero_bubble
from ppverify.optimize.bounds import heads_tails
from ppverify.optimize.heuristic import greedy
from ppverify.optimize.memory import zb_settings
from ppverify.optimize.warmup import warmup_bound, warmup_limits


def zb_rows():
    return zb_settings()


def zb_problem(row, cap_per_p=2):
    p = row["p"]
    pl = linear(p)
    costs = zero_bubble(row["h"], row["a"], 1024).apply(CostModel.abstract(pl, F=row["f"], I=row["i"], W=row["w"]))
    return Problem(pl, row["m"], costs, FixedDelay(row["c"]), split=True, memory_cap=cap_per_p * p, objective="span")


def by_hand(row):
    """Each hop of the first gradient leaves r = tI + 2c - tF on the device it reaches when every
    device runs two forwards more than the next (device p-1 runs one); the cap of 2p forwards
    lets one device run a third forward more, which clears what has built up. The p-1 hops minus
    that one split into two runs of consecutive hops: the longer has at least ceil((p-2)/2) of
    them, and its last device idles that many r's."""
    p, m, f, i, w, c = (row[k] for k in ["p", "m", "f", "i", "w", "c"])
    r = i + 2 * c - f
    assert 0 < r < f  # (the case the formula covers: each hop leaves a remainder below one forward)
    return m * (f + i + w) + -(-(p - 2) // 2) * r


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_warmup_bound_by_hand_on_zero_bubble_settings(n):
    row = zb_rows()[n]
    inst = instance(zb_problem(row))
    head, tail = heads_tails(inst)
    assert warmup_bound(inst, head, tail, "span") * inst.tick == by_hand(row)
    assert lower_bounds(inst).best * inst.tick == by_hand(row)
    # below the zero-bubble repository's own heuristic (an independent tool), as it must be
    assert by_hand(row) <= row["zb2p_span"]


@pytest.mark.parametrize("n", [1, 3])
def test_greedy_with_warmup_limits_meets_the_bound(n):
    """The fewest forwards per device that the bound allows, used as open-forward limits: the
    greedy's warm-up idles exactly what the bound says, and the rest of the step adds nothing."""
    row = zb_rows()[n]
    inst = instance(zb_problem(row))
    head, tail = heads_tails(inst)
    limits = warmup_limits(inst, head, tail, "span")
    p = row["p"]
    # two forwards more per device towards device 0, and one more from a single device on
    steps = [a - b for a, b in zip(limits, limits[1:])]
    assert limits[-1] == 1 and sorted(steps) == [2] * (p - 2) + [3]
    assert greedy(inst, "GFW", False, limits, False).objective * inst.tick == by_hand(row)


def test_optimizer_proves_zero_bubble_rows_optimal():
    row = zb_rows()[1]
    r = optimize(zb_problem(row), time_limit=60, workers=1, work_limit=10)
    assert (r.status, r.objective, r.bound) == ("OPTIMAL", by_hand(row), by_hand(row))
    assert r.hint.endswith("warmup") or "warmup" in r.hint
    assert r.bounds["warmup"] == by_hand(row)


def test_warmup_bound_does_not_apply_to_several_stages_per_device():
    pl = loop(4, 2)
    inst = instance(Problem(pl, 8, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(1), split=True))
    head, tail = heads_tails(inst)
    assert warmup_bound(inst, head, tail, "makespan") == 0
    assert warmup_limits(inst, head, tail, "makespan") is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    p=st.integers(2, 4),
    m=st.integers(1, 5),
    durations=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3)),
    c=st.integers(0, 3),
    cap=st.one_of(st.none(), st.integers(1, 8)),
    split=st.booleans(),
    objective=st.sampled_from(["span", "makespan"]),
)
def test_warmup_bound_never_above_a_proven_optimum(p, m, durations, c, cap, split, objective):
    """CP-SAT without any analytic bound posted (an independent oracle) proves the optimum;
    the warm-up bound never exceeds it."""
    f, g, w = durations
    pl = linear(p)
    costs = CostModel.abstract(pl, F=f, I=g, W=w) if split else CostModel.abstract(pl, F=f, B=g + w)
    pr = Problem(pl, m, costs, FixedDelay(c), split=split, memory_cap=cap, objective=objective)
    inst = instance(pr)
    head, tail = heads_tails(inst)
    bound = warmup_bound(inst, head, tail, objective) * inst.tick
    r = optimize(pr, time_limit=20, workers=1, redundant_bounds=False, use_families=False)
    if r.status == "INFEASIBLE":
        return
    assert r.status == "OPTIMAL"
    assert bound <= r.objective
