"""The ``runtime`` semantics charges a hand-over its tensor's bytes over the system's link
(``bytes / bandwidth`` after the rendezvous), on top of the hand-over terms, which were measured
with tensors of a few hundred bytes; expected values by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ppverify.core.costs import CostModel
from ppverify.engines.runtime import runtime_timeline
from ppverify.schedules import build
from ppverify.systems.system import load_system

ZERO = {"head_us": 0, "overshoot_us": 0, "gap_us": 0, "send_us": 0, "recv_us": 0}


def _system(loopback_preset, late_us: float, wake_us: float, gbps: float = 0.001):
    # 0.001 GB/s = 1e6 B/s: a 2e6 B tensor takes 2 s on the wire
    handover = {**ZERO, "late_us": late_us, "wake_us": wake_us}
    return load_system(loopback_preset({"handover": handover}, latency_us=50, bandwidth_GBps=gbps))


def _costs(schedule, nbytes: float) -> CostModel:
    return replace(CostModel.abstract(schedule.placement, F=1, B=2), boundary_bytes=(nbytes,))


def test_early_receivers_wait_for_the_bytes(loopback_preset):
    s = build("gpipe", p=2, m=1)
    sysm = _system(loopback_preset, late_us=3e6, wake_us=0.5e6)
    # both RECVs posted first (early): F(0) [0, 1]; its activation ready at 1 + wake 0.5 + 2e6 B /
    # 1e6 B/s = 3.5: F(1) [3.5, 4.5], B(1) [4.5, 6.5]; the gradient ready at 6.5 + 0.5 + 2 = 9:
    # B(0) [9, 11]. Without bytes: 1 + 0.5 + 1 + 2 + 0.5 + 2 = 7 (the 50 us latency is in wake)
    tl = runtime_timeline(s, _costs(s, 2e6), sysm)
    assert tl.makespan == pytest.approx(11.0)
    assert list(tl.transfers.start) == pytest.approx([1.0, 6.5])
    assert list(tl.transfers.end) == pytest.approx([3.5, 9.0])
    assert runtime_timeline(s, _costs(s, 0.0), sysm).makespan == pytest.approx(7.0)


def test_late_receivers_start_the_bytes_after_the_round_trip(loopback_preset):
    # gloo's rendezvous: a late receiver's data leaves the sender only once the RECV is posted,
    # so its bytes follow the round trip (they are not already there)
    s = build("gpipe", p=2, m=2)
    sysm = _system(loopback_preset, late_us=3e6, wake_us=0.0)
    # rank 0: F0 [0, 1] SEND at 1, F1 [1, 2] SEND at 2. rank 1: RECV_F0 early: 1 + 0 + 2 = 3,
    # F0 [3, 4]; RECV_F1 posted at 4 after its SEND at 2 (late): 4 + 3 + 2 = 9, F1 [9, 10];
    # B0 [10, 12] SEND at 12, B1 [12, 14] SEND at 14. rank 0: RECV_B0 posted at 2 (early):
    # 12 + 0 + 2 = 14, B0 [14, 16]; RECV_B1 posted at 16 after its SEND at 14 (late):
    # 16 + 3 + 2 = 21, B1 [21, 23]
    assert runtime_timeline(s, _costs(s, 2e6), sysm).makespan == pytest.approx(23.0)
    # without bytes: F0(1) [1, 2], RECV_F1 posted at 2 = its SEND (late): F1 [5, 6], B0 [6, 8],
    # B1 [8, 10]; B0(0) [8, 10], RECV_B1 posted at 10 (late): B1 [13, 15]
    assert runtime_timeline(s, _costs(s, 0.0), sysm).makespan == pytest.approx(15.0)


def test_the_bandwidth_not_the_latency(loopback_preset):
    # the hand-over terms hold the link's latency; only bytes / bandwidth is added: an infinite
    # bandwidth adds nothing whatever the bytes, and a 50 us latency is not charged twice
    s = build("gpipe", p=2, m=1)
    sysm = _system(loopback_preset, late_us=3e6, wake_us=0.5e6, gbps=float("inf"))
    assert runtime_timeline(s, _costs(s, 2e6), sysm).makespan == pytest.approx(7.0)
