"""A partial ``runtime.handover.ranks_<n>`` section: every term it leaves out is the pooled
section's (docs/calibrate.md: "every other term as above"), not 0; expected values by hand."""

from __future__ import annotations

import pytest

from ppverify.core.costs import CostModel
from ppverify.engines.runtime import handover_of, runtime_timeline
from ppverify.schedules import build
from ppverify.systems.system import load_system

POOLED = {"head_us": 0, "overshoot_us": 0, "gap_us": 0, "send_us": 0, "recv_us": 0, "late_us": 1e6, "wake_us": 5e5}


def test_left_out_terms_are_the_pooled_ones(loopback_preset):
    handover = {**POOLED, "gap_us": 7, "ranks_2": {"late_us": 3e6}}
    m = handover_of(load_system(loopback_preset({"handover": handover})), 2)
    assert m is not None
    # ranks_2 states late (3 s); gap (7 us) and wake (0.5 s) come from the pooled section
    assert (m.late, m.wake, m.gap) == pytest.approx((3.0, 0.5, 7e-6))


def test_deciles_follow_their_term(loopback_preset):
    tenths = {f"d{i}_us": float(i) for i in range(1, 11)}
    handover = {**POOLED, "deciles": {"late": tenths, "wake": tenths}, "ranks_2": {"late_us": 3e6}}
    m = handover_of(load_system(loopback_preset({"handover": handover})), 2)
    assert m is not None
    # wake is inherited whole (mean and deciles); late is the section's own, and the pooled late
    # deciles, drawn around the pooled 1 s, would undo its 3 s: none
    assert dict(m.deciles) == {"wake": pytest.approx(tuple(i * 1e-6 for i in range(1, 11)))}


def test_walk_takes_the_section_late_and_the_pooled_wake(loopback_preset):
    handover = {**POOLED, "ranks_2": {"late_us": 3e6}}
    sysm = load_system(loopback_preset({"handover": handover}))
    s = build("gpipe", p=2, m=2)
    c = CostModel.abstract(s.placement, F=1, B=2)
    # wake 0.5, late 3. rank 0: F0 [0, 1] SEND at 1, F1 [1, 2] SEND at 2. rank 1: RECV_F0 early:
    # 1.5, F0 [1.5, 2.5]; RECV_F1 posted at 2.5 after its SEND (late): 5.5, F1 [5.5, 6.5];
    # B0 [6.5, 8.5] SEND at 8.5, B1 [8.5, 10.5] SEND at 10.5. rank 0: RECV_B0 early: 8.5 + 0.5 = 9,
    # B0 [9, 11]; RECV_B1 posted at 11 after its SEND (late): 14, B1 [14, 16]
    assert runtime_timeline(s, c, sysm).makespan == pytest.approx(16.0)
    # (with wake read as 0, the bug: F0(1) [1, 2], F1 [5, 6], B0 [6, 8], B1 [8, 10]; B0(0) [8, 10],
    # B1 [13, 15]: 15)
