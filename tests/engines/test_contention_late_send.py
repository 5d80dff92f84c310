"""``contention`` refuses a compute_comms file whose SEND is posted after a later op than its
producer (docs/simulation.md), where ``async`` times it."""

from __future__ import annotations

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.ops import Comm, Op
from ppverify.core.placement import linear
from ppverify.core.schedule import Schedule
from ppverify.engines import run


def _late_send() -> Schedule:
    # rank 0 runs F0, F1 and only then posts the SEND of F0's activation
    return Schedule(
        linear(2),
        2,
        (
            (Op("F", 0, 0), Op("F", 0, 1), Comm("SEND_F", 0, 0), Comm("SEND_F", 0, 1), Op("B", 0, 0), Op("B", 0, 1)),
            (Op("F", 1, 0), Op("F", 1, 1), Op("B", 1, 0), Op("B", 1, 1)),
        ),
        (0, 0),
    )


def test_contention_names_the_late_send_and_points_to_async():
    s = _late_send()
    c = CostModel.abstract(s.placement, F=1, B=2)
    with pytest.raises(ParameterError, match=r"0SEND_F0 after 0F1.*--semantics async"):
        run(s, c, FixedDelay(0.5), "contention")
    # async: F0(1) waits for the SEND at 2 (after 0F1) + 0.5: starts at 2.5
    tl = run(s, c, FixedDelay(0.5), "async")
    start = dict(zip(tl.ops, tl.start))
    assert start[Op("F", 1, 0)] == pytest.approx(2.5)
