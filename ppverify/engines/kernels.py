"""Compiled (numba) kernels of the ``async`` and ``contention`` engines over flat numpy arrays.

Each kernel is the pure-Python engine's loop written again on arrays, statement for statement
in the order that fixes floating-point results (same additions, same maxima), so that its
starts and ends equal the reference engine's exactly: :mod:`ppverify.engines.core`
(list scheduling) and :mod:`ppverify.engines.contention` (FIFO link queues). The engines call
these only above :data:`ppverify.compiled.COMPILED_MIN_OPS` ops; ``cache=True`` writes
the machine code next to this module (or numba's user cache) on first use, so later processes
load it instead of compiling.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ..comm import CommModel
from ..costs import CostModel
from ..errors import DeadlockError
from ..schedule import Schedule
from ..timeline import Timeline, Transfers


@njit(cache=True, nogil=True)
def _list_schedule(p0, p1, d0, d1, duration, fused, idle_before, offsets, idle_tick):  # pragma: no cover - compiled
    n = p0.shape[0]
    p = offsets.shape[0] - 1
    start = np.zeros(n)
    end = np.full(n, -1.0)
    ptr = offsets[:-1].copy()
    free = np.zeros(p)
    # devices waiting on an op: a linked list (each device waits on at most one op at a time)
    waiter = np.full(n, -1, np.int64)
    next_waiter = np.full(p, -1, np.int64)
    # ring buffer of devices to run; a device is queued at most once (it is woken only while waiting)
    queue = np.empty(max(p, 1), np.int64)
    head = 0
    size = p
    for d in range(p):
        queue[d] = d
    while size > 0:
        d = queue[head]
        head = (head + 1) % p
        size -= 1
        i = ptr[d]
        stop = offsets[d + 1]
        t_dev = free[d]
        blocked = -1
        while i < stop:
            if not fused[i]:
                t = t_dev + idle_before[i] * idle_tick if idle_tick != 0.0 else t_dev
                q = p0[i]
                if q >= 0:
                    tq = end[q]
                    if tq < 0:
                        blocked = q
                        break
                    tq += d0[i]
                    if tq > t:
                        t = tq
                q = p1[i]
                if q >= 0:
                    tq = end[q]
                    if tq < 0:
                        blocked = q
                        break
                    tq += d1[i]
                    if tq > t:
                        t = tq
                start[i] = t
                t_dev = t + duration[i]
                end[i] = t_dev
                w = waiter[i]
                while w >= 0:
                    queue[(head + size) % p] = w
                    size += 1
                    w = next_waiter[w]
                i += 1
                continue
            # an overlapped slot is ops i..j (fused chain); all must be ready together
            j = i
            while j < stop - 1 and fused[j]:
                j += 1
            t = t_dev + idle_before[i] * idle_tick
            for k in range(i, j + 1):
                for side in range(2):
                    q = p0[k] if side == 0 else p1[k]
                    dl = d0[k] if side == 0 else d1[k]
                    if q < 0 or (i <= q and q <= j):
                        continue
                    if end[q] < 0:
                        blocked = q
                        break
                    if end[q] + dl > t:
                        t = end[q] + dl
                if blocked >= 0:
                    break
            if blocked >= 0:
                break
            t_end = t + duration[i]
            for k in range(i, j + 1):
                start[k] = t
                end[k] = t_end
                w = waiter[k]
                while w >= 0:
                    queue[(head + size) % p] = w
                    size += 1
                    w = next_waiter[w]
            t_dev = t_end
            i = j + 1
        if blocked >= 0:
            next_waiter[d] = waiter[blocked]
            waiter[blocked] = d
        ptr[d] = i
        free[d] = t_dev
    return start, end, ptr


def list_schedule_arrays(
    pred: np.ndarray,
    delay: np.ndarray,
    duration: np.ndarray,
    fused: np.ndarray,
    idle_before: np.ndarray,
    offsets: Any,
    idle_tick: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, list[int] | None, list[bool] | None]:
    """Compiled :func:`ppverify.engines.core.list_schedule_flat` on arrays: ``pred`` and
    ``delay`` of shape ``(n, 2)``. Returns ``(start, end, None, None)``, or on deadlock
    ``(start, end, ptr, done)`` as the reference does (``end`` 0 for ops that never ran).

    Example:
        >>> s, e, ptr, _ = list_schedule_arrays(np.array([[-1, -1], [0, -1]]), np.array([[0.0, 0.0], [0.5, 0.0]]),
        ...                                     np.array([1.0, 1.0]), np.zeros(2, bool), np.zeros(2, np.int64), [0, 1, 2])
        >>> s.tolist(), e.tolist(), ptr
        ([0.0, 1.5], [1.0, 2.5], None)
    """
    off = np.asarray(offsets, dtype=np.int64)
    start, end, ptr = _list_schedule(
        np.ascontiguousarray(pred[:, 0], dtype=np.int64),
        np.ascontiguousarray(pred[:, 1], dtype=np.int64),
        np.ascontiguousarray(delay[:, 0], dtype=float),
        np.ascontiguousarray(delay[:, 1], dtype=float),
        np.asarray(duration, dtype=float),
        np.asarray(fused, dtype=np.bool_),
        np.asarray(idle_before, dtype=np.int64),
        off,
        float(idle_tick),
    )
    if (ptr < off[1:]).any():
        done = end >= 0
        return start, np.where(done, end, 0.0), ptr.tolist(), done.tolist()
    return start, end, None, None


@njit(cache=True, nogil=True)
def _contention_p2p(
    p0, p1, cross0, cross1, dur, fused, offsets, device, out_start, e_i, e_k, e_time, res_ptr, res_idx, n_res
):  # pragma: no cover - compiled
    # One loop, helpers written inline (a call per op, with its array reference counting, cost
    # more than the work). Order of work as in the reference: advance devices 0..p-1, then per
    # popped op end its edges in order, each edge followed at once by its consumer's advance.
    n = p0.shape[0]
    p = offsets.shape[0] - 1
    ne = e_i.shape[0]
    start = np.zeros(n)
    end = np.full(n, -1.0)
    arr0 = np.full(n, -1.0)
    arr1 = np.full(n, -1.0)
    ptr = offsets[:-1].copy()
    free = np.zeros(p)
    res_free = np.zeros(n_res)
    e_start = np.zeros(ne)
    e_end = np.zeros(ne)
    # binary heap ordered by (time, sequence number), as heapq orders the reference's tuples
    ht = np.empty(max(n, 1))
    hs = np.empty(max(n, 1), np.int64)
    hk = np.empty(max(n, 1), np.int64)
    hsize = 0
    seq = 0
    d_init = 0
    e = 0
    e_stop = 0
    t_ev = 0.0
    while True:
        adv = -1
        if d_init < p:
            adv = d_init
            d_init += 1
        elif e < e_stop:
            # reserve every resource of the edge: FIFO, requests arrive in time order
            st = t_ev
            for r in res_idx[res_ptr[e] : res_ptr[e + 1]]:
                if res_free[r] > st:
                    st = res_free[r]
            en = st + e_time[e]
            for r in res_idx[res_ptr[e] : res_ptr[e + 1]]:
                res_free[r] = en
            i = e_i[e]
            if e_k[e] == 0:
                arr0[i] = en
            else:
                arr1[i] = en
            e_start[e] = st
            e_end[e] = en
            e += 1
            if ptr[device[i]] <= i:
                adv = device[i]
        elif hsize > 0:
            # pop the earliest op end
            t_ev, q = ht[0], hk[0]
            hsize -= 1
            lt, ls, lk = ht[hsize], hs[hsize], hk[hsize]
            c = 0
            while True:
                a = 2 * c + 1
                if a >= hsize:
                    break
                b = a + 1
                if b < hsize and (ht[b] < ht[a] or (ht[b] == ht[a] and hs[b] < hs[a])):
                    a = b
                if lt < ht[a] or (lt == ht[a] and ls < hs[a]):
                    break
                ht[c], hs[c], hk[c] = ht[a], hs[a], hk[a]
                c = a
            ht[c], hs[c], hk[c] = lt, ls, lk
            e, e_stop = out_start[q], out_start[q + 1]
            continue
        else:
            break
        if adv < 0:
            continue
        # advance device adv as far as its inputs are known
        d = adv
        i = ptr[d]
        stop = offsets[d + 1]
        t_dev = free[d]
        blocked = False
        while i < stop:
            j = i
            while j < stop - 1 and fused[j]:
                j += 1
            t = t_dev
            for k in range(i, j + 1):
                for side in range(2):
                    q = p0[k] if side == 0 else p1[k]
                    if q >= 0 and not (i <= q and q <= j):
                        if side == 0:
                            a_t = arr0[k] if cross0[k] else end[q]
                        else:
                            a_t = arr1[k] if cross1[k] else end[q]
                        if a_t < 0:
                            blocked = True
                            break
                        if a_t > t:
                            t = a_t
                if blocked:
                    break
            if blocked:
                break
            t_end = t + dur[i]
            for k in range(i, j + 1):
                start[k] = t
                end[k] = t_end
                # heap push (t_end, seq, k)
                c = hsize
                while c > 0:
                    par = (c - 1) >> 1
                    if ht[par] < t_end or (ht[par] == t_end and hs[par] < seq):
                        break
                    ht[c], hs[c], hk[c] = ht[par], hs[par], hk[par]
                    c = par
                ht[c], hs[c], hk[c] = t_end, seq, k
                hsize += 1
                seq += 1
            t_dev = t_end
            i = j + 1
        ptr[d] = i
        free[d] = t_dev
    return start, end, ptr, e_start, e_end


def contention_compiled(
    schedule: Schedule, costs: CostModel, comm: CommModel, prep: Any, sync: str, dp_allreduce: int
) -> Timeline | None:
    """The ``contention`` engine's timeline computed by the compiled kernel, or ``None`` when the
    step has collectives (replica or data-parallel all-reduces), which only the reference engine
    (:func:`ppverify.engines.contention.simulate_contention`) times.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.comm import FixedDelay
        >>> from ppverify.engines.simulate import prepare
        >>> s = build("gpipe", p=2, m=2)
        >>> c = CostModel.abstract(s.placement)
        >>> # device 1 runs F0 [2,3] F1 [3,4] B0 [4,6] B1 [6,8]; gradients arrive at 7 and 9
        >>> contention_compiled(s, c, FixedDelay(1.0), prepare(s, c, FixedDelay(1.0)), "eager", 0).makespan
        11.0
    """
    from .core import _waits
    from .simulate import ACTIVATION, GRADIENT, collectives, device_ends, finish, resources_of

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
        raise DeadlockError(_waits(dag, ptr.tolist(), (end >= 0).tolist()))  # type: ignore[arg-type]
    kinds = list(map([ACTIVATION, GRADIENT].__getitem__, e_k.tolist()))
    tr = Transfers(
        kinds,
        src.tolist(),
        dst.tolist(),
        e_q.tolist(),
        e_i.tolist(),
        e_start.tolist(),
        e_end.tolist(),
        prep.edge_bytes[order].tolist(),
    )
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
        {"sync": sync, "dp_allreduce": dp_allreduce, "resources": len(res_id), "transfers": len(e_i)},
    )


def warm() -> None:
    """Compile every kernel once (or load it from numba's cache) on a tiny schedule, so that the
    first large run does not pay it; ``make test`` runs this after installing
    (``python -m ppverify.engines.kernels``).

    Example:
        >>> warm()
    """
    from ..comm import FixedDelay
    from ..schedules import build
    from .simulate import prepare
    from .torch_steps import lowered
    from .torch_steps_kernel import simulate_steps_compiled, torch_timeline_compiled

    s = build("1f1b", p=2, m=2)
    costs = CostModel.unit(s.placement)
    prep = prepare(s, costs, FixedDelay(1.0))
    d = np.zeros((prep.dag.num_ops, 2))
    list_schedule_arrays(prep.dag.pred, d, prep.duration, prep.dag.fused, prep.dag.idle_before, prep.dag.offsets)
    contention_compiled(s, costs, FixedDelay(1.0), prep, "none", 0)
    simulate_steps_compiled(lowered(s))
    torch_timeline_compiled(s, None)


if __name__ == "__main__":
    warm()
