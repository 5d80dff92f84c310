"""The measured level without processes: recorded events -> Timeline, and the gradient check.

Expected values are worked out by hand from the events written in each test (times in ns).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.trace import write_trace
from ppverify.measure.gradcheck import GradCheck, check, reference_grads
from ppverify.measure.record import Event, causality_violations, step_start, to_timeline
from ppverify.measure.stages import ModelSpec, build_stage_module, loss_fn, make_batch
from ppverify.schedules import build


def _gpipe_events():
    # gpipe p=2 m=2; step starts at t0 = 1000 ns. Device 0: F0 [1000,2000], F1 [2000,3000],
    # B0 [9000,11000], B1 [11000,13000]; device 1: F0 [2500,3500], F1 [3500,4500],
    # B0 [4500,6500], B1 [6500,8500]; sends posted right after the producing op.
    d0 = [
        Event("F", 0, 0, 1000, 2000),
        Event("SEND_F", 0, 0, 2000, 2000),
        Event("F", 0, 1, 2000, 3000),
        Event("SEND_F", 0, 1, 3000, 3000),
        Event("B", 0, 0, 9000, 11000),
        Event("B", 0, 1, 11000, 13000),
    ]
    d1 = [
        Event("F", 1, 0, 2500, 3500),
        Event("F", 1, 1, 3500, 4500),
        Event("B", 1, 0, 4500, 6500),
        Event("SEND_B", 1, 0, 6500, 6500),
        Event("B", 1, 1, 6500, 8500),
        Event("SEND_B", 1, 1, 8500, 8500),
    ]
    return d0, d1


def test_timeline_from_hand_written_events():
    s = build("gpipe", p=2, m=2)
    tl = to_timeline(s, CostModel.unit(s.placement), _gpipe_events(), 1000, {"step": 0})
    assert tl.semantics == "measured"
    assert [str(o) for o in tl.ops] == ["0F0", "0F1", "0B0", "0B1", "1F0", "1F1", "1B0", "1B1"]
    assert tl.device.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    us = 1e-6
    assert np.allclose(tl.start, np.array([0, 1, 8, 10, 1.5, 2.5, 3.5, 5.5]) * us)
    assert np.allclose(tl.end, np.array([1, 2, 10, 12, 2.5, 3.5, 5.5, 7.5]) * us)
    # makespan: last end 13000 - 1000 ns; busy: device 0 works 1+1+2+2 us, device 1 1+1+2+2 us
    assert tl.makespan == pytest.approx(12 * us)
    assert np.allclose(tl.busy(), [6 * us, 6 * us])
    assert tl.bubble_ratio == pytest.approx(0.5)
    # transfers: activation F0 posted at 1 us, consumed by 1F0 at 1.5 us; F1 2 -> 2.5 us;
    # gradients B0 posted 5.5 us, consumed by 0B0 at 8 us; B1 7.5 -> 10 us
    tr = tl.transfers
    assert tr.kind == ["activation", "activation", "gradient", "gradient"]
    assert tr.src_dev == [0, 0, 1, 1] and tr.dst_dev == [1, 1, 0, 0]
    assert np.allclose(tr.start, np.array([1, 2, 5.5, 7.5]) * us)
    assert np.allclose(tr.end, np.array([1.5, 2.5, 8, 10]) * us)
    assert [str(tl.ops[i]) for i in tr.dst_op] == ["1F0", "1F1", "0B0", "0B1"]


def test_measured_timeline_feeds_frame_and_trace(tmp_path):
    s = build("gpipe", p=2, m=2)
    tl = to_timeline(s, CostModel.unit(s.placement), _gpipe_events(), 1000)
    frame = tl.to_frame()
    assert len(frame) == 8 + 4
    assert (frame["type"] == "transfer").sum() == 4
    write_trace(tl, tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["otherData"]["semantics"] == "measured"


def test_split_backward_and_allreduce_events():
    # 1f1b-split p=2 m=1: the gradient of stage 1 is consumed by stage 0's I; an all-reduce of
    # stage 0 between ranks 0 and 1 becomes a collective transfer with no op ends.
    s = build("1f1b-split", p=2, m=1)
    d0 = [
        Event("F", 0, 0, 0, 10),
        Event("SEND_F", 0, 0, 10, 10),
        Event("I", 0, 0, 50, 55),
        Event("W", 0, 0, 55, 70),
        Event("ALLREDUCE", 0, 1, 70, 80),
    ]
    d1 = [Event("F", 1, 0, 12, 22), Event("I", 1, 0, 22, 32), Event("SEND_B", 1, 0, 32, 32), Event("W", 1, 0, 32, 40)]
    tl = to_timeline(s, CostModel.unit(s.placement), [d0, d1], 0)
    tr = tl.transfers
    assert tr.kind == ["activation", "gradient", "allreduce"]
    assert str(tl.ops[tr.dst_op[1]]) == "0I0" and tr.end[1] == pytest.approx(50e-9)
    assert tr.src_op[2] == -1 and tr.dst_dev[2] == 1
    assert tl.makespan == pytest.approx(80e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 10**5)), min_size=4, max_size=4), st.integers(0, 10**9))
def test_reconstruction_preserves_durations(spans, offset):
    # any recorded times: durations are kept, times shift by the step start, in seconds
    s = build("gpipe", p=2, m=1)
    ops = [("F", 0, 0), ("B", 0, 0), ("F", 1, 0), ("B", 1, 0)]
    evs = [Event(k, st_, mb, offset + a, offset + a + d) for (k, st_, mb), (a, d) in zip(ops, spans)]
    t0 = step_start([e.start_ns for e in evs])
    tl = to_timeline(s, CostModel.unit(s.placement), [evs[:2], evs[2:]], t0)
    got = {str(o): (a, b) for o, a, b in zip(tl.ops, tl.start, tl.end)}
    for (k, st_, mb), (a, d) in zip(ops, spans):
        start, end = got[f"{st_}{k}{mb}"]
        assert end - start == pytest.approx(d * 1e-9)
        assert start == pytest.approx((offset + a - t0) * 1e-9)
    assert tl.start.min() == pytest.approx(0.0)
    assert tl.makespan == pytest.approx(max(a + d for a, d in spans) * 1e-9 - min(a for a, _ in spans) * 1e-9)


def test_reference_equals_full_batch_gradient():
    # independent derivation: equal-sized microbatches, MSE per microbatch averaged over m equals
    # the MSE of the whole batch, so the reference must equal one full-batch backward
    spec, S, m = ModelSpec(4, 8, 3, seed=2), 3, 4
    ref = reference_grads(spec, S, m)
    model = torch.nn.Sequential(*[build_stage_module(spec, s) for s in range(S)])
    x, y = make_batch(spec, m)
    loss_fn(model(x), y).backward()
    for s in range(S):
        for n, p in model[s].named_parameters():
            assert np.allclose(ref[s][n], p.grad.numpy(), atol=1e-13, rtol=0)


def test_check_names_first_mismatching_stage_and_worst_param():
    ref = {0: {"a": np.array([1.0, -2.0]), "b": np.array([0.5])}, 1: {"a": np.array([3.0])}}
    good = {(0, 0): {"a": np.array([1.0, -2.0]), "b": np.array([0.5])}, (0, 1): {"a": np.array([3.0])}}
    assert check(good, ref).ok
    # every gradient doubled: stage 0's worst is "a" (|-2 - -4| = 2), reported before stage 1's 3
    doubled = {k: {n: 2 * v for n, v in g.items()} for k, g in good.items()}
    v = check(doubled, ref)
    assert (v.ok, v.stage, v.param, v.max_abs_diff) == (False, 0, "a", 2.0)
    assert "stage 0 parameter a" in v.message
    missing = check({(0, 0): {"a": None, "b": np.array([0.5])}, (0, 1): {"a": np.array([3.0])}}, ref)
    assert not missing.ok and missing.param == "a" and missing.max_abs_diff == float("inf")
    absent = check({(0, 0): good[(0, 0)]}, ref)
    assert not absent.ok and absent.stage == 1


def test_gradcheck_verdict_is_plain_data():
    v = GradCheck(False, 2, "down.bias", 0.25, 1e-8, pipe=1, checked=5)
    assert v.to_dict()["stage"] == 2 and "pipe 1 replica" in v.message


def _events_of(tl, shift: dict[str, int] | None = None):
    # a simulated timeline rewritten as recorded events (ns), optionally starting some ops early
    shift = shift or {}
    evs = [[] for _ in range(tl.schedule.p)]
    for op, d, a, b in zip(tl.ops, tl.device, tl.start, tl.end):
        k = shift.get(str(op), 0)
        evs[int(d)].append(Event(op.kind, op.stage, op.mb, round(a * 1e9) - k, round(b * 1e9) - k))
    return evs


@pytest.mark.parametrize("family", ["1f1b", "zbv", "chimera", "dualpipev", "interleaved-1f1b"])
def test_causality_holds_for_a_dependency_respecting_run_and_names_a_broken_edge(family):
    from ppverify.engines import run

    s = build(family, p=4, m=8)
    c = CostModel.abstract(s.placement, F=0.01, B=0.02)
    pred = run(s, c, semantics="async")  # an engine's timeline: every op after its inputs
    assert causality_violations(to_timeline(s, c, _events_of(pred), 0), tolerance=0.0) == []
    # stage 1's forward of microbatch 0 starts 4 ms early: during its input's producer, 0F0
    # (each F lasts 10 ms * p / S); that edge, and only it, is broken
    early = to_timeline(s, c, _events_of(pred, {"1F0": 4_000_000}), 0)
    bad = causality_violations(early, tolerance=1e-4)
    assert len(bad) == 1 and bad[0].startswith("1F0 starts") and "before 0F0" in bad[0]
