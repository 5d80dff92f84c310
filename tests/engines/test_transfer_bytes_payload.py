"""What ``transfer_bytes`` (the ``transfers ... GB`` line) counts: the payload of the step's
messages (docs/simulation.md), each collective once per device at its full gradient buffer, not
the ``2(N-1)/N`` times that a ring puts on each device's link; expected values by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.views.run_report import timeline_report


def test_dp_allreduce_counts_its_buffer_once_per_device():
    s = build("1f1b", p=2, m=2)
    c = replace(
        CostModel.abstract(s.placement, F=1, B=2),
        boundary_bytes=(1000.0,),
        weight_bytes=(4000.0, 6000.0),
        extra={"grad_fraction": 0.5},
    )
    tl = run(s, c, FixedDelay(0.1), "async", dp_allreduce=4)
    # point to point: 2 microbatches x (activation + gradient) x 1000 B = 4000 B; the DP all-reduce
    # of device 0 holds stage 0's gradients, 4000 x 0.5 = 2000 B, device 1 6000 x 0.5 = 3000 B:
    # 4000 + 2000 + 3000 = 9000 B (a ring of 4 puts 2 x 3 / 4 = 1.5 times each buffer on the
    # wire, 4000 + 7500 = 11500 B: not what is counted)
    assert timeline_report(tl)["transfer_bytes"] == pytest.approx(9000.0)
    dp = [b for k, b in zip(tl.transfers.kind, tl.transfers.nbytes) if k == "dp-allreduce"]
    assert sorted(dp) == pytest.approx([2000.0, 3000.0])
