"""PyTorch's full range: every (p, m, v) that PyTorch 2.13's schedule classes accept, ppverify's
twin family accepts too, with PyTorch's op order (compared with PyTorch's own ``pipeline_order``),
verified VALID by Z3, and its closed form still exact there.

The grid is not PyTorch's own test grid (which uses p in {2, 4}, m multiples of p): p in {3, 5, 7},
m in {5, 6, 9, 14} (mostly not multiples of p), v in {2, 3}.
"""

from __future__ import annotations

import pytest

from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.engines.formulas import EXACT, formula_for
from ppverify.io.torch_interop import order_differences, torch_schedule
from ppverify.schedules import build
from ppverify.verify import verify

GRID = [(p, m, v) for p in (3, 5, 7) for m in (5, 6, 9, 14) for v in (2, 3)]
#: ppverify family -> PyTorch class; v is the stages per rank
TWINS = {"interleaved-1f1b": "Interleaved1F1B", "interleaved-zb": "InterleavedZeroBubble", "looped-bfs": "LoopedBFS"}


def pytorch_accepts(cls: str, p: int, m: int, v: int) -> bool:
    try:
        torch_schedule(cls, p, m, v)
    except ParameterError:
        return False
    return True


@pytest.mark.parametrize("family", sorted(TWINS))
def test_grid_same_order_as_pytorch_and_valid(family):
    cls = TWINS[family]
    compared = 0
    for p, m, v in GRID:
        if not pytorch_accepts(cls, p, m, v):
            # PyTorch's rounds rule: 14 on p = 3 is 4 rounds, and 14 % 4 != 0; ppverify agrees
            assert (p, m) == (3, 14) and family != "looped-bfs"
            with pytest.raises(ParameterError, match="number of rounds"):
                build(family, p=p, m=m, v=v)
            continue
        ours = build(family, p=p, m=m, v=v)
        theirs = torch_schedule(cls, p, m, v)
        assert order_differences(ours, theirs) == [], (family, p, m, v)  # m == p (5, 5) included
        if family == "interleaved-1f1b" and m == p:
            # Megatron's variant (every forward first at m = p): the same step, another order
            megatron = build(family, p=p, m=m, v=v, order="megatron")
            assert order_differences(megatron, theirs) != []
            costs = CostModel.abstract(ours.placement, F=1, B=2)
            assert (
                run(megatron, costs, semantics="slot").makespan
                == run(torch_schedule(cls, p, m, v, strip_idle=True), costs, semantics="slot").makespan
            )
        report = verify(ours)
        assert report.valid, report.to_text()
        compared += 1
    assert compared == len(GRID) - (0 if family == "looped-bfs" else 2)


def test_new_sizes_cli_verify_valid(capsys):
    from ppverify.cli import main

    for family, p, m, v in [("interleaved-1f1b", 5, 6, 2), ("interleaved-1f1b", 7, 9, 3), ("interleaved-zb", 7, 9, 2)]:
        assert main(["verify", family, "-p", str(p), "-m", str(m), "--v", str(v)]) == 0
        assert capsys.readouterr().out.startswith(f"VALID: {family} p={p} m={m} v={v}")


def test_formula_exact_on_the_grid():
    # the closed form (v*max(m,p) + min(m,p) - 1)(tF+tB)/v holds beyond multiples of p; the zero
    # bubble family keeps its bound
    for p, m, v in GRID:
        for costs in ({"F": 1, "B": 2}, {"F": 2, "B": 1}):
            try:
                s = build("interleaved-1f1b", p=p, m=m, v=v)
            except ParameterError:
                continue
            f = formula_for("interleaved-1f1b", p, m, costs, v=v)
            assert f.makespan_kind == EXACT
            assert run(s, CostModel.abstract(s.placement, **costs), semantics="slot").makespan == pytest.approx(
                f.makespan
            ), (p, m, v, costs)


def test_m_equals_p_peaks_and_makespan_both_orders():
    # by hand, p = 4, m = 4, v = 2 (chunk activation = 1/2 share): PyTorch warms up with
    # min((v-1)p + 2(p-1-d), m v) = 8, 8, 6, 4 forwards and then holds one more (capped at 8):
    # 4, 4, 3.5, 2.5 shares; Megatron holds all 8 chunk activations on every device: 4 shares.
    # Makespan (p + (p-1)/v)(tF+tB) = 5.5 * 3 = 16.5 in both orders.
    for order, want in (("pytorch", [4, 4, 3.5, 2.5]), ("megatron", [4, 4, 4, 4])):
        s = build("interleaved-1f1b", p=4, m=4, v=2, order=order)
        tl = run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="slot")
        assert tl.makespan == pytest.approx(16.5) and tl.peak_memory().tolist() == pytest.approx(want)
    # the formula's exactness claim, m = p, both orders, p 2..8, v 2..3, tF above and below tB
    for p in range(2, 9):
        for v in (2, 3):
            for order in ("pytorch", "megatron"):
                s = build("interleaved-1f1b", p=p, m=p, v=v, order=order)
                for costs in ({"F": 1, "B": 2}, {"F": 2, "B": 1}):
                    f = formula_for("interleaved-1f1b", p, p, costs, v=v, order=order)
                    tl = run(s, CostModel.abstract(s.placement, **costs), semantics="slot")
                    assert (f.makespan_kind, f.peak_kind) == (EXACT, EXACT)
                    assert tl.makespan == pytest.approx(f.makespan), (p, v, order, costs)
                    assert tl.peak_memory().tolist() == pytest.approx(list(f.peak_activations)), (p, v, order)


# every other family with a PyTorch twin: ppverify refuses nothing PyTorch accepts
ALL_TWINS = {
    "gpipe": ("GPipe", (1,)),
    "1f1b": ("1F1B", (1,)),
    "zb-h1": ("InterleavedZeroBubble", (1,)),
    "zbv": ("ZBVZeroBubble", (2,)),
    "dualpipev": ("DualPipeV", (2,)),
    "looped-bfs": ("LoopedBFS", (1, 2, 3)),
    "interleaved-1f1b": ("Interleaved1F1B", (2, 3)),
    "interleaved-zb": ("InterleavedZeroBubble", (1, 2, 3)),
}


@pytest.mark.parametrize("family", sorted(ALL_TWINS))
def test_ppverify_accepts_whatever_pytorch_accepts(family):
    cls, vs = ALL_TWINS[family]
    accepted = 0
    for p in range(1, 7):
        for m in range(1, 17):
            for v in vs:
                if not pytorch_accepts(cls, p, m, v):
                    continue
                params = {"v": v} if family in ("looped-bfs", "interleaved-1f1b", "interleaved-zb") else {}
                build(family, p=p, m=m, **params)  # raises ParameterError if ppverify refuses
                accepted += 1
    assert accepted >= 50
