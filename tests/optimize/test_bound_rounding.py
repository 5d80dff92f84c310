"""A certified bound converted from ticks never reads above the exact optimum (report s62 hunt N, D4)."""

from __future__ import annotations

from fractions import Fraction

from ppverify.core.costs import CostModel
from ppverify.optimize import Problem, optimize
from ppverify.optimize.problem import bound_time
from ppverify.schedules import build


def test_bound_time_rounds_toward_minus_infinity():
    # 12 ticks of 1/10 are 6/5 exactly; 12 * 0.1 in floats is 1.2000000000000002, above 6/5
    assert Fraction(12 * 0.1) > Fraction(6, 5)
    assert Fraction(bound_time(12, 0.1)) <= Fraction(6, 5)
    assert bound_time(12, 0.1) == 1.2


def test_gpipe_bound_is_at_most_six_fifths():
    # GPipe with no communication: (m + p - 1)(F + B) = 4 * 0.3 = 6/5, the optimum of its ops
    s = build("gpipe", 2, 3)
    pr = Problem(s.placement, 3, CostModel.abstract(s.placement, F=0.1, B=0.2), split=False)
    res = optimize(pr, time_limit=30, workers=1, work_limit=1)
    assert Fraction(res.bound) <= Fraction(6, 5)
    assert all(Fraction(v) <= Fraction(6, 5) for v in res.bounds.values())
