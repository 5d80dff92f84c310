"""The ``contention`` engine starts a device's data-parallel all-reduce after its compute *and* its
replica syncs have ended (engines/simulate.py module doc: the DP all-reduce comes "after its
compute and replica syncs"), never when a sync merely starts. Found by mutation testing: with the
sync's start in place of its end, no test failed and contention came out faster than async.

By hand, Chimera p=2, m=2, F=1, B=2, every transfer 1, ``--dp-allreduce 2`` (eager replica syncs):
pipe 0 runs mb 0 with stage 0 on device 0 and stage 1 on device 1, pipe 1 mb 1 mirrored, so both
devices run alike: stage-0 F [0,1], its activation crosses [1,2], stage-1 F [2,3], stage-1 B [3,5],
its gradient crosses [5,6], stage-0 B [6,8]; compute ends at 8 on both devices.
- stage 1 (held on both devices) syncs once both its backwards end, at 5; a ring of 2 devices
  costs 2·(2-1)·1 = 2, but it needs the links (0,1) and (1,0) that the gradients hold [5,6]:
  it runs [6,8];
- stage 0 syncs once both its backwards end, at 8: [8,10] (the links are free again at 8);
- the DP all-reduce of 2 replicas costs 2·(2-1)·1 = 2 on each device's own resource, and starts
  at max(compute end 8, sync ends 8 and 10) = 10: [10,12] on both devices; makespan 12.
``async`` gives 12 too (nothing queues: the stage-1 sync at [5,7], stage 0's [8,10], DP [10,12]);
contention is never faster than async on the same input (contention.py's module doc).
"""

from __future__ import annotations

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.engines.contention import simulate_contention
from ppverify.schedules import build


def _spans(tl, kind: str) -> list[tuple[int, int, float, float]]:
    tr = tl.transfers
    return sorted((tr.src_dev[n], tr.dst_dev[n], tr.start[n], tr.end[n]) for n in range(len(tr)) if tr.kind[n] == kind)


def _chimera():
    s = build("chimera", p=2, m=2)
    return s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(1.0)


def test_dp_allreduce_waits_for_the_replica_syncs_to_end() -> None:
    s, costs, comm = _chimera()
    c = run(s, costs, comm, semantics="contention", dp_allreduce=2)
    # every op by hand (see the module doc): both devices run alike
    got = sorted((int(c.device[i]), float(c.start[i]), float(c.end[i])) for i in range(len(c.ops)))
    assert got == [(d, a, b) for d in (0, 1) for a, b in ((0, 1), (2, 3), (3, 5), (6, 8))]
    # the stage-1 sync queues behind the gradients [5,6] -> [6,8]; stage 0's [8,10]
    assert _spans(c, "gradient") == [(0, 1, 5, 6), (1, 0, 5, 6)]
    assert _spans(c, "allreduce") == [(0, 1, 6, 8), (0, 1, 8, 10), (1, 0, 6, 8), (1, 0, 8, 10)]
    # after the last sync ends at 10, not when it starts at 8
    assert _spans(c, "dp-allreduce") == [(0, 0, 10, 12), (1, 1, 10, 12)]
    assert c.makespan == 12


def test_reference_engine_alike() -> None:
    # the same step through the reference engine directly (the compiled kernel leaves collectives to it)
    s, costs, comm = _chimera()
    c = simulate_contention(s, costs, comm, dp_allreduce=2)
    assert _spans(c, "dp-allreduce") == [(0, 0, 10, 12), (1, 1, 10, 12)] and c.makespan == 12


def test_contention_never_faster_than_async_here() -> None:
    s, costs, comm = _chimera()
    a = run(s, costs, comm, semantics="async", dp_allreduce=2)
    c = run(s, costs, comm, semantics="contention", dp_allreduce=2)
    assert a.makespan == 12  # by hand, above
    assert c.makespan >= a.makespan
    # and per op start (contention.py: every op starts no earlier than under async)
    assert all(c.start[i] >= a.start[i] - 1e-12 for i in range(len(c.ops)))
    assert _spans(c, "dp-allreduce")[0][2] >= _spans(a, "dp-allreduce")[0][2] == pytest.approx(10)
