"""A cap no device can fill: the memory-energy bound reads it as what the device can hold, so
``optimize --memory-cap 1e9`` is as quick as a cap of m (its work once grew with the cap: 1e9 ran
out of memory)."""

from __future__ import annotations

from ppverify.core.costs import CostModel
from ppverify.core.placement import linear
from ppverify.optimize.energy import memory_energy_spans
from ppverify.optimize.problem import Problem, instance


def _spans(cap: float) -> list[int]:
    pl = linear(2)
    return memory_energy_spans(instance(Problem(pl, 4, CostModel.abstract(pl, F=1, B=1), split=False, memory_cap=cap)))


def test_a_cap_above_what_a_device_can_hold_bounds_as_that_much():
    # linear p=2, m=4: a device allocates one activation per forward, 4 in all, so it never holds
    # more than 4, and caps of 4 and 1e9 describe the same schedules: the same spans
    assert _spans(1e9) == _spans(4)


def test_the_cap_of_one_keeps_its_hand_derived_span():
    # device 0 holds each activation >= 4 ticks (F0, F1 on device 1, B1, then B0 ends): 4 x 4 = 16
    # activation-ticks in a cap of 1 need a span of 16 ticks (the energy module's own example)
    assert _spans(1)[0] == 16
