"""Costs below 1e-6 are read relative to their size, by the slot table and by the formulas alike.

Both read each cost with ``Fraction(x).limit_denominator(10**6)`` before, an absolute step: 4e-7
became 0 or 1e-6, so the table and the formula agreed on a wrong makespan, and 1e-7 made every
duration 0 (a ZeroDivisionError at tick 0).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from ppverify.core.closed_form import exact_cost, exact_costs, freed_by_I_of
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.engines.formulas import formula_for
from ppverify.schedules import build


def test_gpipe_sub_microsecond_costs_keep_their_size():
    # GPipe (Huang et al.): makespan (m+p-1)(tF+tB) = 7 x (4e-7 + 8e-7) = 8.4e-6; the tick is the
    # gcd 4e-7, so the table is 7 x 3 = 21 ticks (it printed 7e-06 before)
    s = build("gpipe", p=4, m=4)
    costs = {"F": 4e-7, "B": 8e-7}
    tl = run(s, CostModel.abstract(s.placement, **costs), semantics="slot")
    assert tl.makespan == pytest.approx(8.4e-6, rel=1e-12)
    assert tl.info.ticks == 21 and tl.info.tick == pytest.approx(4e-7, rel=1e-12)
    assert formula_for("gpipe", 4, 4, costs).makespan == pytest.approx(8.4e-6, rel=1e-12)
    # the async engine never rounded: all three agree
    assert run(s, CostModel.abstract(s.placement, **costs)).makespan == pytest.approx(8.4e-6, rel=1e-12)


def test_1f1b_with_costs_that_rounded_to_zero_is_timed():
    # 1F1B: (m+p-1)(tF+tB) = 3 x (1e-7 + 3e-7) = 1.2e-6; tick gcd(1e-7, 3e-7) = 1e-7, 12 ticks
    s = build("1f1b", p=2, m=2)
    tl = run(s, CostModel.abstract(s.placement, F=1e-7, B=3e-7), semantics="slot")
    assert tl.makespan == pytest.approx(1.2e-6, rel=1e-12)
    assert tl.info.ticks == 12


@pytest.mark.parametrize(
    "family,p,m,costs,makespan,ticks",
    [
        # ordinary costs keep their tables: (m+p-1)(tF+tB) with tick gcd(tF, tB)
        ("gpipe", 4, 4, {"F": 1, "B": 2}, 21, 21),  # 7 x 3, tick 1
        ("1f1b", 4, 8, {"F": 0.1, "B": 0.3}, 11 * 0.4, 44),  # 11 x 0.4, tick 0.1
        ("gpipe", 2, 2, {"F": 0.5, "B": 1.5}, 3 * 2.0, 12),  # 3 x 2, tick 0.5
    ],
)
def test_ordinary_costs_unchanged(family, p, m, costs, makespan, ticks):
    s = build(family, p=p, m=m)
    tl = run(s, CostModel.abstract(s.placement, **costs), semantics="slot")
    assert tl.makespan == pytest.approx(makespan, rel=1e-12)
    assert tl.info.ticks == ticks


def test_exact_costs_are_relative():
    # 4e-7 = 1/2500000 and 8e-7 = 1/1250000 exactly as decimals; I = W = B/2 = 4e-7
    c = exact_costs({"F": 4e-7, "B": 8e-7})
    assert c == {"F": Fraction(4, 10**7), "B": Fraction(8, 10**7), "I": Fraction(4, 10**7), "W": Fraction(4, 10**7)}
    # ordinary costs: the decimals they are written as
    assert exact_costs({"F": 0.1, "B": 0.3})["I"] == Fraction(3, 20)


def test_a_cost_that_cannot_be_read_is_refused_in_one_line():
    with pytest.raises(ParameterError) as exc:
        exact_cost("B", float("inf"))
    text = str(exc.value)
    assert "\n" not in text and exc.value.name == "costs"
    assert "B=inf" in text and "a B cost" in text and "1e-09" in text


def test_freed_by_I_below_a_millionth_is_kept():
    # the cost model reads freed_by_I = 1e-7 as 10**-7 (exact_fraction); the formulas did as 0
    assert freed_by_I_of({"freed_by_I": 1e-7}) == Fraction(1, 10**7)
    # ZB-H1 peak on device d (zero_bubble.py's derivation): (p-d) + d(1-f) = 4 - d*f at p=4, m=8;
    # with f = 1e-7: 4, 4 - 1e-7, 4 - 2e-7, 4 - 3e-7 (before: 4 everywhere, off the table)
    costs = {"F": 1, "I": 1, "W": 1, "freed_by_I": 1e-7}
    f = formula_for("zb-h1", 4, 8, costs)
    expected = [4 - d * 1e-7 for d in range(4)]
    assert f.peak_activations == pytest.approx(expected, rel=1e-15)
    s = build("zb-h1", p=4, m=8)
    tl = run(s, CostModel.abstract(s.placement, **costs), semantics="slot")
    assert tl.peak_memory().tolist() == pytest.approx(expected, rel=1e-15)
