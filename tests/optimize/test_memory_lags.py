"""The memory-implied lags (``model.memory_lags``): a forward waits for the end of an earlier input
gradient plus ``min(tI, tW)`` when I frees only part of an activation. Checked against schedules
solved by a plain CP-SAT model (no symmetry breaking, no lags, no bounds, no hints): every such
schedule, once its microbatches are relabelled in start order, meets every lag; and the optimum
with the lags posted equals the plain optimum (the lags never cut off every optimal schedule)."""

from __future__ import annotations

import dataclasses

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear
from ppverify.optimize import Problem, instance, optimize
from ppverify.optimize.heuristic import canonical_starts
from ppverify.optimize.model import memory_lags
from ppverify.optimize.relax import device_bound


def _problem(p, m, c, cap, freed, durs):
    pl = linear(p)
    f, i, w = durs
    costs = dataclasses.replace(CostModel.abstract(pl, F=f, I=i, W=w), freed_by_I=(freed,) * p)
    return Problem(pl, m, costs, FixedDelay(c), split=True, memory_cap=cap)


# CP-SAT's deterministic time, not the wall clock, stops the solves: one worker, so the same
# search at any machine load. Every instance of GRID is proven optimal in at most 0.35
# deterministic s (3 s wall on a 2-core machine, (3, 6, 1, 1, 0.25, (1, 2, 1))); WORK allows 10x that.
# The wall limit is only a safety stop far beyond it.
WORK = 4.0
WALL = 300.0


def _plain(pr):
    """The proven optimum of the plain model and its start ticks."""
    r = optimize(
        pr, time_limit=WALL, work_limit=WORK, deterministic=True, workers=1,
        symmetry=False, redundant_bounds=False, hints=False, local_search=False,
    )  # fmt: skip
    assert r.status == "OPTIMAL", (r.status, r.solver)
    starts = [round(t / r.tick) for t in r.timeline.start]
    return r.objective, starts


# (p, m, c, cap in M_F, freed_by_I, (tF, tI, tW)); caps from one activation to p of them
GRID = [
    (p, m, c, cap, freed, durs)
    for p, m in ((2, 2), (2, 5), (3, 4), (3, 6), (4, 5))
    for c in (0, 1)
    for cap in (1, 1.5, p)
    for freed, durs in ((0.5, (1, 1, 1)), (0.25, (1, 2, 1)), (0.0, (1, 1, 2)), (1.0, (2, 1, 1)))
]


def _lag_ids(v):
    return "-".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def test_lag_by_hand():
    """cap 2 activations, I frees half: F of microbatch 2 waits for I(0) and then for W(0) or
    I(1), each at least min(tI, tW) = 2 more ticks."""
    pr = _problem(1, 3, 0, 2, 0.5, (1, 2, 3))
    inst = instance(pr)
    pos = {op: i for i, op in enumerate(inst.dag.ops)}
    lags = memory_lags(inst, list(inst.device_ops(0)), pos)
    assert [(str(inst.dag.ops[f]), str(inst.dag.ops[g]), x) for f, g, x in lags] == [("0F2", "0I0", 2)]
    # I frees nothing: only W frees memory, so F(2) waits for W(0): tW after I(0)
    inst = instance(_problem(1, 3, 0, 2, 0.0, (1, 2, 3)))
    assert [x for _, _, x in memory_lags(inst, list(inst.device_ops(0)), pos)] == [3]
    # I frees everything: the plain precedence, no extra
    inst = instance(_problem(1, 3, 0, 2, 1.0, (1, 2, 3)))
    assert [x for _, _, x in memory_lags(inst, list(inst.device_ops(0)), pos)] == [0]
    # cap 2.5 activations, I frees 0.75: W frees 0.25 <= the 0.5 left over, no extra
    inst = instance(_problem(1, 3, 0, 2.5, 0.75, (1, 2, 3)))
    assert [x for _, _, x in memory_lags(inst, list(inst.device_ops(0)), pos)] == [0]


@pytest.mark.parametrize("p,m,c,cap,freed,durs", GRID, ids=_lag_ids)
def test_relabelled_optima_meet_every_lag(p, m, c, cap, freed, durs):
    pr = _problem(p, m, c, cap, freed, durs)
    _, starts = _plain(pr)
    inst = instance(pr)
    st = canonical_starts(inst, starts)
    pos = {op: i for i, op in enumerate(inst.dag.ops)}
    for d in range(inst.p):
        for f, g, extra in memory_lags(inst, list(inst.device_ops(d)), pos):
            assert st[f] >= st[g] + inst.dur[g] + extra, (inst.dag.ops[f], inst.dag.ops[g], extra)


@pytest.mark.parametrize(
    "p,m,c,cap,freed,durs",
    [g for g in GRID if g[1] <= 5 and g[3] != 1.5 and g[4] in (0.5, 0.0)],
    ids=_lag_ids,
)
def test_lags_keep_the_optimum_and_relaxation_stays_below(p, m, c, cap, freed, durs):
    pr = _problem(p, m, c, cap, freed, durs)
    value, _ = _plain(pr)
    r = optimize(pr, time_limit=WALL, work_limit=WORK, deterministic=True, workers=1, relax_share=0.0)
    assert r.status == "OPTIMAL"
    assert r.objective == value
    inst = instance(pr)
    for d in range(inst.p):
        assert device_bound(inst, d, "makespan", 10.0) * inst.tick <= value
