"""Transfer times must be finite numbers >= 0, at every entry point.

A negative delay lets a consumer start before its producer's output exists: verify proved 1F1B
(p=4, m=8, unit slots) finishes by 21 with ``FixedDelay(-0.5)``, and optimize called a 2-stage
plan OPTIMAL at 7, both below the schedule's time with no communication at all. The rule is
one function (:func:`ppverify.core.comm.transfer_time`) read by every engine, ``verify``'s timing
claims and ``optimize``; :class:`FixedDelay` refuses such a delay when it is built.
"""

from __future__ import annotations

import math

import pytest

from ppverify.core.comm import FixedDelay, transfer_time
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.placement import linear
from ppverify.engines import run
from ppverify.optimize import Problem, optimize
from ppverify.schedules import build
from ppverify.verify import verify

BAD = (-0.5, -1, math.nan, math.inf, -math.inf)


class _Model:
    """A caller's communication model: ``t`` between distinct devices, 0 on one device."""

    def __init__(self, t: float) -> None:
        self.t = t

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        return 0.0 if src == dst else self.t


@pytest.mark.parametrize("delay", BAD)
def test_fixed_delay_refuses_a_delay_that_is_not_a_finite_number_at_least_0(delay):
    with pytest.raises(ParameterError, match="comm-delay.*finite number >= 0"):
        FixedDelay(delay)


def test_fixed_delay_keeps_0_and_positive_delays():
    assert FixedDelay(0).transfer_time(0, 1, 8.0) == 0
    assert FixedDelay(0.5).transfer_time(0, 1, 8.0) == 0.5


@pytest.mark.parametrize("t", BAD)
def test_the_shared_check_refuses_a_callers_model(t):
    with pytest.raises(ParameterError, match="transfer times must be finite and >= 0"):
        transfer_time(_Model(t), 0, 1, 8.0)
    assert transfer_time(_Model(t), 1, 1, 8.0) == 0.0  # same device: the model says 0, accepted


@pytest.mark.parametrize("t", [-1.0, math.nan])
def test_the_engines_own_readers_of_transfer_times_check_them_called_directly(t):
    # the slot table (charge_comm) and the runtime walk read transfer times themselves: the check
    # holds there, not only behind run()
    from dataclasses import replace

    from ppverify.engines.runtime import wire_time
    from ppverify.engines.table import slot_timeline

    s = build("1f1b", p=2, m=2)
    with pytest.raises(ParameterError, match="transfer times must be finite and >= 0"):
        slot_timeline(s, CostModel.unit(s.placement), _Model(t), charge_comm=True)
    costs = replace(CostModel.abstract(linear(2), F=1, B=2), boundary_bytes=(5e5,))
    with pytest.raises(ParameterError, match="transfer times must be finite and >= 0"):
        wire_time(_Model(t), costs, 0, 1, ("F", 1, 0))


@pytest.mark.parametrize("t", [-0.5, math.nan])
def test_verify_refuses_negative_or_nan_transfer_times(t):
    s = build("1f1b", p=4, m=8)
    # by hand: 1F1B at unit slots takes 2(m + p - 1) = 2 * 11 = 22 with no delay, and no delay >= 0
    # can make it shorter, so "makespan <= 21" must never be proved (it was, with delay -0.5)
    with pytest.raises(ParameterError, match="transfer times must be finite and >= 0"):
        verify(s, comm=_Model(t), makespan_le=21)
    r = verify(s, makespan_le=21)
    assert not r.valid and verify(s, makespan_le=22).valid


@pytest.mark.parametrize("semantics", ["slot", "async", "contention"])
@pytest.mark.parametrize("t", [-1.0, math.nan])
def test_every_engine_refuses_negative_or_nan_transfer_times(semantics, t):
    s = build("1f1b", p=2, m=2)
    options = {"charge_comm": True} if semantics == "slot" else {}
    with pytest.raises(ParameterError, match="transfer times must be finite and >= 0"):
        run(s, CostModel.unit(s.placement), _Model(t), semantics=semantics, **options)


def test_slot_charges_a_valid_models_delay():
    s = build("1f1b", p=2, m=2)
    # by hand: 1F1B p=2 m=2 at unit slots is 2(m + p - 1) = 6 columns; charged per column, every
    # op has a cross-device input or output here, so each column lasts 1 + 0.5 = 1.5: 6 * 1.5 = 9
    tl = run(s, CostModel.unit(s.placement), _Model(0.5), semantics="slot", charge_comm=True)
    assert tl.makespan == 9.0


@pytest.mark.parametrize("t", [-1.0, math.nan])
def test_optimize_refuses_negative_or_nan_transfer_times(t):
    pl = linear(2)
    c = CostModel.abstract(pl, F=1, B=2)
    # by hand: with no communication the bound is (m + p - 1)(F + B) = 3 * 3 = 9; the plan was
    # called OPTIMAL at 7 with FixedDelay(-1)
    with pytest.raises(ParameterError, match="transfer times must be finite and >= 0"):
        optimize(Problem(pl, 2, c, comm=_Model(t), split=False), time_limit=20, work_limit=1, workers=1)
