"""The op-by-op breakdown of measured timelines (ppverify.measure.breakdown): on steps generated
from known terms (overshoot per op, a gap of g + t per SEND/RECV between a rank's ops, a wait
after another rank's op, a step head), it recovers every term exactly, and the critical path's
terms add up to the makespan. No processes: the events are made here."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.dag import predecessors, split_pairs
from ppverify.core.ops import Comm, Op
from ppverify.io.torch_lowering import lower_like_pytorch
from ppverify.measure.breakdown import breakdown, critical_path
from ppverify.measure.record import Event, to_timeline
from ppverify.schedules import build

SCHEDULES = [
    ("gpipe", 2, 4, {}),
    ("1f1b", 3, 6, {}),
    ("1f1b-split", 2, 4, {}),
    ("interleaved-1f1b", 2, 4, {"v": 2}),
    ("zbv", 2, 4, {}),
    ("1f1b", 4, 8, {}),
]


def synthetic_step(schedule, costs, o, g, t, w, h):
    """Events of one step under the model (integer ns): an op lasts cost + o; it starts w after
    the op of another rank it depends on when that one ends after the rank's previous op, else
    g + t * n after the previous op (n: SEND/RECV actions PyTorch's lowering puts between them),
    or at h when it is the rank's first op and depends on nobody."""
    split = split_pairs(schedule)
    progs, gaps = [], []
    for prog in lower_like_pytorch(schedule).programs:
        ops, ns, n = [], [], 0
        for a in prog:
            if type(a) is Op:
                ops.append(a)
                ns.append(n)
                n = 0
            elif isinstance(a, Comm):
                n += 1
        progs.append(ops)
        gaps.append(ns)
    rank_of = {op: r for r, ops in enumerate(progs) for op in ops}
    end: dict[Op, int] = {}
    events = [[] for _ in progs]
    nxt = [0] * len(progs)
    while any(k < len(ops) for k, ops in zip(nxt, progs)):
        moved = False
        for r, ops in enumerate(progs):
            if nxt[r] == len(ops):
                continue
            op = ops[nxt[r]]
            deps = [d for d, _ in predecessors(op, schedule.num_stages, split)]
            if any(d not in end for d in deps):
                continue
            cross = [end[d] for d in deps if rank_of[d] != r]
            prev = end[ops[nxt[r] - 1]] if nxt[r] else None
            if cross and (prev is None or max(cross) > prev):
                start = max(cross) + w
            elif prev is None:
                start = h
            else:
                start = prev + g + t * gaps[r][nxt[r]]
            cost = round(costs.duration[op.kind][op.stage] * 1e9)
            end[op] = start + cost + o
            events[r].append(Event(op.kind, op.stage, op.mb, start, end[op]))
            nxt[r] += 1
            moved = True
        assert moved
    return events


@settings(max_examples=12, deadline=None)
@given(
    which=st.sampled_from(SCHEDULES),
    o=st.integers(0, 200_000),
    g=st.integers(0, 500_000),
    t=st.integers(0, 500_000),
    w=st.integers(0, 1_000_000),
    h=st.integers(0, 1_000_000),
)
def test_breakdown_recovers_the_terms(which, o, g, t, w, h):
    fam, p, m, kw = which
    s = build(fam, p=p, m=m, **kw)
    c = CostModel.abstract(s.placement, F=0.01, B=0.02)
    tl = to_timeline(s, c, synthetic_step(s, c, o, g, t, w, h), 0)
    b = breakdown([tl, tl])
    assert b.overshoot == pytest.approx(o * 1e-9, abs=1e-12)
    assert b.gap_base == pytest.approx(g * 1e-9, abs=1e-11)
    assert b.gap_per_comm == pytest.approx(t * 1e-9, abs=1e-11)
    assert b.wait == pytest.approx(w * 1e-9, abs=1e-12) and b.head == pytest.approx(h * 1e-9, abs=1e-12)
    assert b.samples == 2 * len(tl.ops)
    assert b.means == pytest.approx((o * 1e-9, g * 1e-9, t * 1e-9), abs=1e-11)  # no tail: means = medians
    # the critical path, term by term, adds up to the makespan; its overshoot is o per op on it
    cp = critical_path(tl)
    assert cp.cost + cp.overhead == pytest.approx(tl.makespan, abs=1e-12)
    assert cp.overshoot == pytest.approx(cp.ops * o * 1e-9, abs=1e-12) and cp.head == pytest.approx(h * 1e-9)


def test_critical_path_by_hand():
    # gpipe p=2 m=1, costs 2 us: 0F0 [1, 3.1] us, 1F0 [4, 6.1], 1B0 [6.3, 8.4], 0B0 [12, 14.1]:
    # path 0F0 -> 1F0 (wait 0.9) -> 1B0 (gap 0.2) -> 0B0 (wait 3.6), head 1, overshoot 0.1 each
    s = build("gpipe", p=2, m=1)
    ev = [
        [Event("F", 0, 0, 1000, 3100), Event("B", 0, 0, 12000, 14100)],
        [Event("F", 1, 0, 4000, 6100), Event("B", 1, 0, 6300, 8400)],
    ]
    cp = critical_path(to_timeline(s, CostModel.abstract(s.placement, F=2e-6, B=2e-6), ev, 0))
    assert (cp.ops, cp.hops, cp.comm) == (4, 2, 4)
    assert (cp.waits, cp.gaps, cp.head, cp.overshoot) == pytest.approx((4.5e-6, 0.2e-6, 1e-6, 0.4e-6))
