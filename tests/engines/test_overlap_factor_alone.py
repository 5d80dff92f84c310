"""The overlap factor scales an overlapped slot only (CostModel: "an overlapped F&B slot lasts
overlap * (sum of its ops)"), in every engine: an op run alone lasts its cost."""

from __future__ import annotations

import pytest

from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.schedules import build


@pytest.mark.parametrize("semantics", ["slot", "async", "contention"])
def test_dualpipe_with_half_overlap_is_timed_by_hand(semantics):
    s = build("dualpipe", p=2, m=4)
    costs = CostModel.abstract(s.placement, F=1, B=2, overlap=0.5)  # I = W = 1
    tl = run(s, costs, semantics=semantics)
    # device 0 runs 0F0 1F2 0F1 1B2 (1F3;0B0) 1B3 0I1 0W1 ... without idling: its busy time is
    # 1 + 1 + 1 + 2 + 0.5 x (1 + 2) + 2 + 1 + 1 = 10.5, and no engine may finish a device's
    # work faster than its busy time (the async engine said 6 = 0.5 x 12: every op scaled)
    assert tl.busy().max() == pytest.approx(10.5)
    assert tl.makespan == pytest.approx(10.5)


def test_an_op_outside_an_overlapped_cell_lasts_its_cost():
    from ppverify.core.ops import Overlap

    s = build("dualpipev", p=2, m=4)
    half = CostModel.abstract(s.placement, F=1, B=2, overlap=0.5)
    fused = {op for prog in s.programs for a in prog if isinstance(a, Overlap) for op in a.ops}
    assert fused  # dualpipev overlaps some F and B
    tl = run(s, half, semantics="async")
    for op, start, end in zip(tl.ops, tl.start, tl.end):
        cost = half.duration[op.kind][op.stage]
        if op not in fused:
            assert end - start == pytest.approx(cost), op
    # the slot engine, which always scaled only the overlapped slots, agrees
    assert run(s, half, semantics="slot").makespan == pytest.approx(tl.makespan)
