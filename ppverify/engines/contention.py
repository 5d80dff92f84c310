"""The ``contention`` engine: as ``async``, and transfers that share a resource queue.

Resources come from the communication model (:meth:`ppverify.systems.system.System.resources`): each
directed link inside a node, and each NIC's transmit and receive side between nodes (links are
full duplex, so the two directions never share). A model without topology (``--comm-delay``)
gives every ordered device pair its own link. Each resource serves one transfer at a time, in
FIFO order of request: a transfer is requested when its producer op ends, waits until all of its
resources are free, then holds them for its uncontended time (latency + bytes / bandwidth).
Sends run on a communication stream, so a device keeps computing while its transfers queue.

Collectives (replica all-reduces, the data-parallel all-reduce) hold every directed hop of their
ring, both directions (a DP all-reduce: its device's NIC), for their ring all-reduce time, and
queue FIFO with the point-to-point traffic. Without sharing, the result equals ``async``; with
it, every op starts no earlier than under ``async`` (tests check ``contention >= async``).

Implementation: a discrete-event simulation. Op completions are processed in time order (a heap),
which makes transfer requests arrive in time order, so reserving resources greedily at request
time is FIFO. A device runs ahead as far as its inputs are known (its start times are then final).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..core.comm import NO_COMM, CommModel
from ..core.compiled import use_compiled
from ..core.costs import CostModel
from ..core.errors import DeadlockError, ParameterError
from ..core.ops import KIND_CODE, B, W
from ..core.schedule import Schedule
from ..core.timeline import Timeline, TimelineInfo, Transfers
from ..systems.replica_sync import ALLREDUCE, DP_ALLREDUCE, collectives, device_ends
from .core import _waits
from .simulate import (
    ACTIVATION,
    GRADIENT,
    _record_collective,
    dp_resources,
    finish,
    prepare,
    resources_of,
    ring_resources,
)

_OP_END, _COLL = 0, 1


def simulate_contention(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel = NO_COMM,
    sync: str = "eager",
    dp_allreduce: int = 0,
    **options: Any,
) -> Timeline:
    """Simulate one step with link and NIC contention (see module doc).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.systems.system import load_system
        >>> from ppverify.systems.llm import llm_cost_model
        >>> s = build("1f1b", p=16, m=16)
        >>> sysm = load_system("dgx-h100")
        >>> c = llm_cost_model("gpt3-13b", sysm.peak_flops, 16)
        >>> from ppverify.engines.simulate import simulate_async
        >>> simulate_contention(s, c, sysm).makespan >= simulate_async(s, c, sysm).makespan
        True
    """
    if options:
        raise ParameterError(
            "option", ", ".join(options), "unknown option of the contention engine (known: sync, dp_allreduce)"
        )
    prep = prepare(schedule, costs, comm)
    if prep.timing_pred is not None:  # links shared by transfers that start at a late SEND: not modelled
        from ..core.send_gates import late_sends

        raise ParameterError(
            "semantics",
            "contention",
            f"does not time SENDs posted after a later op than their producer ({', '.join(late_sends(prep.dag)[:3])}):"
            " use --semantics async, which does",
        )
    if use_compiled(prep.dag.num_ops):  # numba kernel, same results (tests/engines/test_kernels.py)
        compiled_tl = contention_compiled(schedule, costs, comm, prep, sync, dp_allreduce)
        if compiled_tl is not None:  # None: the step has collectives, timed below
            return compiled_tl
    dag = prep.dag
    n, p = dag.num_ops, schedule.p
    p0 = dag.pred[:, 0].tolist()
    p1 = dag.pred[:, 1].tolist()
    cross0 = dag.cross[:, 0].tolist()
    cross1 = dag.cross[:, 1].tolist()
    device = dag.device.tolist()
    fused = dag.fused.tolist()
    offsets = dag.offsets
    dur = prep.duration.tolist()

    # resources, numbered
    res_id: dict[Hashable, int] = {}

    def rid(keys: tuple[Hashable, ...]) -> tuple[int, ...]:
        return tuple(res_id.setdefault(k, len(res_id)) for k in keys)

    # cross edges leaving each producer: CSR over producer position
    ne = len(prep.edge_i)
    order = np.argsort(prep.edge_q, kind="stable")
    e_q = prep.edge_q[order]
    out_start = np.searchsorted(e_q, np.arange(n + 1)).tolist()
    e_i = prep.edge_i[order].tolist()
    e_k = prep.edge_k[order].tolist()
    e_time = prep.edge_time[order].tolist()
    e_bytes = prep.edge_bytes[order].tolist()
    pair_res: dict[tuple[int, int], tuple[int, ...]] = {}
    e_res = []
    for q, i in zip(e_q.tolist(), e_i):
        key = (device[q], device[i])
        if key not in pair_res:
            pair_res[key] = rid(resources_of(comm, *key))
        e_res.append(pair_res[key])
    res_free = [0.0] * len(res_id)

    # collectives and their triggers
    colls = collectives(schedule, costs, comm, dag, np.zeros(n), sync, dp_allreduce)
    group_colls = [c for c in colls if c.kind == ALLREDUCE]
    dp_colls = {c.devices[0]: c for c in colls if c.kind == DP_ALLREDUCE}
    coll_res = [rid(ring_resources(comm, c.devices)) for c in group_colls]
    dp_res = {d: rid(dp_resources(comm, d)) for d in dp_colls}
    res_free.extend([0.0] * (len(res_id) - len(res_free)))
    # an op counts toward a group when it is a last backward of the group's stage (eager) or
    # any op on one of its devices (after-flush)
    trig: dict[int, list[int]] = {}
    pending = []
    is_last_bwd = (dag.kind == KIND_CODE[B]) | (dag.kind == KIND_CODE[W])
    for g, c in enumerate(group_colls):
        if sync == "eager":
            hits = np.flatnonzero(is_last_bwd & (dag.stage == c.stage))
        else:
            hits = np.flatnonzero(np.isin(dag.device, c.devices))
        for i in hits.tolist():
            trig.setdefault(i, []).append(g)
        pending.append(len(hits))
    dev_left = np.diff(offsets).tolist()
    groups_of_dev: list[list[int]] = [[] for _ in range(p)]
    for g, c in enumerate(group_colls):
        for d in c.devices:
            groups_of_dev[d].append(g)
    dp_wait = [len(groups_of_dev[d]) for d in range(p)]
    dp_ready = [0.0] * p

    start = [0.0] * n
    end = [-1.0] * n
    arr0 = [-1.0] * n
    arr1 = [-1.0] * n
    ptr = list(offsets[:-1])
    free = [0.0] * p
    heap: list[tuple[float, int, int, int]] = []
    seq = 0
    tr = Transfers()  # collectives; point-to-point transfers are kept per edge and added at the end
    e_start = [0.0] * ne
    e_end = [0.0] * ne
    tails_end = [0.0] * p

    def advance(d: int) -> None:
        nonlocal seq
        i, stop = ptr[d], offsets[d + 1]
        t_dev = free[d]
        while i < stop:
            j = i
            while fused[j]:
                j += 1
            t = t_dev
            for k in range(i, j + 1):
                q = p0[k]
                if q >= 0 and not i <= q <= j:
                    if cross0[k]:
                        a = arr0[k]
                    else:
                        a = end[q]
                    if a < 0:
                        ptr[d], free[d] = i, t_dev
                        return
                    if a > t:
                        t = a
                q = p1[k]
                if q >= 0 and not i <= q <= j:
                    a = arr1[k] if cross1[k] else end[q]
                    if a < 0:
                        ptr[d], free[d] = i, t_dev
                        return
                    if a > t:
                        t = a
            t_end = t + dur[i]
            for k in range(i, j + 1):
                start[k] = t
                end[k] = t_end
                heapq.heappush(heap, (t_end, seq, _OP_END, k))
                seq += 1
            t_dev = t_end
            i = j + 1
        ptr[d], free[d] = i, t_dev

    def reserve(res: tuple[int, ...], t: float, length: float) -> tuple[float, float]:
        st = t
        for r in res:
            if res_free[r] > st:
                st = res_free[r]
        en = st + length
        for r in res:
            res_free[r] = en
        return st, en

    def request_dp(d: int) -> None:
        nonlocal seq
        heapq.heappush(heap, (dp_ready[d], seq, _COLL, -1 - d))
        seq += 1

    for d in range(p):
        advance(d)
    # collectives with nothing to wait for (no matching ops) start at 0
    for g, cnt in enumerate(pending):
        if cnt == 0:
            heapq.heappush(heap, (0.0, seq, _COLL, g))
            seq += 1
    for d in range(p):
        if dev_left[d] == 0 and dp_wait[d] == 0 and d in dp_colls:
            request_dp(d)
    while heap:
        t, _, kind, x = heapq.heappop(heap)
        if kind == _COLL:
            if x >= 0:
                c = group_colls[x]
                st, en = reserve(coll_res[x], t, c.duration)
                _record_collective(tr, c, st, en)
                for d in c.devices:
                    tails_end[d] = max(tails_end[d], en)
                    dp_ready[d] = max(dp_ready[d], en)
                    dp_wait[d] -= 1
                    if dp_wait[d] == 0 and dev_left[d] == 0 and d in dp_colls:
                        request_dp(d)
            else:
                d = -1 - x
                c = dp_colls[d]
                st, en = reserve(dp_res[d], t, c.duration)
                _record_collective(tr, c, st, en)
                tails_end[d] = max(tails_end[d], en)
            continue
        q = x
        for e in range(out_start[q], out_start[q + 1]):
            st, en = reserve(e_res[e], t, e_time[e])
            i = e_i[e]
            if e_k[e] == 0:
                arr0[i] = en
            else:
                arr1[i] = en
            e_start[e] = st
            e_end[e] = en
            di = device[i]
            if ptr[di] <= i:
                advance(di)
        for g in trig.get(q, ()):
            pending[g] -= 1
            if pending[g] == 0:
                heapq.heappush(heap, (t, seq, _COLL, g))
                seq += 1
        d = device[q]
        dev_left[d] -= 1
        if dev_left[d] == 0:
            dp_ready[d] = max(dp_ready[d], t)
            if dp_wait[d] == 0 and d in dp_colls:
                request_dp(d)
    if any(ptr[d] < offsets[d + 1] for d in range(p)):
        done = [e >= 0 for e in end]
        raise DeadlockError(_waits(dag, ptr, done))
    start_a, end_a = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    kinds = [ACTIVATION, GRADIENT]
    e_q_list = e_q.tolist()
    p2p = Transfers(
        [kinds[k] for k in e_k],
        [device[q] for q in e_q_list],
        [device[i] for i in e_i],
        e_q_list,
        e_i,
        e_start,
        e_end,
        e_bytes,
    )
    for n_ in range(len(tr)):
        p2p.add(
            tr.kind[n_],
            tr.src_dev[n_],
            tr.dst_dev[n_],
            tr.src_op[n_],
            tr.dst_op[n_],
            tr.start[n_],
            tr.end[n_],
            tr.nbytes[n_],
        )
    tr = p2p
    dev_end = device_ends(dag, end_a, p)
    tails = np.maximum(np.asarray(tails_end) - dev_end, 0.0)
    return finish(
        schedule,
        costs,
        comm,
        prep,
        "contention",
        start_a,
        end_a,
        tr,
        tails,
        TimelineInfo(sync=sync, dp_allreduce=dp_allreduce, num_resources=len(res_id), num_transfers=ne),
    )


def contention_compiled(
    schedule: Schedule, costs: CostModel, comm: CommModel, prep: Any, sync: str, dp_allreduce: int
) -> Timeline | None:
    """The ``contention`` engine's timeline computed by the compiled kernel, or ``None`` when the
    step has collectives (replica or data-parallel all-reduces), which only the reference engine
    (:func:`simulate_contention`) times.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.engines.simulate import prepare
        >>> s = build("gpipe", p=2, m=2)
        >>> c = CostModel.abstract(s.placement)
        >>> # device 1 runs F0 [2,3] F1 [3,4] B0 [4,6] B1 [6,8]; gradients arrive at 7 and 9
        >>> contention_compiled(s, c, FixedDelay(1.0), prepare(s, c, FixedDelay(1.0)), "eager", 0).makespan
        11.0
    """
    from .kernels import _contention_p2p  # numba: only above the size threshold

    dag = prep.dag
    n, p = dag.num_ops, schedule.p
    if collectives(schedule, costs, comm, dag, np.zeros(n), sync, dp_allreduce):
        return None
    order = np.argsort(prep.edge_q, kind="stable")
    e_q = prep.edge_q[order]
    e_i = prep.edge_i[order]
    e_k = prep.edge_k[order]
    out_start = np.searchsorted(e_q, np.arange(n + 1))
    # resources of each device pair, numbered; each edge points at its pair's list (CSR)
    src, dst = dag.device[e_q], dag.device[e_i]
    pairs, pair_of_edge = np.unique(src * p + dst, return_inverse=True)
    res_id: dict[Any, int] = {}
    pair_res = [
        [res_id.setdefault(r, len(res_id)) for r in resources_of(comm, int(k // p), int(k % p))] for k in pairs.tolist()
    ]
    pair_len = np.array([len(r) for r in pair_res], dtype=np.int64)
    pair_ptr = np.concatenate(([0], np.cumsum(pair_len)))
    flat = np.array([r for rs in pair_res for r in rs], dtype=np.int64)
    pair_of_edge = pair_of_edge.reshape(-1)
    e_len = pair_len[pair_of_edge]
    res_ptr = np.concatenate(([0], np.cumsum(e_len))).astype(np.int64)
    # flat index of each edge's k-th resource: its pair's start + k
    rel = np.arange(int(res_ptr[-1])) - np.repeat(res_ptr[:-1], e_len)
    res_idx = flat[np.repeat(pair_ptr[:-1][pair_of_edge], e_len) + rel] if len(flat) else np.zeros(0, np.int64)
    start, end, ptr, e_start, e_end = _contention_p2p(
        np.ascontiguousarray(dag.pred[:, 0]),
        np.ascontiguousarray(dag.pred[:, 1]),
        np.ascontiguousarray(dag.cross[:, 0]),
        np.ascontiguousarray(dag.cross[:, 1]),
        np.asarray(prep.duration, dtype=float),
        dag.fused,
        np.asarray(dag.offsets, dtype=np.int64),
        dag.device,
        out_start.astype(np.int64),
        e_i.astype(np.int64),
        e_k.astype(np.int64),
        np.ascontiguousarray(prep.edge_time[order], dtype=float),
        res_ptr,
        res_idx.astype(np.int64),
        len(res_id),
    )
    if (ptr < np.asarray(dag.offsets[1:])).any():
        raise DeadlockError(_waits(dag, ptr.tolist(), (end >= 0).tolist()))
    # kept as arrays: lists of a million transfers are made only if someone reads them
    tr = Transfers.from_arrays((ACTIVATION, GRADIENT), e_k, src, dst, e_q, e_i, e_start, e_end, prep.edge_bytes[order])
    tails = np.maximum(np.zeros(p) - device_ends(dag, end, p), 0.0)
    return finish(
        schedule,
        costs,
        comm,
        prep,
        "contention",
        start,
        end,
        tr,
        tails,
        TimelineInfo(sync=sync, dp_allreduce=dp_allreduce, num_resources=len(res_id), num_transfers=len(e_i)),
    )
