"""The optimizer's search: the multi-stage memory-window bound is sound (never above an optimum
found by exhaustive search written here, never above a family's makespan), local search never
worsens its start, and results repeat exactly with one worker and a deterministic budget."""

from __future__ import annotations

import itertools

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.ops import B, F, Op
from ppverify.core.placement import linear, loop
from ppverify.optimize import Problem, instance, lower_bounds, optimize, zero_bubble
from ppverify.optimize.energy import memory_energy_spans
from ppverify.optimize.heuristic import family_candidates, greedy, memory_ok, time_programs
from ppverify.optimize.localsearch import improve, swap_search, tune_greedy
from ppverify.optimize.window import multi_stage_head_idle


def _interleavings(a: list, b: list):
    """Every merge of two chains that keeps each chain's order."""
    n = len(a) + len(b)
    for pos in itertools.combinations(range(n), len(a)):
        out, ia, ib = [], 0, 0
        for k in range(n):
            if k in pos:
                out.append(a[ia])
                ia += 1
            else:
                out.append(b[ib])
                ib += 1
        yield out


def _exhaustive_loop_optimum(p: int, v: int, m: int, dur: dict, c: int, cap_acts: int | None) -> int | None:
    """Smallest makespan over every per-device order of loop(p, v) (v=1: linear) with full
    backward, m=2.

    Each device holds v stages; a microbatch's ops on a device form one chain (F of its stages in
    order, then B in reverse order), so a device's orders are the merges of the two chains. Each
    order is timed as soon as possible by the recurrence start = max(device free, inputs ended +
    c across devices); an order whose forwards would hold more than ``cap_acts`` activations at
    once is skipped (memory is freed at the end of a B)."""
    S = p * v
    dev = [s % p for s in range(S)]
    chains = []
    for d in range(p):
        mine = [s for s in range(S) if dev[s] == d]
        chains.append([[Op(F, s, mb) for s in mine] + [Op(B, s, mb) for s in reversed(mine)] for mb in range(m)])
    assert m == 2

    def preds(op):
        out = []
        if op.kind == F and op.stage > 0:
            out.append(Op(F, op.stage - 1, op.mb))
        if op.kind == B:
            out.append(Op(F, op.stage, op.mb))
            if op.stage < S - 1:
                out.append(Op(B, op.stage + 1, op.mb))
        return out

    per_device = [list(_interleavings(*chains[d])) for d in range(p)]
    best = None
    for orders in itertools.product(*per_device):
        if cap_acts is not None:
            ok = True
            for prog in orders:
                level = 0
                for op in prog:
                    level += 1 if op.kind == F else 0
                    if level > cap_acts:
                        ok = False
                    level -= 1 if op.kind == B else 0
            if not ok:
                continue
        start: dict = {}
        idx = [0] * p
        free = [0] * p
        progress = True
        while progress:
            progress = False
            for d in range(p):
                if idx[d] == len(orders[d]):
                    continue
                op = orders[d][idx[d]]
                if all(q in start for q in preds(op)):
                    t = free[d]
                    for q in preds(op):
                        t = max(t, start[q] + dur[q.kind] + (c if dev[q.stage] != d else 0))
                    start[op] = t
                    free[d] = t + dur[op.kind]
                    idx[d] += 1
                    progress = True
        if any(idx[d] < len(orders[d]) for d in range(p)):
            continue  # deadlock
        value = max(free)
        best = value if best is None else min(best, value)
    return best


@pytest.mark.parametrize("tf,tb,c,cap", [(1, 2, 0, None), (1, 2, 1, None), (2, 3, 1, 2), (1, 1, 2, 3), (1, 2, 1, 2)])
def test_multi_stage_window_bound_below_exhaustive_optimum(tf, tb, c, cap):
    p, v, m = 2, 2, 2
    pl = loop(p, v)
    # abstract costs split a device's share over its v chunks: F=v*tf gives tf per chunk
    costs = CostModel.abstract(pl, F=v * tf, B=v * tb)
    # cap in device-share units: one chunk activation is 1/v of it
    pr = Problem(pl, m, costs, FixedDelay(c), split=False, memory_cap=None if cap is None else cap / v)
    inst = instance(pr)
    assert inst.tick == 1
    opt = _exhaustive_loop_optimum(p, v, m, {F: tf, B: tb}, c, cap)
    b = lower_bounds(inst)
    assert b.best <= opt
    assert max(b.per_device) <= opt
    # and the window argument is not empty here: a device idles before its first backward
    assert multi_stage_head_idle(inst, 0) > 0


