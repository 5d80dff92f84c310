"""Infinite amounts and a cap of 0 are refused with one ParameterError naming the parameter.

``verify(s, memory_cap=inf)``, ``verify(s, makespan_le=inf)``, ``Problem(..., memory_cap=inf)``
and ``CostModel.abstract(pl, F=inf)`` raised "ValueError: Invalid literal for Fraction: 'inf'"
from deep in core/exact.py. A cap of 0 lets no forward start; ``--memory-cap 0`` is refused and
``read_memory_cap("-1")`` says "must be > 0", but ``verify(memory_cap=0)`` answered INVALID and
``read_memory_cap("0")`` returned a cap of 0.
"""

from __future__ import annotations

import math

import pytest

from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.exact import exact_fraction
from ppverify.core.memory_cap import read_memory_cap
from ppverify.core.placement import linear
from ppverify.optimize import Problem
from ppverify.schedules import build
from ppverify.verify import verify

INF, NAN = math.inf, math.nan


@pytest.mark.parametrize("cap", [INF, -INF, NAN, 0, 0.0, -1])
def test_verify_refuses_a_cap_that_is_not_a_finite_number_above_0(cap):
    with pytest.raises(ParameterError, match=r"memory cap=.*must be a finite number > 0"):
        verify(build("1f1b", p=2, m=2), memory_cap=cap)


@pytest.mark.parametrize("bound", [INF, -INF, NAN, -1])
def test_verify_refuses_a_bound_that_is_not_a_finite_number_at_least_0(bound):
    with pytest.raises(ParameterError, match=r"makespan bound=.*must be a finite number >= 0"):
        verify(build("1f1b", p=2, m=2), makespan_le=bound)


def test_verify_keeps_finite_amounts():
    s = build("1f1b", p=2, m=2)
    # by hand: 1F1B at unit slots takes 2(m + p - 1) = 2 * 3 = 6, and device 0 holds at most
    # min(m, p) = 2 forwards' activations (1 each per device share) at once
    r = verify(s, memory_cap=2, makespan_le=6)
    assert r.valid
    assert not verify(s, makespan_le=5.9).valid
    assert not verify(s, memory_cap=1.5).valid
    assert verify(s, makespan_le=0).violations  # 0 is a (false) claim, not a refusal


@pytest.mark.parametrize("cap", [INF, NAN, 0, -1])
def test_problem_refuses_a_cap_that_is_not_a_finite_number_above_0(cap):
    pl = linear(2)
    with pytest.raises(ParameterError, match=r"memory-cap=.*must be a finite number > 0"):
        Problem(pl, 2, CostModel.abstract(pl), memory_cap=cap)


@pytest.mark.parametrize("kw", [{"F": INF}, {"B": INF}, {"I": INF, "W": 1}, {"W": INF, "I": 1}, {"F": NAN}])
def test_abstract_costs_refuse_infinite_durations(kw):
    with pytest.raises(ParameterError, match=r"costs=.*every op duration must be a finite number > 0"):
        CostModel.abstract(linear(2), **kw)


def test_abstract_costs_refuse_a_derived_duration_that_overflows():
    # B defaults to 2F: 2 * 1e308 overflows a float to inf
    with pytest.raises(ParameterError, match=r"costs=B=inf"):
        CostModel.abstract(linear(2), F=1e308)


@pytest.mark.parametrize("text", ["0", "0.0", "0MF", "0GiB", "-1"])
def test_read_memory_cap_refuses_0_as_it_refuses_minus_1(text):
    # the reader's own words for -1 (core/sizes.py): "must be > 0: a number (e.g. 8) or a size (e.g. 40GiB)"
    with pytest.raises(ParameterError, match=r"must be > 0: a number \(e\.g\. 8\) or a size"):
        read_memory_cap(text)


def test_read_memory_cap_keeps_a_small_positive_cap():
    assert read_memory_cap("1e-9").amount > 0


def test_exact_fraction_names_a_non_finite_amount():
    with pytest.raises(ValueError, match="inf is not a finite number"):
        exact_fraction(INF)
