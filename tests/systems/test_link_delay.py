"""A system's emulated link delay (``runtime.link_delay_us``, ``measure --link-delay``) in every
model that times transfers; expected values by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ppverify.core.costs import CostModel
from ppverify.engines.runtime import Handover, predict_runtime, runtime_timeline
from ppverify.io.json_checks import JsonReader
from ppverify.io.json_comm import CommSettings, comm_from_dict, comm_to_dict
from ppverify.schedules import build
from ppverify.systems.system import allreduce_time, load_system

HANDOVER = {"head_us": 0, "overshoot_us": 0, "gap_us": 0, "send_us": 0, "recv_us": 0, "late_us": 3000, "wake_us": 500}


@pytest.fixture()
def system(loopback_preset):
    # a machine with an emulated slow link: 10 ms on every transfer
    runtime = {"action_overhead_us": 0, "link_delay_us": 10000, "handover": HANDOVER}
    return load_system(loopback_preset(runtime, gpus=4))


def test_preset_key_adds_to_every_cross_device_transfer(system):
    assert system.link_delay_s == pytest.approx(0.01)
    # 50 us + 2e6 B / 2 GB/s = 1.05 ms, plus the 10 ms delay; nothing on one device
    assert system.transfer_time(0, 1, 2e6) == pytest.approx(0.01105)
    assert system.transfer_time(2, 2, 2e6) == 0.0
    # a ring all-reduce of two ranks crosses the link twice: 2 x (50 us + 10 ms), no bytes
    assert allreduce_time(system, [0, 1], 0) == pytest.approx(0.0201)


def test_runtime_walk_never_delivers_before_the_delay():
    s = build("gpipe", p=2, m=1)
    c = CostModel.abstract(s.placement, F=1, B=2)
    # rank 1's RECV is posted first: without a delay F(1) starts a wake (0.5) after F(0)'s SEND
    # at 1 and the gradient comes back after another wake: 1 + 0.5 + 1 + 2 + 0.5 + 2 = 7
    assert predict_runtime(s, c, Handover(wake=0.5)).makespan == 7.0
    # with a delay of 2 each crossing takes 2 instead: 1 + 2 + 1 + 2 + 2 + 2 = 10
    assert predict_runtime(s, c, Handover(wake=0.5, link_delay=2.0)).makespan == 10.0
    # a drawn walk keeps the delay; a scaled model (load) does not scale it
    assert Handover(wake=0.5, link_delay=2.0).scaled(3).link_delay == 2.0


def test_runtime_semantics_takes_the_delay_from_the_system(system):
    s = build("gpipe", p=2, m=1)
    c = CostModel.abstract(s.placement, F=0.02, B=0.04)
    slow = runtime_timeline(s, c, system)
    fast = runtime_timeline(s, c, replace(system, link_delay_s=0.0))
    # two crossings on the critical path, each 10 ms instead of a 0.5 ms wake
    assert slow.makespan - fast.makespan == pytest.approx(2 * (0.01 - 0.0005))


def test_schedule_files_keep_the_delay(system):
    d = comm_to_dict(CommSettings(system))
    assert d["system"]["link_delay_us"] == pytest.approx(10000)
    back = comm_from_dict(JsonReader("x.json"), d).comm
    assert back.link_delay_s == pytest.approx(0.01)


def test_negative_delay_in_a_preset_is_refused(loopback_preset):
    from ppverify.core.errors import PPVerifyError

    with pytest.raises(PPVerifyError, match="link_delay_us"):
        load_system(loopback_preset({"link_delay_us": -5}))


def test_data_parallel_allreduce_pays_the_delay_per_step(system):
    from ppverify.systems.system import dp_allreduce_time

    # a ring of N replicas takes 2(N-1) steps, each a cross-device transfer: N = 2, no bytes:
    # 2 x (50 us + 10 ms) = 20.1 ms, as the replica all-reduce of two ranks above
    assert dp_allreduce_time(system, 2, 0) == pytest.approx(0.0201)
    # N = 4, 4e6 B: 6 steps of 50 us + 1e6 B / 2e9 B/s + 10 ms = 6 x 10.55 ms = 63.3 ms
    assert dp_allreduce_time(system, 4, 4e6) == pytest.approx(0.0633)


def test_data_parallel_allreduce_in_a_timeline(system):
    from ppverify.engines import run

    s = build("1f1b", p=2, m=2)
    c = CostModel.abstract(s.placement, F=0.01, B=0.02)  # abstract: no gradient bytes
    tl = run(s, c, system, "async", dp_allreduce=2)
    spans = [e - b for k, b, e in zip(tl.transfers.kind, tl.transfers.start, tl.transfers.end) if k == "dp-allreduce"]
    # one per device, each 2 x (50 us + 10 ms)
    assert spans == pytest.approx([0.0201, 0.0201])
