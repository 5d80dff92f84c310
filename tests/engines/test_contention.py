"""The ``contention`` engine: a hand-computed FIFO queue, NIC sharing, contention >= async for
every family, equality when nothing is shared, collectives, deadlock."""

from __future__ import annotations

import numpy as np
import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import DeadlockError, ParameterError
from ppverify.core.ops import Op
from ppverify.core.placement import linear
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.engines.contention import simulate_contention
from ppverify.schedules import build, families
from ppverify.systems.llm import Training, llm_cost_model
from ppverify.systems.system import GiB, LinkTier, System, load_system


def test_fifo_queue_on_one_link_by_hand():
    # GPipe p=2, m=2, every op 1, each transfer 3 on the one directed link 0 -> 1 (and back):
    # activations: mb0 [1,4]; mb1 requested at 2 waits for the link until 4 -> [4,7]
    # device 1: F0 [4,5], F1 [7,8], B0 [8,9], B1 [9,10]
    # gradients: mb0 [9,12]; mb1 requested at 10 waits until 12 -> [12,15]
    # device 0: B0 [12,13], B1 [15,16]    (async: 12, the transfers overlap)
    s = build("gpipe", p=2, m=2)
    costs = CostModel.unit(s.placement)
    tl = simulate_contention(s, costs, FixedDelay(3.0))
    got = {str(op): (tl.start[i], tl.end[i]) for i, op in enumerate(tl.ops)}
    assert got == {
        "0F0": (0, 1),
        "0F1": (1, 2),
        "0B0": (12, 13),
        "0B1": (15, 16),
        "1F0": (4, 5),
        "1F1": (7, 8),
        "1B0": (8, 9),
        "1B1": (9, 10),
    }
    tr = tl.transfers
    assert sorted(zip(tr.start, tr.end)) == [(1, 4), (4, 7), (9, 12), (12, 15)]
    assert run(s, costs, FixedDelay(3.0), semantics="async").makespan == 12


def one_nic_system(latency_us=5.0, bandwidth_GBps=1.0):
    # one GPU and one NIC per node: a device's sends to both neighbours share its NIC's transmit side
    return System(
        "one-nic", "gpu", 100e12, 80 * GiB, 1, 1, None, LinkTier("slow", latency_us / 1e6, bandwidth_GBps * 1e9)
    )


def test_nic_shared_by_both_directions_of_a_device():
    s = build("1f1b", p=4, m=8)
    sysm = one_nic_system(bandwidth_GBps=0.1)  # a transfer (84 ms) outlasts a forward (29 ms)
    costs = llm_cost_model("gpt3-1.3b", sysm.peak_flops, 4, Training(mfu=0.5))
    asy = run(s, costs, sysm, semantics="async")
    con = run(s, costs, sysm, semantics="contention")
    assert con.makespan > asy.makespan
    # no two transfers overlap on a NIC transmit side (FIFO, one at a time)
    tr = con.transfers
    for d in range(4):
        spans = sorted((tr.start[n], tr.end[n]) for n in range(len(tr)) if tr.src_dev[n] == d)
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert b0 >= a1 - 1e-12


def test_linear_pipeline_on_nvlink_never_queues():
    # inside a DGX node: a GPU's activation (to d+1) and gradient (to d-1) sends are far apart in
    # 1F1B and each takes microseconds, so nothing waits for a port
    s = build("1f1b", p=8, m=16)
    sysm = load_system("dgx-h100")
    costs = llm_cost_model("gpt3-13b", sysm.peak_flops, 8)
    np.testing.assert_allclose(
        run(s, costs, sysm, semantics="contention").start, run(s, costs, sysm, semantics="async").start
    )


def test_zero_time_network_equals_async():
    s = build("chimera", p=4, m=8)
    sysm = load_system("ideal")
    costs = llm_cost_model("gpt3-1.3b", sysm.peak_flops, 4)
    a = run(s, costs, sysm, semantics="async")
    c = run(s, costs, sysm, semantics="contention")
    np.testing.assert_allclose(c.start, a.start)
    assert c.makespan == pytest.approx(a.makespan)


@pytest.mark.parametrize("comm", [FixedDelay(0.3), FixedDelay(2.0), "one-nic", "pcie"])
def test_contention_never_faster_than_async_for_every_family(comm, buildable):
    checked = set()
    for fam in families():
        for p, m, s in buildable(fam.name, ((2, 4), (4, 4), (4, 8))):
            if comm == "one-nic":
                cm, costs = (
                    one_nic_system(),
                    llm_cost_model(
                        "gpt3-1.3b", 100e12, s.num_stages, Training(layers_per_stage=_split(24, s.num_stages))
                    ),
                )
            elif comm == "pcie":
                cm = load_system("pcie-gen4").with_ranks_per_node(2)
                costs = llm_cost_model(
                    "gpt3-1.3b", cm.peak_flops, s.num_stages, Training(layers_per_stage=_split(24, s.num_stages))
                )
            else:
                cm, costs = comm, CostModel.abstract(s.placement, F=1, B=2)
            a = run(s, costs, cm, semantics="async")
            c = run(s, costs, cm, semantics="contention")
            assert (c.start >= a.start - 1e-9).all(), f"{fam.name} p={p} m={m}"
            assert c.makespan >= a.makespan - 1e-9
            checked.add(fam.name)
    assert checked == {f.name for f in families()}


