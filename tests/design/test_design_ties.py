"""Ties on the frontier go to the first found, as docs/design.md says ("the frontier keeps the
first found"): at one peak and one step, the placement listed first in ``--placements``; and a
point that took a smaller budget's schedule, having none of its own, is not said to be slower."""

from __future__ import annotations

import math

import pytest

from ppverify.design.points import Point, frontier, monotone
from ppverify.design.run import DesignRequest, design
from ppverify.design.spec import Limits
from ppverify.systems.preset_models import PresetSettings


@pytest.mark.parametrize("order", [("v", "loop:2"), ("loop:2", "v")])
def test_a_tie_goes_to_the_placement_listed_first(order) -> None:
    # p = 4, m = 8, F = I = W = 1: ZB-V (v) and interleaved ZB (loop:2) both peak at 4 and take
    # the V bound m (tF + tI + tW) + (p - 1) tF / 2 = 24 + 1.5 = 25.5 (docs/building-blocks.md);
    # before, the tie went to the name first in the alphabet: loop:2 whatever the order given
    rq = DesignRequest(4, 8, ",".join(order), "4", PresetSettings(costs="F=1,I=1,W=1"), Limits(1.0, search_work=0.0))
    d = design(rq, progress=False)
    at4 = [q for q in d.points if q.peak == 4.0]
    assert {q.placement for q in at4} == {"v", "loop:2"} and {q.time for q in at4} == {25.5}
    (top,) = [q for q in d.front if q.peak == 4.0]
    assert (top.placement, top.time) == (order[0], 25.5)


def test_frontier_ties_by_the_order_of_the_points_then_the_budget() -> None:
    def pt(label: str, budget: float) -> Point:
        return Point(label, budget, "OPTIMAL", 25.5, 25.5, 4.0, None, None)

    assert frontier([pt("v", 5.0), pt("loop:2", 4.0)])[0].placement == "v"
    assert frontier([pt("loop:2", 4.0), pt("v", 4.0)])[0].placement == "loop:2"
    assert frontier([pt("v", 5.0), pt("v", 4.0)])[0].budget == 4.0  # one placement: the smaller budget
    # a searched point before a family candidate of an earlier placement at the same (peak, step)
    assert frontier([pt("loop:2", 4.0)], [pt("v", 4.0)])[0].placement == "loop:2"


def test_a_point_without_a_schedule_takes_a_smaller_budgets_as_fitting_not_faster() -> None:
    found = Point("linear", 1.0, "OPTIMAL", 72.0, 72.0, 1.0, "greedy-AW", None)
    skipped = Point("linear", 2.0, "UNKNOWN", None, 39.0, None, None, None, "skipped: its bound 39 ...", skipped=True)
    searched = Point("linear", 3.0, "FEASIBLE", 80.0, 30.0, 3.0, None, None)
    _, a, b = monotone([found, skipped, searched])
    # nothing was found at budget 2: "is faster" compared with nothing
    assert a.note == "skipped: its bound 39 ...; the schedule found under budget 1 fits this budget too: kept"
    # and the budget named is the one it was found under, not the point it passed through
    assert b.note == "the schedule found under budget 1 is faster: kept"
    assert a.time == b.time == 72.0 and not math.isinf(a.budget)
