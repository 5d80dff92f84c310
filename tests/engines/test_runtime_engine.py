"""The ``runtime`` semantics (PyTorch's runtime on gloo, the hand-over model) as an engine:
cross-checked against the async engine where the model reduces to it, by hand where it does not,
and through ``simulate --semantics runtime`` with a preset."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.comm import NO_COMM
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.ops import Overlap
from ppverify.engines import run
from ppverify.engines.runtime import Handover, handover_of
from ppverify.schedules import build
from ppverify.systems.system import load_system

ONE_PIPE = [
    ("gpipe", {}),
    ("1f1b", {}),
    ("1f1b-split", {}),
    ("zb-h1", {}),
    ("zb-h2", {}),
    ("interleaved-1f1b", {"v": 2}),
    ("looped-bfs", {}),
    ("interleaved-zb", {}),
    ("zbv", {}),
    ("dualpipev", {}),
    ("hanayo", {}),
]


@settings(max_examples=40, deadline=None)
@given(
    fam=st.sampled_from(ONE_PIPE),
    p=st.integers(2, 4),
    k=st.integers(1, 2),
    f=st.integers(1, 4),
    b=st.integers(1, 6),
)
def test_zero_terms_equal_async_without_communication(fam, p, k, f, b):
    # every term zero: an op starts when its rank is free and its input has been sent, which is
    # exactly the async engine with no communication (same per-rank order, same dependencies)
    name, params = fam
    try:
        s = build(name, p=p, m=2 * p * k, **params)
    except ParameterError:
        return
    c = CostModel.abstract(s.placement, F=f, B=b)
    got = run(s, c, NO_COMM, "runtime", model=Handover())
    want = run(s, c, NO_COMM, "async")
    assert got.makespan == pytest.approx(want.makespan)
    w = {op: (st_, en) for op, st_, en in zip(want.ops, want.start, want.end)}
    g = {op: (st_, en) for op, st_, en in zip(got.ops, got.start, got.end)}
    # an overlapped pair (DualPipeV's OVERLAP_F_B) runs its ops one after the other in PyTorch's
    # runtime; async shows both over the pair's whole span: the spans agree
    pairs = [a.ops for prog in s.programs for a in prog if isinstance(a, Overlap)]
    for pair in pairs:
        span = (min(g[op][0] for op in pair), max(g[op][1] for op in pair))
        assert span == pytest.approx((min(w[op][0] for op in pair), max(w[op][1] for op in pair)))
    paired = {op for pair in pairs for op in pair}
    for op in g.keys() - paired:
        assert g[op] == pytest.approx(w[op])
    # nothing waits past its producer's end when a hand-over costs nothing (an overlapped pair
    # posts its SENDs after both of its ops: its first op's consumer does wait, in the runtime too)
    if not pairs:
        assert got.info.exposed_comm == pytest.approx([0.0] * s.p)


def test_gpipe_two_ranks_by_hand():
    # gpipe p=2 m=1, F=1 B=2. Rank 1 posts RECV_F at 0 (early) so its F starts at the SEND's post
    # (1) + wake; B on rank 0 likewise: F 0-1, F 1.5-2.5, B 2.5-4.5, B 5-7; with head 0.25 every
    # time shifts by 0.25 and the overshoot 0.1 lengthens each of the 4 ops on the path
    s = build("gpipe", p=2, m=1)
    c = CostModel.abstract(s.placement, F=1, B=2)
    assert run(s, c, NO_COMM, "runtime", model=Handover(wake=0.5)).makespan == 7.0
    tl = run(s, c, NO_COMM, "runtime", model=Handover(wake=0.5, head=0.25, overshoot=0.1))
    assert tl.makespan == pytest.approx(7.0 + 0.25 + 4 * 0.1)
    assert tl.device.tolist() == [0, 0, 1, 1]
    assert len(tl.transfers) == 2 and tl.transfers.kind == ["activation", "gradient"]
    # each consumer waits one wake past its producer's end: 0.5 exposed on each rank
    assert tl.info.exposed_comm == pytest.approx([0.5, 0.5])


def test_late_receiver_pays_the_round_trip():
    # gpipe p=2 m=2, F=1 B=2, late=3 (every other term 0), by hand: rank 0 F0 0-1 (SEND at 1),
    # F1 1-2 (SEND at 2); rank 1 posted RECV_F0 at 0 (early): F0 1-2; it posts RECV_F1 at 2, not
    # before the SEND (late): F1 at 2+3 = 5-6, B0 6-8 (SEND at 8), B1 8-10 (SEND at 10); rank 0
    # posted RECV_B0 at 2 (early): B0 8-10; posts RECV_B1 at 10, with its SEND (late): B1 13-15
    s = build("gpipe", p=2, m=2)
    c = CostModel.abstract(s.placement, F=1, B=2)
    assert run(s, c, NO_COMM, "runtime", model=Handover(late=3.0)).makespan == 15.0
    # a late receiver costs more than an early one: the makespan grows with `late` alone
    assert run(s, c, NO_COMM, "runtime", model=Handover(late=1.0)).makespan < 15.0


def test_refusals_name_the_rule():
    s = build("1f1b", p=2, m=2)
    c = CostModel.abstract(s.placement)
    with pytest.raises(ParameterError, match="runtime.handover.*ppverify calibrate"):
        run(s, c, load_system("dgx-h100"), "runtime")
    with pytest.raises(ParameterError, match="two pipes"):
        run(build("chimera", p=2, m=2), None, NO_COMM, "runtime", model=Handover())
    with pytest.raises(ParameterError, match="one pipeline replica"):
        run(s, c, NO_COMM, "runtime", model=Handover(), dp_allreduce=2)


def _preset(write, **terms_us):
    # hand-written hand-over terms, and a per-action overhead only async folds in
    handover = {f"{k}_us": v for k, v in terms_us.items()}
    return write(
        {"action_overhead_us": 100000, "handover": handover},
        gpus=8,
        latency_us=0,
        bandwidth_GBps=1000,
        peak_TFLOPs=0.1,
        memory_GiB=1,
    )


def test_preset_terms_reach_the_engine(loopback_preset):
    sysm = load_system(str(_preset(loopback_preset, head=0, overshoot=0, gap=0, send=0, recv=0, late=3e6, wake=5e5)))
    h = handover_of(sysm)
    assert (h.late, h.wake, h.gap) == pytest.approx((3.0, 0.5, 0.0))


def test_simulate_semantics_runtime_by_hand(loopback_preset):
    # seconds costs F=1 B=2 on a preset whose only term is wake 0.5 s: the gpipe p=2 m=1 walk by
    # hand is 7 s. The preset's 0.1 s per-action overhead is what async folds in, the runtime
    # semantics must not (it has its own terms): 4 ops x 0.1 s more under async
    preset = _preset(loopback_preset, head=0, overshoot=0, gap=0, send=0, recv=0, late=0, wake=5e5)
    cmd = [sys.executable, "-m", "ppverify", "simulate", "gpipe", "-p", "2", "-m", "1", "--costs", "F=1,B=2"]
    cmd += ["--system", str(preset), "--json"]
    out = subprocess.run(cmd + ["--semantics", "runtime"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["makespan"] == pytest.approx(7.0)
    out = subprocess.run(cmd + ["--semantics", "async"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["makespan"] == pytest.approx(6.0 + 4 * 0.1)


def test_simulate_runtime_without_handover_is_one_line(tmp_path):
    cmd = [sys.executable, "-m", "ppverify", "simulate", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2"]
    out = subprocess.run(cmd + ["--system", "dgx-h100", "--semantics", "runtime"], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "ppverify calibrate" in out.stderr and len(out.stderr.strip().splitlines()) == 1
