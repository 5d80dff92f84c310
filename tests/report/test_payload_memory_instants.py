"""The report page's memory curves collapse several events at one instant to the level after the
last of them, as the PNG does (``report.plots.gantt``): on 1F1B p = 4, m = 8 with pcie-gen4 and
GPT-3 1.3B, device 3 frees a microbatch's activations and stores the next one's at the same
instant, and the page drew that as a dip to the weights level (a spike the PNG does not have)."""

from __future__ import annotations

from ppverify.compare.config import Config
from ppverify.compare.resolve import resolve
from ppverify.engines import run
from ppverify.report.payload import canonical_ops, memory_curve, timeline_payload
from ppverify.schedules import build


def test_no_two_points_share_a_time_and_the_last_level_is_kept():
    s = build("1f1b", p=4, m=8)
    res = resolve(Config(4, 8, system="pcie-gen4", model="gpt3-1.3b"), s)
    tl = run(s, res.costs, res.comm, semantics="async")
    mem = timeline_payload(tl, canonical_ops(s))["mem"]
    collapsed = 0
    for d, (times, values) in enumerate(mem):
        assert len(times) == len(set(times)), f"device {d}: two points at one time"
        raw_t, raw_m = tl.memory_events(d)
        collapsed += len(raw_t) - len(times)
        for t, v in zip(times, values):
            # the level after the last event at that instant (bytes: the printed unit is 1)
            last = max(k for k in range(len(raw_t)) if abs(raw_t[k] - t) <= 1e-6 * max(1.0, abs(t)))
            assert v == round(float(raw_m[last]), 6)
    assert collapsed > 0  # the case the page drew as dips is there


def test_a_release_and_an_allocation_at_one_instant_keep_the_allocation():
    # by hand: (1, 0) then (1, 3) at one instant: the device holds 3 after it, never 0 in between
    assert memory_curve([0.0, 1.0, 1.0, 2.0], [1.0, 0.0, 3.0, 0.0], 3) == [[0.0, 1.0, 2.0], [1.0, 3.0, 0.0]]
