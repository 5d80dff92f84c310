"""The forward-first greedy rules (``"FMGW:k"``): every schedule they give is complete, keeps the
cap (the async engine's peak and Z3's memory property), is timed as reported and is never
faster than the analytic bound; and on the instance that motivated them they reach the bound."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear, loop, v_shape
from ppverify.core.schedule import Schedule
from ppverify.optimize import Problem, instance, lower_bounds
from ppverify.optimize.heuristic import greedy, memory_ok
from ppverify.optimize.starts import best_candidate
from ppverify.optimize.variants import forward_first_rules
from ppverify.verify import verify
from tests.optimize.test_stage_slots import assert_valid_start

CASES = st.tuples(
    st.sampled_from(["linear", "v", "loop"]),
    st.integers(2, 4),
    st.integers(2, 6),
    st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    st.sampled_from([None, 1.0, 1.5, 2.0, 3.0]),
    st.integers(0, 2),
)


def _problem(place: str, p: int, m: int, costs: tuple[int, int, int], cap: float | None, delay: int) -> Problem:
    pl = {"linear": linear, "v": v_shape, "loop": lambda n: loop(n, 2)}[place](p)
    f, i, w = costs
    # the cap in one device's share of the model's activations (one stage per device: one)
    return Problem(pl, m, CostModel.abstract(pl, F=f, I=i, W=w), FixedDelay(delay), split=True, memory_cap=cap)


@given(CASES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_forward_first_schedules_are_valid_within_the_cap(case):
    pr = _problem(*case)
    inst = instance(pr)
    best = lower_bounds(inst).best
    for prio, look, open_fwd, wait in forward_first_rules(inst):
        c = greedy(inst, prio, look, open_fwd, wait)
        if c is None:  # a memory deadlock under this rule: it gives no start
            continue
        assert c.source == f"greedy-{prio}"
        assert memory_ok(inst, c.programs)
        assert c.objective >= best
        assert_valid_start(pr, inst, c)


def test_forward_first_reaches_the_bound_by_hand():
    """Linear, p = 8, m = 24, unit costs, delay 1, 16 activations: device 0 runs 24 * 3 units of
    work and waits at least 7 * (1 + 1) for its first gradient (the first forward's trip down the
    pipeline and its gradient's trip back, less its own forward): 86. A start at 86 is optimal."""
    pl = linear(8)
    pr = Problem(pl, 24, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(1), split=True, memory_cap=16.0)
    inst = instance(pr)
    c = best_candidate(inst)
    assert c is not None and c.objective * inst.tick == 86
    assert c.source.startswith("greedy-FMGW:")
    sched = Schedule(pl, 24, c.programs, inst.dag.schedule.pipe_of_mb, c.source)
    assert verify(sched, pr.costs, pr.comm, memory_cap=16.0).valid


def test_a_tie_keeps_the_gradient_first_start():
    """Linear, p = 4, m = 8, unit costs, no cap, no delay: the gradient-first greedy is ZB-H2 at
    (p - 1) tF + m (tF + tI + tW) = 27, the bound; the forward-first rules cannot beat it, so
    the start is not theirs."""
    pl = linear(4)
    inst = instance(Problem(pl, 8, CostModel.abstract(pl, F=1, I=1, W=1), split=True))
    c = best_candidate(inst, use_families=False)
    assert c is not None and c.objective == 27
    assert not c.source.startswith("greedy-FMGW")