def _split(layers, stages):
    # allow more stages than layers (some families have many small stages)
    base, extra = divmod(layers, stages)
    return tuple(base + (1 if s < extra else 0) for s in range(stages))


def test_collectives_queue_behind_p2p():
    s = build("chimera", p=4, m=4)
    costs = CostModel.abstract(s.placement, F=1, B=2)
    c = run(s, costs, FixedDelay(1.0), semantics="contention", sync="eager")
    a = run(s, costs, FixedDelay(1.0), semantics="contention", sync="none")
    assert c.makespan >= a.makespan
    tr = c.transfers
    ar = [n for n in range(len(tr)) if tr.kind[n] == "allreduce"]
    assert len(ar) == 8
    for n in ar:
        assert tr.end[n] - tr.start[n] == pytest.approx(2.0)
    # collectives on the same ring links never overlap each other
    spans = sorted(
        {(tr.start[n], tr.end[n], frozenset((tr.src_dev[n], tr.dst_dev[n]))) for n in ar}, key=lambda x: x[0]
    )
    by_pair = {}
    for s0, s1, pair in spans:
        by_pair.setdefault(pair, []).append((s0, s1))
    for lst in by_pair.values():
        for (a0, a1), (b0, b1) in zip(lst, lst[1:]):
            assert b0 >= a1 - 1e-12
    # data-parallel all-reduce at the end
    dp = run(s, costs, FixedDelay(1.0), semantics="contention", dp_allreduce=2)
    assert dp.transfers.kind.count("dp-allreduce") == 4
    assert dp.makespan >= c.makespan


def test_deadlock_reported():
    s = Schedule(linear(2), 1, ((Op("F", 0, 0), Op("B", 0, 0)), (Op("B", 1, 0), Op("F", 1, 0))), (0,))
    with pytest.raises(DeadlockError) as exc:
        simulate_contention(s, CostModel.unit(s.placement), FixedDelay(0.5))
    assert [w[0] for w in exc.value.waits] == [0, 1]


def test_unknown_option():
    s = build("1f1b", p=2, m=2)
    with pytest.raises(ParameterError):
        simulate_contention(s, CostModel.unit(s.placement), FixedDelay(0.5), colour=1)


def four_gpu_node(topology):
    return System(
        "node",
        "gpu",
        100e12,
        80 * GiB,
        4,
        1,
        LinkTier("slow", 5e-6, 1e9),
        LinkTier("ib", 1e-5, 1e9),
        None,
        "",
        topology,
    )


def test_switch_ports_are_shared_mesh_links_are_not():
    # DualPipe sends to both neighbours at once (overlapped F&B): behind one switch port those
    # sends queue, on a mesh they use different links
    s = build("dualpipe", p=4, m=8)
    costs = llm_cost_model("gpt3-1.3b", 100e12, 4, Training())
    a = run(s, costs, four_gpu_node("switch"), semantics="async", sync="none")
    mesh = run(s, costs, four_gpu_node("mesh"), semantics="contention", sync="none")
    switch = run(s, costs, four_gpu_node("switch"), semantics="contention", sync="none")
    assert a.makespan <= mesh.makespan <= switch.makespan
    # some sends wait behind another one on the switch port
    tr = switch.transfers
    assert any(tr.start[n] > switch.end[tr.src_op[n]] + 1e-12 for n in range(len(tr)) if tr.src_op[n] >= 0)
    assert four_gpu_node("switch").resources(1, 2) == (("port-tx", 1), ("port-rx", 2))
    assert four_gpu_node("mesh").resources(1, 2) == (("link", 1, 2),)
    # on a switch, a GPU never sends two transfers at once
    tr = switch.transfers
    for d in range(4):
        spans = sorted((tr.start[n], tr.end[n]) for n in range(len(tr)) if tr.src_dev[n] == d)
        assert all(b0 >= a1 - 1e-12 for (_, a1), (b0, _) in zip(spans, spans[1:]))


def test_replica_allreduce_contends_with_pipeline_traffic():
    s = build("chimera", p=4, m=8)
    costs = llm_cost_model("gpt3-1.3b", 100e12, 4, Training())
    a = run(s, costs, four_gpu_node("switch"), semantics="async")
    mesh = run(s, costs, four_gpu_node("mesh"), semantics="contention")
    switch = run(s, costs, four_gpu_node("switch"), semantics="contention")
    assert a.makespan < mesh.makespan <= switch.makespan


from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=40, deadline=None)
@given(
    fam=st.sampled_from(["gpipe", "1f1b", "interleaved-1f1b", "chimera", "zb-h1", "hanayo"]),
    p=st.sampled_from([2, 4]),
    k=st.integers(1, 3),
    c=st.floats(0, 3),
    f=st.floats(0.25, 2),
    b=st.floats(0.25, 4),
)
def test_contention_never_faster_than_async_random_costs(fam, p, k, c, f, b):
    try:
        s = build(fam, p=p, m=p * k)
    except ParameterError:
        return
    costs = CostModel.abstract(s.placement, F=f, B=b)
    a = run(s, costs, FixedDelay(c), semantics="async")
    con = run(s, costs, FixedDelay(c), semantics="contention")
    assert (con.start >= a.start - 1e-9).all()
    assert con.makespan >= a.makespan - 1e-9
