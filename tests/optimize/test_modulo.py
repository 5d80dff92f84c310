"""Modulo-scheduled blocks (``ppverify.optimize.modulo``): every start they give is a valid
schedule within the cap (the async engine's peak and Z3's memory property), its step is the
nominal periodic step or less, and the steady-state memory the block model counts is what the
program orders hold."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.core.errors import PPVerifyError
from ppverify.core.schedule import Schedule
from ppverify.optimize import instance, optimize
from ppverify.optimize.heuristic import memory_ok
from ppverify.optimize.modulo import intervals, least_interval, modulo_block, modulo_candidates
from ppverify.optimize.periodic import periodic_candidates, periodic_programs
from ppverify.verify import verify
from tests.optimize.test_stage_slots import PROBLEMS, _problem, assert_valid_start


def _held(inst, block, interval: Fraction, d: int) -> int:
    """The most a device holds at nominal times, counted op by op (frees before allocations at
    the same time), independently of the block model's phase arithmetic."""
    dag = inst.dag
    events = []
    for i in inst.device_ops(d):
        at = block[i] + dag.ops[i].mb * interval
        if inst.alloc[i]:
            events.append((at, 1, inst.alloc[i]))
        if inst.free[i]:
            events.append((at + inst.dur[i], 0, -inst.free[i]))
    level = peak = 0
    for _, _, x in sorted(events):
        level += x
        peak = max(peak, level)
    return peak


def assert_nominal_times_valid(inst, block, interval) -> list:
    """Microbatch ``j`` at ``block + j * interval`` (ticks of ``inst``): every dependency met, no
    two ops of a device overlapping, at most the cap held on each device. Returns the times."""
    dag = inst.dag
    at = [block[i] + dag.ops[i].mb * interval for i in range(len(dag.ops))]
    for i in range(len(dag.ops)):
        for k, q in enumerate(dag.pred[i]):
            if q >= 0:
                assert at[i] >= at[q] + inst.dur[q] + inst.delay[i][k]
    for d in range(inst.p):
        runs = sorted((at[i], at[i] + inst.dur[i]) for i in inst.device_ops(d))
        assert all(b[0] >= a[1] for a, b in zip(runs, runs[1:]))
        assert _held(inst, block, interval, d) <= inst.cap
    return at


@given(PROBLEMS, st.integers(0, 3), st.sampled_from([1, 2, 3]))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_blocks_never_collide_and_keep_the_cap(case, extra, copies):
    """A block found at an interval is a collision-free timing of its orders: on each device
    no two ops' nominal runs overlap, every dependency is met, and the memory held at nominal
    times (counted event by event) stays within the cap."""
    pr = _problem(*case)
    inst = instance(pr)
    lo = least_interval(inst)
    period = int(lo * copies) + extra + 1
    block = modulo_block(inst, period, copies, work=0.3)
    if block is None:
        return
    interval = Fraction(period, copies)
    assert_nominal_times_valid(inst, block, interval)
    assert memory_ok(inst, periodic_programs(inst, block, interval))


