"""Several stages per device under a cap (V, loop): the periodic starting schedules
(``ppverify.optimize.periodic``) are valid schedules within the cap, and the memory-slot
precedences (``ppverify.optimize.stagepair``) with the one-device relaxation they strengthen never
exceed an optimum CP-SAT proves without any analytic bound, nor a schedule found; the blocks of
``ppverify.optimize.modulo`` never go below that optimum."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.dag import structural_problems
from ppverify.core.placement import loop, v_shape
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.optimize import Problem, instance, optimize
from ppverify.optimize.bounds import lower_bounds
from ppverify.optimize.heuristic import canonical_starts
from ppverify.optimize.modulo import modulo_candidates
from ppverify.optimize.periodic import periodic_candidates
from ppverify.optimize.relax import device_bound
from ppverify.optimize.stagepair import slot_precedences
from ppverify.verify import verify


def _problem(place: str, p: int, m: int, costs: tuple[int, int, int], cap: float, delay: int, i_frees: float = 0.0):
    pl = v_shape(p) if place == "v" else loop(p, 2)
    f, i, w = costs
    cm = dataclasses.replace(CostModel.abstract(pl, F=f, I=i, W=w), freed_by_I=(i_frees,) * pl.num_stages)
    return Problem(pl, m, cm, FixedDelay(delay), split=True, memory_cap=cap)


def assert_valid_start(pr: Problem, inst, cand, prove: bool = True) -> Schedule:
    """A start of the optimizer is a complete schedule, timed by the async engine at its
    objective, within the problem's cap; with ``prove``, Z3 proves every property with the cap
    as memory cap too. Returns the schedule."""
    sched = Schedule(pr.placement, pr.m, cand.programs, inst.dag.schedule.pipe_of_mb, cand.source)
    assert not structural_problems(sched)
    tl = run(sched, pr.costs, pr.comm, semantics="async")
    assert tl.makespan == pytest.approx(cand.objective * inst.tick)
    if pr.memory_cap is not None:
        assert max(tl.peak_memory()) <= pr.memory_cap + 1e-9
    if prove:
        rep = verify(sched, pr.costs, pr.comm, memory_cap=pr.memory_cap)
        assert rep.valid, rep.to_text()
    return sched


PROBLEMS = st.tuples(
    st.sampled_from(["v", "loop"]),
    st.integers(2, 3),
    st.integers(2, 5),
    st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    st.sampled_from([1.0, 1.5, 2.0]),
    st.integers(0, 1),
    st.sampled_from([0.0, 0.5]),
)


@given(PROBLEMS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_periodic_schedules_are_valid_within_the_cap(case):
    """Every periodic candidate is a complete, dependency-respecting program order whose
    async-engine makespan is the candidate's objective and whose peak is within the cap."""
    pr = _problem(*case)
    inst = instance(pr)
    for c in periodic_candidates(inst):
        assert_valid_start(pr, inst, c, prove=False)


@given(PROBLEMS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_slot_precedences_hold_in_every_schedule_in_microbatch_order(case):
    """The lemma itself: any schedule within the cap, relabelled into microbatch order (which
    keeps it valid), starts F(s1, j+k+1) no earlier than F(sn, j) ends."""
    pr = _problem(*case)
    inst = instance(pr)
    for c in periodic_candidates(inst):
        starts = canonical_starts(inst, c.starts)
        for d in range(inst.p):
            for u, v, lag in slot_precedences(inst, d):
                assert starts[v] >= starts[u] + lag


SMALL = [
    ("v", 2, 3, (1, 1, 1), 1.0, 0),
    ("v", 2, 4, (1, 1, 1), 1.0, 1),
    ("v", 2, 4, (2, 1, 1), 1.5, 0),
    ("v", 3, 3, (1, 2, 1), 1.0, 0),
    ("loop", 2, 4, (1, 1, 1), 1.0, 0),
    ("loop", 2, 3, (1, 1, 2), 1.0, 1),
    ("loop", 2, 4, (1, 2, 1), 1.5, 0),
]


@pytest.mark.parametrize("case", SMALL, ids=str)
def test_relaxation_never_above_the_optimum(case):
    """The one-device relaxation with the slot precedences, each device, and every analytic
    bound stay at or below the optimum CP-SAT proves with no analytic bound and no start."""
    pr = _problem(*case)
    r = optimize(pr, time_limit=60, workers=1, redundant_bounds=False, hints=False)
    assert r.status == "OPTIMAL"
    inst = instance(pr)
    opt = round(r.objective / inst.tick)
    assert lower_bounds(inst).best <= opt
    for d in range(inst.p):
        assert device_bound(inst, d, "makespan", 30.0, work_limit=10.0) <= opt
    for c in modulo_candidates(inst, None, work=0.5)[0]:  # blocks by CP-SAT (modulo.py): schedules
        assert c.objective >= opt


def test_v_at_the_least_budget_is_proven_optimal_by_device_3():
    """V, p = 4, m = 12, unit costs (0.5 per stage), cap of one microbatch: device 3 (stages 3
    and 4) needs, between F(4, j) and F(4, j+1), the gradient's way back through stages 5-7
    (3 * 0.5 + 3 * 0.5 + F(4)'s 0.5 = 3.5 from F(4)'s start to I(4)'s) and then I(4), I(3), two
    W's and F(3, j+1) (2.5): 6 per microbatch, so the step is at least 11 * 6 plus microbatch
    11's own step 8.5 = 74.5, which the periodic start reaches."""
    pr = _problem("v", 4, 12, (1, 1, 1), 1.0, 0)
    inst = instance(pr)
    by_hand = 11 * 6 + 8.5
    assert device_bound(inst, 3, "makespan", 60.0, work_limit=10.0) * inst.tick == by_hand
    best = min(periodic_candidates(inst), key=lambda c: c.objective)
    assert best.objective * inst.tick == by_hand
