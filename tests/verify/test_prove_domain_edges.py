"""Edges of ``ppverify prove``: the closed forms refuse shapes outside their domain, agree with the
slot and async engines at sizes beyond the proof's own grid, and a wrong form is refuted."""

from __future__ import annotations

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.verify import family_theorems as ft
from ppverify.verify import prove as pv
from ppverify.verify.closed_forms import f1b1_b, ite, zmin
from ppverify.verify.prove import closed_form_starts, prove
from ppverify.verify.prove_interleaved import interleaved_k_theorems


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("zb-h1", 2, 2, 1, 2), "family=zb-h1"),  # was silently 1F1B's starts (no I/W ops at all)
        (("chimera", 3, 3, 1, 1), "p=3"),  # the generator needs p even
        (("chimera", 4, 6, 1, 1), "m=6"),  # and m a multiple of p
        (("gpipe", 2, 0, 1, 1), "m=0"),
        (("interleaved-1f1b", 2, 4, 1, 1, 2, "bogus"), "order=bogus"),  # was ignored at m = k p
    ],
)
def test_closed_forms_refuse_shapes_outside_their_domain(args, named):
    with pytest.raises(ParameterError, match=named):
        closed_form_starts(*args)


def _agrees(fam, p, m, f, b, **kw):
    s = build(fam, p=p, m=m, **kw)
    costs = CostModel.abstract(s.placement, F=f, B=b)
    cf = closed_form_starts(fam, p, m, f, b, kw.get("v", 2), kw.get("order", "megatron"))
    for tl in (run(s, costs, semantics="slot"), run(s, costs, FixedDelay(0.0), semantics="async")):
        assert {str(o): float(t) for o, t in zip(tl.ops, tl.start)} == pytest.approx(cf)
    return tl.makespan


def test_closed_forms_match_slot_and_async_beyond_the_proof_grid():
    # the proof's grid stops at p = 8 (linear), 12 or 16; these sizes and cost ratios are outside it
    # (approx: at v = 3 a chunk op lasts 1/3, an inexact float)
    # 1F1B and GPipe, p = 12, m = 40: (m + p - 1)(f + b) = 51 * 4 = 204 at F=3,B=1 (forward dearer)
    assert _agrees("1f1b", 12, 40, 3, 1) == pytest.approx(204)
    assert _agrees("gpipe", 12, 40, 3, 1) == pytest.approx(204)
    # 51 * 7 = 357 at F=2,B=5
    assert _agrees("1f1b", 12, 40, 2, 5) == pytest.approx(357)
    # Chimera, continuous, p = 12, m = 36 (n = 18), B = 3: 2(1+b) n + (p-2) b = 144 + 30 = 174
    assert _agrees("chimera", 12, 36, 1, 3) == pytest.approx(174)
    # Chimera basic unit, p = 12, B = 5: (1 + 2b) p - 2b = 132 - 10 = 122
    assert _agrees("chimera", 12, 12, 1, 5) == pytest.approx(122)
    # interleaved, m = p = 12, v = 3, F=1,B=2, both orders: (p + (p-1)/v)(f+b) = (12 + 11/3) 3 = 47
    assert _agrees("interleaved-1f1b", 12, 12, 1, 2, v=3, order="pytorch") == pytest.approx(47)
    assert _agrees("interleaved-1f1b", 12, 12, 1, 2, v=3, order="megatron") == pytest.approx(47)
    # interleaved, v = 2, m = 8p at p = 5, F=B=1: (2k + 1) p - 1 = 17 * 5 - 1 = 84 shares
    assert _agrees("interleaved-1f1b", 5, 40, 1, 1, v=2) == pytest.approx(84)


def test_one_more_warmup_forward_is_refuted_by_the_memory_theorem(monkeypatch):
    # 1F1B whose device d warms up with min(p-d, m) forwards instead of min(p-1-d, m): still a
    # schedule of sorts, but it holds one activation more than the proved bound min(p-d, m)
    def wider(p, m, d, j, f, b):
        w = zmin(p - d, m)
        return ite(j <= w, (d + j) * f, f1b1_b(p, m, d, j - w - 1, f, b) + b)

    monkeypatch.setattr(ft, "f1b1_f", wider)
    monkeypatch.setattr(pv, "f1b1_f", wider)
    res = {th.name: prove(th) for th in ft.theorems("1f1b", 1, 2)}
    mem = res["memory"]
    assert mem.status == "counterexample"
    # replay: at the start of F(d, j), count the microbatches whose F has started and B not ended
    c = mem.counterexample
    p, m, d, j = c["p"], c["m"], c["d"], c["j"]
    t = wider(p, m, d, j, 1, 2)
    held = [i for i in range(m) if wider(p, m, d, i, 1, 2) <= t < f1b1_b(p, m, d, i, 1, 2) + 2]
    assert len(held) > min(p - d, m)
    # the grid check refutes it too: the generator's 1F1B is not this schedule
    n, bad = pv.grid_check("1f1b", 1, 2, range(2, 5), range(1, 6))
    assert n == 15 and bad


def test_a_slower_valid_schedule_is_refuted_by_the_makespan_alone(monkeypatch):
    # every backward of 1F1B one tick later (steady forwards, right after a backward, too): every
    # difference the dependency, exclusivity and memory theorems compare is the same or larger, so
    # they still hold; only B(0, m-1) no longer ends at (m + p - 1)(f + b)
    from ppverify.verify.closed_forms import warmup_1f1b

    def late_b(p, m, d, j, f, b):
        return f1b1_b(p, m, d, j, f, b) + 1

    def late_f(p, m, d, j, f, b):
        w = warmup_1f1b(p, m, d)
        return ite(j <= w, (d + j) * f, late_b(p, m, d, j - w - 1, f, b) + b)

    monkeypatch.setattr(ft, "f1b1_f", late_f)
    monkeypatch.setattr(ft, "f1b1_b", late_b)
    refuted = {th.name for th in ft.theorems("1f1b", 1, 2) if prove(th).status != "proved"}
    assert refuted == {"makespan"}


def test_interleaved_exclusivity_counts_every_block_pair():
    # 4k blocks (F/B x 2 chunks x k groups): C(8, 2) = 28 pairs at k = 2, C(32, 2) = 496 at k = 8
    for k, pairs in ((2, 28), (8, 496)):
        excl = next(t for t in interleaved_k_theorems(k) if t.name == "excl")
        assert f"{pairs} pairs" in excl.statement
