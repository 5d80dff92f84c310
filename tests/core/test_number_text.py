"""One function writes a cost or a delay as text (:func:`ppverify.core.costs.number_text`): the
costs of a label and ``--costs`` text, and the delay a timing claim names (``timing._number``
twinned ``costs._fmt``)."""

from __future__ import annotations

import pytest

from ppverify.core import costs
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel, costs_text, number_text
from ppverify.schedules import build
from ppverify.verify import timing
from ppverify.verify.timing import timing_model


def test_the_timing_claim_uses_the_costs_function():
    assert timing.number_text is costs.number_text
    assert not hasattr(timing, "_number") and not hasattr(costs, "_fmt")


@pytest.mark.parametrize(
    "x, text",
    [(2.0, "2"), (0.5, "0.5"), (1e-07, "1e-07"), (1e15, "1000000000000000"), (0.1 + 0.2, "0.30000000000000004")],
)
def test_a_number_reads_back_as_itself(x, text):
    # whole numbers without ".0"; others as Python's shortest repr, even where it is not "tidy"
    assert number_text(x) == text
    assert float(text) == x


def test_costs_and_delays_are_written_alike():
    # the delay in a timing claim's statement and the costs in a label: one function, one text
    s = build("1f1b", p=2, m=2)
    c = CostModel.abstract(s.placement, F=0.1, I=0.05, W=0.05)  # B = I + W = 0.1
    assert c.label == "F=0.1,B=0.1,I=0.05,W=0.05"
    assert costs_text({"F": 0.1, "B": None, "W": 2.0}) == "F=0.1,W=2"
    assert timing_model(c, FixedDelay(1e-07), s).startswith("costs F=0.1,B=0.1,I=0.05,W=0.05 with comm delay 1e-07,")
    assert timing_model(c, FixedDelay(3.0), s).startswith("costs F=0.1,B=0.1,I=0.05,W=0.05 with comm delay 3,")
