"""A schedule's ``costs.boundary_bytes`` is per boundary (docs/show-and-files.md): each message
carries the bytes of the boundary it crosses, ``boundary_bytes[min(producer stage, consumer
stage)]``. Every other engines test has one boundary size, so which one is read never mattered;
here the two boundaries differ. Expected values by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.systems.system import LinkTier, System
from ppverify.views.run_report import timeline_report

GIB = 2**30
# one node of 4 GPUs, no latency, 1e9 B/s each way: a message of b bytes takes b / 1e9 s
LINK = LinkTier("link", 0.0, 1e9)
TOY = System("toy", "gpu", 100e12, 80 * GIB, 4, 1, LINK, LINK)


def _gpipe3():
    s = build("gpipe", p=3, m=1)
    return s, replace(CostModel.abstract(s.placement, F=1, B=2), boundary_bytes=(1.25e9, 0.0))


@pytest.mark.parametrize("semantics", ["async", "contention"])
def test_each_message_carries_its_boundary_bytes(semantics):
    s, costs = _gpipe3()
    tl = run(s, costs, TOY, semantics)
    # GPipe p=3 m=1 sends four messages: 0F0->1F0 and 1B0->0B0 cross boundary 0 (1.25e9 B each),
    # 1F0->2F0 and 2B0->1B0 cross boundary 1 (0 B): 2 x 1.25e9 = 2.5e9 B in all
    assert timeline_report(tl)["transfer_bytes"] == pytest.approx(2.5e9)
    tr = tl.transfers
    by_pair = sorted(zip(tr.src_dev, tr.dst_dev, tr.nbytes))
    assert by_pair == [(0, 1, 1.25e9), (1, 0, 1.25e9), (1, 2, 0.0), (2, 1, 0.0)]
    # timing with the byte-dependent link: 0F0 [0, 1]; 1.25 s to device 1: 1F0 [2.25, 3.25];
    # 0 B to device 2 takes 0 s: 2F0 [3.25, 4.25], 2B0 [4.25, 6.25]; 1B0 [6.25, 8.25]; 1.25 s
    # back to device 0: 0B0 [9.5, 11.5]. Makespan 11.5 (reading boundary 1's 0 B for the 0<->1
    # messages would give 1 + 1 + 1 + 2 + 2 + 2 = 9)
    assert tl.makespan == pytest.approx(11.5)
