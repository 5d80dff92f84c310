"""Edges of the ``contention`` engine, worked by hand: one link shared by activations and gradients
of two pipes, a replica all-reduce queued behind gradients, inter-node NICs against intra-node
ports, and (hypothesis) never faster than ``async``, equal to it on a free network, for systems
with shared ports and NICs, every replica-sync mode and a data-parallel all-reduce."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.systems.system import GiB, LinkTier, System


def _spans(tl, kind):
    tr = tl.transfers
    return sorted((tr.src_dev[n], tr.dst_dev[n], tr.start[n], tr.end[n]) for n in range(len(tr)) if tr.kind[n] == kind)


def test_chimera_link_shared_by_both_pipes_and_the_replica_allreduce():
    # Chimera p=2, m=4, F=1, B=2, 3 per transfer. Pipe 0 (mb 0, 2) runs stage 0 on device 0, pipe 1
    # (mb 1, 3) stage 0 on device 1. Programs: dev 0: 0F0 1F1 0F2 1B1 0B0 1F3 1B3 0B2 (dev 1 the
    # mirror). Link 0->1 carries pipe 0's activations and pipe 1's gradients:
    #   0F0's activation [1,4]; 0F2's requested at 6 [6,9]; 1B1's gradient requested at 8 waits for
    #   it: [9,12] (async: arrives at 11), so 0B1 on device 1 starts at 12, not 11;
    #   then 1F3 [14,15], 1B3 [15,17], its gradient [17,20], 0B2 [20,22]: makespan 22 (async 21:
    #   0B0 [11,13], 1F3 [13,14], 1B3 [14,16], gradient [16,19], 0B2 [19,21]).
    s = build("chimera", p=2, m=4)
    costs = CostModel.abstract(s.placement, F=1, B=2)
    comm = FixedDelay(3.0)
    assert run(s, costs, comm, semantics="async", sync="none").makespan == 21
    con = run(s, costs, comm, semantics="contention", sync="none")
    assert con.makespan == 22
    assert [x[2:] for x in _spans(con, "gradient") if x[:2] == (0, 1)] == [(9, 12), (17, 20)]
    # with the replica all-reduce (eager; a pair costs 2 * 3 = 6, latency only): stage 1's is
    # triggered at 17, when 1B3 and 1B2 end, at the same time as their gradients, which asked first
    # and hold both links until 20: [20,26]; stage 0's at 22 (0B2, 0B3 end) waits for it: [26,32].
    # async: stage 1's last backwards end at 16 -> [16,22]; stage 0's at 21 -> [21,27]
    assert run(s, costs, comm, semantics="async", sync="eager").makespan == 27
    con = run(s, costs, comm, semantics="contention", sync="eager")
    assert con.makespan == 32
    assert _spans(con, "allreduce") == [(0, 1, 20, 26), (0, 1, 26, 32), (1, 0, 20, 26), (1, 0, 26, 32)]


def _two_nodes(intra_latency, inter_latency):
    # two ranks per node, one NIC per node; transfers cost their latency alone (abstract costs: no bytes)
    return System(
        "two-nodes",
        "gpu",
        100e12,
        80 * GiB,
        2,
        1,
        LinkTier("port", intra_latency, math.inf),
        LinkTier("nic", inter_latency, math.inf),
        None,
        "",
        "switch",
    )


def test_inter_node_nic_queues_intra_node_ports_do_not_slow_the_step():
    # 1F1B p=4, m=2, F=1, B=2; devices 0,1 on node 0, 2,3 on node 1; intra 1, inter 3.
    # async: dev 1's forwards [2,3], [3,4]; their activations cross the NIC [3,6], [4,7]; dev 2's
    # forwards [6,7], [7,8]. contention: the second activation waits for node 0's NIC to transmit
    # the first: [6,9], so dev 2's 2F1 runs [9,10] and its activation to dev 3 (intra) [10,11].
    # Dev 3's 1F1B order F0 B0 F1 B1 needs that activation only at 11, when B0 ends: nothing later
    # moves, both end at 25 (dev 0: B0 [20,22], B1 [23,25]).
    s = build("1f1b", p=4, m=2)
    costs = CostModel.abstract(s.placement, F=1, B=2)
    sysm = _two_nodes(1.0, 3.0)
    assert sysm.resources(1, 2) == (("nic-tx", 0, 0), ("nic-rx", 1, 0))
    assert sysm.resources(2, 1) == (("nic-tx", 1, 0), ("nic-rx", 0, 0))  # the other direction: its own
    a = run(s, costs, sysm, semantics="async")
    c = run(s, costs, sysm, semantics="contention")
    start = {str(o): (float(c.start[i]), float(a.start[i])) for i, o in enumerate(c.ops)}
    assert start["2F1"] == (9, 7) and start["2F0"] == (6, 6) and start["3F1"] == (11, 11)
    assert [x[2:] for x in _spans(c, "activation") if x[:2] == (1, 2)] == [(3, 6), (6, 9)]
    assert a.makespan == c.makespan == 25


def test_data_parallel_allreduce_holds_the_nic_that_pipeline_traffic_needs():
    # 1F1B p=4, m=1, F=1, B=2 on the two-node system (intra 1, inter 3), --dp-allreduce 2: each
    # device's all-reduce costs 2 * 3 = 6 and holds both sides of its node's one NIC.
    # Compute: 0F0 [0,1] 1F0 [2,3] 2F0 [6,7] 3F0 [8,9] 3B0 [9,11] 2B0 [12,14].
    # async: 2B0's gradient crosses [14,17]; 1B0 [17,19], 0B0 [20,22]; all-reduces from each
    #   device's end: dev 0 [22,28] -> 28.
    # contention: dev 3's all-reduce [11,17] holds node 1's NIC, so 2B0's gradient waits: [17,20];
    #   dev 2's all-reduce, asked at 14 after that gradient, [20,26]; 1B0 [20,22]; dev 1's
    #   all-reduce [22,28] on node 0's NIC; 0B0 [23,25]; dev 0's waits for dev 1's: [28,34] -> 34
    s = build("1f1b", p=4, m=1)
    costs = CostModel.abstract(s.placement, F=1, B=2)
    assert run(s, costs, _two_nodes(1.0, 3.0), semantics="async", dp_allreduce=2).makespan == 28
    c = run(s, costs, _two_nodes(1.0, 3.0), semantics="contention", dp_allreduce=2)
    assert c.makespan == 34
    assert _spans(c, "dp-allreduce") == [(0, 0, 28, 34), (1, 1, 22, 28), (2, 2, 20, 26), (3, 3, 11, 17)]
    assert _spans(c, "gradient") == [(1, 0, 22, 23), (2, 1, 17, 20), (3, 2, 11, 12)]


def test_opposite_directions_never_queue():
    # Chimera p=2: at 1 both devices send an activation, 0->1 and 1->0, on a port, a NIC or a link
    # of their own direction: both arrive at 1 + 3 = 4 (each direction full duplex)
    s = build("chimera", p=2, m=2)
    costs = CostModel.abstract(s.placement, F=1, B=2)
    for comm in (FixedDelay(3.0), _two_nodes(3.0, 3.0), _two_nodes(3.0, 3.0).with_ranks_per_node(1)):
        c = run(s, costs, comm, semantics="contention", sync="none")
        assert _spans(c, "activation") == [(0, 1, 1, 4), (1, 0, 1, 4)]


def _system(topology, per_node, nics, intra, inter):
    return System(
        "fuzz",
        "gpu",
        100e12,
        80 * GiB,
        per_node,
        nics,
        LinkTier("intra", *intra) if per_node > 1 else None,
        LinkTier("inter", *inter),
        None,
        "",
        topology,
    )


_LINK = st.sampled_from([(0.0, math.inf), (0.5, math.inf), (2.0, math.inf)])


@settings(max_examples=40, deadline=None)
@given(
    fam=st.sampled_from(["gpipe", "1f1b", "interleaved-1f1b", "chimera", "zb-h1", "hanayo", "dualpipe", "v-half"]),
    p=st.sampled_from([2, 4]),
    k=st.integers(1, 2),
    topology=st.sampled_from(["switch", "mesh"]),
    per_node=st.sampled_from([1, 2, 4]),
    nics=st.sampled_from([1, 2]),
    intra=_LINK,
    inter=_LINK,
    sync=st.sampled_from(["eager", "after-flush", "none"]),
    dp=st.sampled_from([0, 2, 3]),
    f=st.floats(0.25, 2),
    b=st.floats(0.25, 4),
)
def test_contention_never_faster_than_async_on_shared_ports_and_nics(
    fam, p, k, topology, per_node, nics, intra, inter, sync, dp, f, b
):
    try:
        s = build(fam, p=p, m=2 * p * k)
    except ParameterError:
        return
    sysm = _system(topology, per_node, nics, intra, inter)
    costs = CostModel.abstract(s.placement, F=f, B=b)
    a = run(s, costs, sysm, semantics="async", sync=sync, dp_allreduce=dp)
    c = run(s, costs, sysm, semantics="contention", sync=sync, dp_allreduce=dp)
    assert (c.start >= a.start - 1e-9).all()
    assert c.makespan >= a.makespan - 1e-9
    # a free network (every transfer and collective takes 0) shares nothing worth waiting for
    free = _system(topology, per_node, nics, (0.0, math.inf), (0.0, math.inf))
    a0 = run(s, costs, free, semantics="async", sync=sync, dp_allreduce=dp)
    c0 = run(s, costs, free, semantics="contention", sync=sync, dp_allreduce=dp)
    np.testing.assert_allclose(c0.start, a0.start)
    assert c0.makespan == pytest.approx(a0.makespan)
