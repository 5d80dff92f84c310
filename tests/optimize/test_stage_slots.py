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
from ppverify.optimize.bounds import heads_tails, lower_bounds
from ppverify.optimize.heuristic import canonical_starts
from ppverify.optimize.modulo import modulo_candidates
from ppverify.optimize.periodic import periodic_candidates
from ppverify.optimize.relax import device_bound
from ppverify.optimize.stagepair import slot_cycle_bound, slot_precedences
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


def _proven_optimum(pr, inst) -> int:
    """The optimum (ticks) CP-SAT proves with no analytic bound and no start, within a
    deterministic work limit: the same proof at any machine load."""
    r = optimize(pr, time_limit=600, workers=1, redundant_bounds=False, hints=False, work_limit=30, deterministic=True)
    assert r.status == "OPTIMAL"
    return round(r.objective / inst.tick)


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
    inst = instance(pr)
    opt = _proven_optimum(pr, inst)
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


def _least(m_max: int) -> st.SearchStrategy:
    return st.tuples(
        st.sampled_from(["v", "loop"]),
        st.integers(2, 3),
        st.integers(3, m_max),
        st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
        st.sampled_from([1.0, 1.5, 2.0]),  # k = 0, 0 with r = half a microbatch, 1
        st.integers(0, 1),
        st.sampled_from([0.0, 0.5]),
    )


def _assert_slot_cycle_at_most_the_optimum(case, objective: str) -> None:
    pr = dataclasses.replace(_problem(*case), objective=objective)
    inst = instance(pr)
    bound = max(slot_cycle_bound(inst, d, *heads_tails(inst), objective) for d in range(inst.p))
    assert bound > 0  # it applies at these caps (room for fewer microbatches than m)
    assert lower_bounds(inst).memory_cycle == bound
    opt = _proven_optimum(pr, inst)  # the examples fixed (derandomize): the same proofs at any load
    assert bound <= opt
    for c in periodic_candidates(inst):
        assert bound <= c.objective
    for d in range(inst.p):  # the relaxation with the cycle's lags (slot_cycle_lags)
        assert device_bound(inst, d, objective, 30.0, work_limit=2.0) <= opt


@given(_least(4), st.sampled_from(["makespan", "span"]))
@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_slot_cycle_never_above_the_optimum(case, objective):
    """The slot-cycle bound (``stagepair.slot_cycle_bound``, in the analytic bounds' memory
    cycle) and the one-device relaxation with its lags (``stagepair.slot_cycle_lags``) stay at or
    below the optimum CP-SAT proves with no analytic bound and no start, for both objectives;
    the bound stays below every periodic schedule."""
    _assert_slot_cycle_at_most_the_optimum(case, objective)


@pytest.mark.slow
@given(_least(6))
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_slot_cycle_never_above_the_optimum_up_to_six_microbatches(case):
    """The same with more microbatches: more cycles, and k = 1 with m - k - 1 of them; for the
    makespan (unbounded proofs of the span take minutes from four microbatches on three devices)."""
    _assert_slot_cycle_at_most_the_optimum(case, "makespan")


def test_the_cycle_lags_let_the_relaxation_prove_the_profiled_budget_of_two():
    """The same row at a cap of two microbatches (k = 1). Device 3: F(4) of microbatch 1 ends
    no earlier than both microbatches' forwards after F(3, 0)'s release, 29.586 + 2 * 18.522;
    F(4) ends two microbatches apart are R = 58.518 plus both forwards (18.522) plus the least
    work that frees one microbatch's worth, two W's with their I's (27.423); after the last,
    R, I(4) and its way back (51.6865). So the step is at least
    66.63 + 5 * 104.463 + 58.518 + 51.6865 = 699.1495 ms in closed form, and device 3's
    relaxation with those lags, one worker as ``design`` runs it, proves more, and no more than
    the 754.30 ms that ``design`` finds there."""
    pl = v_shape(4)
    cm = CostModel.abstract(pl, F=18.522, I=18.086, W=9.337)
    inst = instance(Problem(pl, 12, cm, FixedDelay(0.601), split=True, memory_cap=2.0))
    assert lower_bounds(inst).memory_cycle * inst.tick == pytest.approx(66.63 + 5 * 104.463 + 58.518 + 51.6865)
    relaxed = device_bound(inst, 3, "makespan", 60.0, work_limit=5.0, deterministic=True) * inst.tick
    assert 699.1495 + 10 < relaxed <= 754.3045


def test_slot_cycle_proves_the_profiled_least_budget_by_hand():
    """V, p = 4, m = 12, the zero-bubble paper's profiled row 0 per stage (F 9.261, I 9.043,
    W 4.6685 ms, transfers 0.601 ms), cap of one microbatch. Device 3 (stages 3 and 4): F(4, 0)
    ends at 5 * 9.261 + 3 * 0.601 = 48.108; the gradient comes back through stages 5 to 7 in
    R = 3 * 9.261 + 3 * 9.043 + 6 * 0.601 = 58.518; a cycle adds both I's, both W's and both F's
    (45.945); the last microbatch's way back is R, I(4) and the path I(3), three hops to I(0) and
    W(0): 58.518 + 9.043 + 9.043 + 3 * 9.644 + 4.6685 = 110.2045. So the step is at least
    48.108 + 11 * 104.463 + 110.2045 = 1307.4055 ms, what the modulo start reaches."""
    pl = v_shape(4)
    cm = CostModel.abstract(pl, F=18.522, I=18.086, W=9.337)
    pr = Problem(pl, 12, cm, FixedDelay(0.601), split=True, memory_cap=1.0)
    inst = instance(pr)
    assert lower_bounds(inst).best * inst.tick == pytest.approx(48.108 + 11 * 104.463 + 110.2045)
