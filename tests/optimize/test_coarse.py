"""Modulo blocks on a coarse grid (``ppverify.optimize.coarse``): a block found with durations
and delays rounded up is, at its nominal times, a valid, collision-free timing of the true ops
within the cap; the orders timed with the true costs are valid schedules (async engine, Z3) no
slower than the coarse nominal step; and profiled costs (ticks of 0.5 us) do get blocks."""

from __future__ import annotations

from fractions import Fraction

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import loop, v_shape
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.optimize.bounds import heads_tails
from ppverify.optimize.coarse import (
    COARSE_PERIOD_TICKS,
    block_candidates,
    coarse_candidates,
    coarse_factor,
    coarse_instance,
)
from ppverify.optimize.heuristic import memory_ok, time_programs
from ppverify.optimize.modulo import MAX_PERIOD_TICKS, least_interval, modulo_block, modulo_candidates
from ppverify.optimize.periodic import periodic_candidates, periodic_programs
from ppverify.optimize.problem import Problem, instance
from ppverify.verify import verify
from tests.optimize.test_modulo import assert_nominal_times_valid
from tests.optimize.test_stage_slots import assert_valid_start

# irregular costs (tenths: a fine tick of 0.1) and delays, rounded up by several coarse ticks
CASES = [
    ("v", 2, 4, (1.3, 1.1, 0.7), 0.3, 1.0, 3),
    ("v", 3, 6, (1.7, 1.2, 0.9), 0.1, 1.5, 4),
    ("loop", 2, 4, (2.3, 1.9, 1.1), 0.2, 2.0, 5),
    ("v", 2, 6, (1.9, 2.1, 0.3), 0.0, 1.0, 7),
]


def _problem(place: str, p: int, m: int, costs: tuple[float, float, float], delay: float, cap: float) -> Problem:
    pl = v_shape(p) if place == "v" else loop(p, 2)
    f, i, w = costs
    return Problem(pl, m, CostModel.abstract(pl, F=f, I=i, W=w), FixedDelay(delay), split=True, memory_cap=cap)


@pytest.mark.parametrize(("place", "p", "m", "costs", "delay", "cap", "g"), CASES)
def test_a_coarse_block_is_a_valid_timing_of_the_true_ops(place, p, m, costs, delay, cap, g):
    """The coarse block's nominal times, in fine ticks, meet every true dependency, never overlap
    on a device and hold at most the cap (counted event by event with the true ends); its orders
    timed with the true costs keep the cap, are a valid schedule (async engine, Z3) and end no
    later than the coarse nominal step."""
    pr = _problem(place, p, m, costs, delay, cap)
    inst = instance(pr)
    coarse = coarse_instance(inst, g)
    assert all(dc * g >= d for dc, d in zip(coarse.dur, inst.dur))
    head, tail = heads_tails(coarse)
    crit = max(h + d + t for h, d, t in zip(head, coarse.dur, tail))  # one microbatch at a time fits
    lo = least_interval(coarse)
    found = 0
    for copies, period in ((1, crit), (1, int(lo * 3 / 2) + 1), (2, int(lo * 2) + 2)):
        if period >= lo * copies:
            block = modulo_block(coarse, period, copies, work=0.3)
            if block is None:
                continue
            found += 1
            interval = Fraction(period, copies)
            dag = inst.dag
            at = assert_nominal_times_valid(inst, [x * g for x in block], interval * g)  # in fine ticks
            progs = periodic_programs(coarse, block, interval)
            assert memory_ok(inst, progs)
            c = time_programs(inst, progs, "coarse")
            nominal = max(at[i] + coarse.dur[i] * g for i in range(dag.num_ops))
            assert c.objective <= nominal
            assert_valid_start(pr, inst, c)  # the problem's cap is ``cap``
    assert found > 0  # the test checks something: at least the period of the critical path has a block


