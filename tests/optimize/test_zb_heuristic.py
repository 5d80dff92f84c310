"""The zero-bubble paper's heuristic as a starting schedule: its spans equal the reference spans
that the paper's repository printed for its profiled settings (an independent tool), its schedules
are valid, and the optimizer is never worse than it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear, loop
from ppverify.engines import run
from ppverify.optimize import Problem, instance, optimize, zero_bubble
from ppverify.optimize.heuristic import memory_ok
from ppverify.optimize.memory import zb_settings
from ppverify.optimize.zbheuristic import applies, zb_candidates
from ppverify.schedules import build


def zb_rows():
    return zb_settings()


def zb_problem(row, capx: int) -> Problem:
    pl = linear(row["p"])
    costs = zero_bubble(row["h"], row["a"], 1024).apply(CostModel.abstract(pl, F=row["f"], I=row["i"], W=row["w"]))
    return Problem(pl, row["m"], costs, FixedDelay(row["c"]), split=True, memory_cap=capx * row["p"], objective="span")


# rows with p <= 16 at both caps, and p=32 m=96 at cap 2p: about 1.5 s; p=32 m=256 (4 s) is left out
CASES = [(n, capx) for n, r in enumerate(zb_rows()) if r["p"] <= 16 for capx in (1, 2)] + [(5, 2)]


@pytest.mark.parametrize("n,capx", CASES, ids=lambda v: str(v))
def test_spans_equal_the_paper_repository_reference(n, capx):
    """The best of the eight variants is exactly the span that the paper's repository reports
    for the same profiled costs and cap (ppverify/data/zb_settings.csv)."""
    row = zb_rows()[n]
    inst = instance(zb_problem(row, capx))
    cands = zb_candidates(inst)
    assert len(cands) == 8
    assert min(c.objective for c in cands) * inst.tick == row["zb1p_span" if capx == 1 else "zb2p_span"]
    assert all(memory_ok(inst, c.programs) for c in cands)


def test_zb_h1_formula_at_cap_p():
    """Costs F=2, I=2, W=1, no transfer delay, cap p*M_F (W frees the activation): ZB-H1's span
    m(tF+tI+tW) + (p-1)(tF+tI-tW), worked out by hand in the paper (its figure 3)."""
    for p, m in ((2, 3), (4, 8), (6, 12)):
        pl = linear(p)
        pr = Problem(pl, m, CostModel.abstract(pl, F=2, I=2, W=1), FixedDelay(0), True, memory_cap=p, objective="span")
        inst = instance(pr)
        assert min(x.objective for x in zb_candidates(inst)) * inst.tick == 5 * m + 3 * (p - 1)


def test_does_not_apply_off_its_setting():
    pl = linear(4)
    assert not applies(instance(Problem(pl, 4, CostModel.abstract(pl), split=False)))
    lp = loop(2, 2)
    assert not applies(instance(Problem(lp, 4, CostModel.abstract(lp, F=1, I=1, W=1), split=True)))
    assert zb_candidates(instance(Problem(lp, 4, CostModel.abstract(lp, F=1, I=1, W=1), split=True))) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    p=st.integers(2, 5),
    m=st.integers(1, 7),
    f=st.integers(1, 4),
    i=st.integers(1, 4),
    w=st.integers(1, 4),
    c=st.integers(0, 3),
    capx=st.sampled_from([None, 1, 2, 3]),
)
def test_every_variant_is_a_valid_schedule_timed_as_the_async_engine(p, m, f, i, w, c, capx):
    """Each variant's programs hold every op once, respect the cap in program order, and its
    start ticks are those of the async engine running the same programs (an independent timer)."""
    pl = linear(p)
    costs = CostModel.abstract(pl, F=f, I=i, W=w)
    pr = Problem(pl, m, costs, FixedDelay(c), split=True, memory_cap=None if capx is None else capx * p)
    inst = instance(pr)
    base = build("1f1b-split", p=p, m=m)
    for cand in zb_candidates(inst):
        assert sorted(map(str, sum(cand.programs, ()))) == sorted(map(str, sum(base.programs, ())))
        assert memory_ok(inst, cand.programs)
        tl = run(base.with_programs(cand.programs), costs, FixedDelay(c), "async")
        when = {op: s for op, s in zip(tl.ops, tl.start)}
        assert all(when[op] == pytest.approx(cand.starts[k] * inst.tick) for k, op in enumerate(inst.dag.ops))
        if capx is not None:
            assert tl.peak_memory().max() <= capx * p + 1e-9


def test_optimizer_never_worse_than_the_heuristic_on_a_tiny_budget():
    """Row 1 at cap 2p*M_F with almost no search: the answer is at most the reference span."""
    row = zb_rows()[1]
    res = optimize(zb_problem(row, 2), time_limit=30, workers=1, work_limit=0.5)
    assert res.objective is not None and res.objective <= row["zb2p_span"]
    assert res.bound <= res.objective


def test_a_passed_deadline_starts_no_variant():
    import time

    inst = instance(zb_problem(zb_rows()[0], 2))
    assert zb_candidates(inst, deadline=time.monotonic() - 1.0) == []