@given(PROBLEMS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_block_starts_are_valid_schedules_within_the_cap(case):
    """Every start of modulo_candidates is complete, its async makespan is its objective, and
    Z3 proves every property with the budget as memory cap."""
    pr = _problem(*case)
    inst = instance(pr)
    for c in modulo_candidates(inst, None, work=0.3)[0]:
        assert_valid_start(pr, inst, c)


def test_least_interval_by_hand():
    """V, p = 4, unit costs (0.5 per stage), cap 1.5 (three stage activations): device 0 holds
    stage 0 from F(0) through the 8 forwards and 8 gradients to W(0)'s end (17 half units) and
    stage 7 for F, I, W (3): 20 half-unit activations per microbatch over a cap of 3."""
    inst = instance(_problem("v", 4, 12, (1, 1, 1), 1.5, 0))
    assert least_interval(inst) * Fraction(inst.tick) == Fraction(20, 3) / 2


@pytest.mark.slow
def test_v_p8_budget3_beats_the_greedy_blocks():
    """V, p = 8, m = 24, unit costs, budget 3 (six stage activations): the greedy blocks of
    periodic.py keep the cap only from an interval of 4 (a step of 109); two microbatches per 7
    (3.5 each) keep it, so the step is at most 11 * 7 plus the two-microbatch block, under
    (24 - 1) * 4 + 16.5 (the critical path) = 108.5, and at least the proven bound 92.5."""
    pr = _problem("v", 8, 24, (1, 1, 1), 3.0, 0)
    inst = instance(pr)
    greedy = min(c.objective for c in periodic_candidates(inst)) * inst.tick
    assert greedy == 109.0
    blocks, used = modulo_candidates(inst, int(greedy / inst.tick), work=1.0)
    best = min(c.objective for c in blocks) * inst.tick
    assert 92.5 <= best <= 108.5
    assert 0 < used <= 1.0 + 0.05  # CP-SAT stops a little past its deterministic limit


def test_intervals_by_hand():
    """Between 6 and 7 ticks: 6 (one microbatch per block, or two), 6 1/3 (three), 6 1/2 (two)
    and 6 2/3 (three); 7 itself is excluded."""
    assert intervals(Fraction(6), Fraction(7)) == [
        (Fraction(6), (1, 2)),
        (Fraction(19, 3), (3,)),
        (Fraction(13, 2), (2,)),
        (Fraction(20, 3), (3,)),
    ]


@pytest.mark.slow
def test_optimize_uses_the_blocks_and_turns_them_off():
    """optimize starts from the block when it beats every other start; block_share=0 is the
    run without it (V, p = 4, m = 12, cap 1.5: periodic.py's best is 69)."""
    pr = _problem("v", 4, 12, (1, 1, 1), 1.5, 0)
    kw = dict(time_limit=60, workers=1, work_limit=1.0, local_search=False, tail_share=0)
    on = optimize(pr, **kw)
    off = optimize(pr, block_share=0, **kw)
    assert on.hint.startswith("block") and on.hint_objective < 69
    assert off.hint_objective == 69
    with pytest.raises(PPVerifyError, match="block_share"):
        optimize(pr, block_share=1.5, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("cap, one_each", [(2.0, 131.5), (4.0, 85.5)])
def test_v_p8_two_per_block_reach_the_relaxation_bound(cap, one_each):
    """V, p = 8, m = 24, unit costs, no delay, budgets 2 and 4: one microbatch per block at the
    least whole interval that has a block gives ``one_each``; two microbatches per block at that
    same interval squeeze to the one-device relaxation's bound, so the start is optimal (the
    bisection alone, which stopped at the first block found there, never tried them)."""
    from ppverify.optimize.bounds import lower_bounds
    from ppverify.optimize.relax import relaxation_bound

    pr = _problem("v", 8, 24, (1, 1, 1), cap, 0)
    inst = instance(pr)
    top = min(c.objective for c in periodic_candidates(inst))
    blocks, _used = modulo_candidates(inst, top, work=4.0)
    assert min(c.objective for c in blocks if c.source.startswith("block1")) * inst.tick == one_each
    fastest = min(blocks, key=lambda c: c.objective)
    bound = relaxation_bound(inst, lower_bounds(inst), 600.0, work_limit=10.0, deterministic=True)[0]
    assert fastest.source.startswith("block2") and fastest.objective == bound
    sched = Schedule(pr.placement, pr.m, fastest.programs, inst.dag.schedule.pipe_of_mb, fastest.source)
    assert verify(sched, pr.costs, pr.comm, memory_cap=pr.memory_cap).valid


def test_the_interval_above_the_nominal_cut_is_tried():
    """V, p = 4, m = 12, unit costs, delay 1, cap 1.5: the periodic starts' best is 147 and no
    interval whose nominal step ``(m - 1) T`` plus the critical path beats it has a block; a
    block one tick above that cut does, and squeezed (its first microbatches run closer than
    ``T``) it beats 147, though never CP-SAT's proven optimum 141 (ending.py's example)."""
    pr = _problem("v", 4, 12, (1, 1, 1), 1.5, 1)
    inst = instance(pr)
    top = min(c.objective for c in periodic_candidates(inst))
    assert top * inst.tick == 147
    blocks, used = modulo_candidates(inst, top, work=1.0)
    fastest = min(c.objective for c in blocks) * inst.tick
    assert 141 <= fastest < 147
    assert used <= 1.0 + 0.05