def test_coarse_instance_rounds_up_by_hand():
    """F = 1.3, I = 1.1, W = 0.7 per device share on V (0.65, 0.55, 0.35 per stage: 13, 11, 7
    ticks of 0.05) and a delay of 0.3 (6 ticks), on a grid of 4 ticks: 4, 3, 2 and 2."""
    inst = instance(_problem("v", 2, 2, (1.3, 1.1, 0.7), 0.3, 1.0))
    assert inst.tick == pytest.approx(0.05)
    coarse = coarse_instance(inst, 4)
    by_kind = {(op.kind, d) for op, d in zip(inst.dag.ops, coarse.dur)}
    assert by_kind == {("F", 4), ("I", 3), ("W", 2)}
    assert {x for row in coarse.delay for x in row} == {0, 2}
    assert coarse.tick == pytest.approx(0.2) and not coarse.exact
    assert (coarse.alloc, coarse.free, coarse.cap) == (inst.alloc, inst.free, inst.cap)


def _profiled(p: int, m: int, cap: float) -> Problem:
    # the zero-bubble paper's profiled row 0 (ms with three decimals, transfer 0.601)
    pl = v_shape(p)
    return Problem(pl, m, CostModel.abstract(pl, F=18.522, I=18.086, W=9.337), FixedDelay(0.601), memory_cap=cap)


def test_the_coarse_factor_fits_the_period_and_loses_little():
    """Profiled costs: the fine least period is far above the block model's limit; the coarse
    tick brings three least intervals under the coarse limit, and rounding up raises the least
    interval by at most the ops of one microbatch on a device times a coarse tick (the memory
    part: about thirty ops' round trip, so a loose 40 ticks)."""
    inst = instance(_profiled(4, 12, 3.0))
    lo = least_interval(inst)
    assert lo * 3 > MAX_PERIOD_TICKS
    g = coarse_factor(inst, 3)
    assert g is not None
    rounded = least_interval(coarse_instance(inst, g))
    assert rounded * 3 <= COARSE_PERIOD_TICKS * 1.25 <= MAX_PERIOD_TICKS
    assert lo <= rounded * g <= lo + 40 * g


def test_profiled_costs_get_coarse_blocks():
    """V, p = 4, m = 12, budget 3, the profiled costs: the exact grid gets no block (too fine
    for the block model) and block_candidates finds one on the
    coarse grid, and its schedule is valid within the cap (async engine, Z3) and faster than one
    microbatch after another."""
    pr = _profiled(4, 12, 3.0)
    inst = instance(pr)
    start = min(c.objective for c in periodic_candidates(inst))  # as optimize passes its best start
    assert modulo_candidates(inst, start, work=1.0) == ([], 0.0)
    found, used = block_candidates(inst, start, work=1.0)
    assert found and all(c.source.startswith("coarse-block") for c in found)
    assert 0 < used <= 1.05
    # one microbatch after another: 8 stages of F / 2 down, I / 2 back, the last W / 2, 14 hops
    serial = pr.m * (4 * 18.522 + 4 * 18.086 + 9.337 / 2 + 14 * 0.601)
    busy = pr.m * (18.522 + 18.086 + 9.337)  # a device's work
    for c in found:
        sched = Schedule(pr.placement, pr.m, c.programs, inst.dag.schedule.pipe_of_mb, c.source)
        tl = run(sched, pr.costs, pr.comm, semantics="async")
        assert tl.makespan == pytest.approx(c.objective * inst.tick)
        assert max(tl.peak_memory()) <= 3.0 + 1e-9
        assert busy <= tl.makespan < serial
        assert verify(sched, pr.costs, pr.comm, memory_cap=3.0).valid


def test_no_coarse_grid_where_the_fine_one_fits():
    """Unit costs: the exact grid fits, so no coarse tick (and the candidates are the fine ones)."""
    pr = _problem("v", 2, 4, (1, 1, 1), 0.0, 1.0)
    assert coarse_factor(instance(pr), 3) is None
    assert coarse_candidates(instance(pr)) == ([], 0.0)


def test_coarse_instance_of_factor_one_is_the_instance():
    inst = instance(_problem("v", 2, 2, (1, 1, 1), 0.0, 1.0))
    assert coarse_instance(inst, 1) is inst