@pytest.mark.parametrize("p,tf,tb,c,cap", [(2, 1, 1, 0, 1), (3, 1, 2, 1, 1), (3, 2, 1, 0, 1), (2, 1, 2, 2, None)])
def test_memory_energy_bound_below_exhaustive_optimum(p, tf, tb, c, cap):
    pl = linear(p)
    inst = instance(Problem(pl, 2, CostModel.abstract(pl, F=tf, B=tb), FixedDelay(c), split=False, memory_cap=cap))
    opt = _exhaustive_loop_optimum(p, 1, 2, {F: tf, B: tb}, c, cap)
    spans = memory_energy_spans(inst)
    assert max(spans) <= opt
    assert lower_bounds(inst).best <= opt
    if cap == 1:
        # one activation at a time: device 0 runs each microbatch's whole round trip alone, so the
        # energy bound is the optimum: 2 x (p tF + (p-1) tB + 2(p-1)c + tB)
        assert spans[0] == 2 * (p * tf + p * tb + 2 * (p - 1) * c) == opt


def test_memory_energy_bound_by_hand_with_split_backward():
    """linear(2), F=I=W=1, no delay, m=4, cap of one activation: device 0 holds each activation
    from F0 to the end of its W (F0 F1 I1 I0 W0: 5 ticks), so its span is at least 4 x 5 = 20."""
    pl = linear(2)
    inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1))
    # the I part is held to the end of I0 (4 ticks), the W part to the end of W0 (5 ticks): with
    # the memory model's split of the activation, the energy is between 4 and 5 per microbatch
    assert 16 <= memory_energy_spans(inst)[0] <= 20
    assert (
        lower_bounds(inst).best
        <= optimize(
            Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1), time_limit=30, workers=1
        ).objective
    )


def test_multi_stage_window_by_hand():
    """loop(2, 2), F = I = W = 1 tick per chunk, no delay: device 0's first gradient op is I of
    stage 2, after F0 F1 F2 F3 I3 (5 ticks); with a cap of two chunk activations it can run two
    forwards before: 3 ticks idle, so its span is at least 3*8 + 3 = 27 (m=4, two chunks)."""
    pl = loop(2, 2)
    inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=2, I=2, W=2), split=True, memory_cap=1, objective="span"))
    assert multi_stage_head_idle(inst, 0) == 3
    b = lower_bounds(inst)
    assert b.per_device[0] >= 4 * 2 * 3 + 3  # the memory-time bound (energy.py) may add more
    # a work limit (60 deterministic seconds, what time_limit=60 gave), not the wall: 48 s of the
    # 60 s wall limit went by with three CPU burners on the 2-core machine
    res = optimize(inst.problem, time_limit=600, work_limit=60, workers=1)
    assert res.status == "OPTIMAL" and b.best * inst.tick <= res.objective


@pytest.mark.parametrize("placement", ["linear", "loop"])
@pytest.mark.parametrize("p,m", [(2, 4), (4, 4), (4, 8)])
@pytest.mark.parametrize("c", [0, 1])
@pytest.mark.parametrize("cap", [None, 1, 2])
def test_bound_never_above_any_family(placement, p, m, c, cap):
    pl = linear(p) if placement == "linear" else loop(p, 2)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    for objective in ("makespan", "span"):
        inst = instance(
            Problem(
                pl,
                m,
                costs,
                FixedDelay(c),
                split=True,
                memory_cap=None if cap is None else cap * p,
                objective=objective,
            )
        )
        b = lower_bounds(inst)
        for cand in family_candidates(inst):
            assert b.best <= cand.objective, (cand.source, objective)


@pytest.mark.parametrize(
    "placement,p,m,c,cap", [("linear", 4, 8, 1, 1), ("loop", 4, 8, 1, 2), ("linear", 3, 6, 2, None)]
)
def test_local_search_never_worsens_and_stays_valid(placement, p, m, c, cap):
    pl = linear(p) if placement == "linear" else loop(p, 2)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    inst = instance(Problem(pl, m, costs, FixedDelay(c), split=True, memory_cap=None if cap is None else cap * p))
    starts = [greedy(inst, "GFW", False, None, False), greedy(inst, "FGW", False, None, False)]
    for g in [s for s in starts if s is not None]:
        for out in (tune_greedy(inst, g, 30), swap_search(inst, g, 60, seed=3), improve(inst, g, 80)):
            assert out.objective <= g.objective
            assert memory_ok(inst, out.programs)
            # the reported starts are what the program order gives when re-timed
            assert time_programs(inst, out.programs).objective == out.objective


def test_same_seed_same_result_with_one_worker():
    pl = loop(4, 2)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    pr = Problem(pl, 8, costs, FixedDelay(1), split=True, memory_cap=8)
    # without the redundant bounds nothing is proven before the search: CP-SAT runs to its budget
    for extra in ({}, {"redundant_bounds": False}):
        runs = [optimize(pr, time_limit=120, workers=1, seed=5, work_limit=0.5, **extra) for _ in range(2)]
        a, b = (r.to_dict() for r in runs)
        for key in ("status", "value", "bound", "programs", "hint", "hint_value"):
            assert a[key] == b[key], key
    assert runs[0].solver["deterministic_s"] <= 0.5 * 1.1 + 0.05
