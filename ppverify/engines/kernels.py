"""Compiled (numba) kernels of the ``async`` and ``contention`` engines over flat numpy arrays.

Each kernel is the pure-Python engine's loop written again on arrays, statement for statement
in the order that fixes floating-point results (same additions, same maxima), so that its
starts and ends equal the reference engine's exactly: :mod:`ppverify.core.program_order`
(list scheduling) and :mod:`ppverify.engines.contention` (FIFO link queues, whose
``contention_compiled`` feeds the kernel here). The engines call
these only above :data:`ppverify.core.compiled.COMPILED_MIN_OPS` ops; numba's cache writes
the machine code next to this module (or in numba's user cache) on first use, so later processes
load it instead of compiling (:mod:`ppverify.engines.warm` does it once after installing); where
neither folder can be written, each process compiles its own
(:func:`~ppverify.core.compiled.compiled_kernel`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.compiled import compiled_kernel
from ..core.ops import KIND_CODE, B, F, I, W


@compiled_kernel(nogil=True)
def _list_schedule(pred, delay, duration, fused, idle_before, offsets, idle_tick):  # pragma: no cover - compiled
    n = pred.shape[0]
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
                q = pred[i, 0]
                if q >= 0:
                    tq = end[q]
                    if tq < 0:
                        blocked = q
                        break
                    tq += delay[i, 0]
                    if tq > t:
                        t = tq
                q = pred[i, 1]
                if q >= 0:
                    tq = end[q]
                    if tq < 0:
                        blocked = q
                        break
                    tq += delay[i, 1]
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
                    q = pred[k, side]
                    dl = delay[k, side]
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
    """Compiled :func:`ppverify.core.program_order.list_schedule_flat` on arrays: ``pred`` and
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
        np.ascontiguousarray(pred, dtype=np.int64),  # (n, 2) as they are: no column copies
        np.ascontiguousarray(delay, dtype=float),
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


@compiled_kernel(nogil=True)
def _dag_links(kc, st, mbs, dev, S, m, kf, kb, ki, kw):  # pragma: no cover - compiled
    # the rules of ppverify.core.dag.build_dag_arrays, op by op (ops known complete: every id once)
    n = kc.shape[0]
    pos = np.full(4 * S * m, -1, np.int64)
    for i in range(n):
        pos[(kc[i] * S + st[i]) * m + mbs[i]] = i
    pred = np.full((n, 2), -1, np.int64)
    cross = np.zeros((n, 2), np.bool_)
    for i in range(n):
        k, s, b = kc[i], st[i], mbs[i]
        q0 = -1
        q1 = -1
        if k == kf:
            if s > 0:
                q0 = pos[(kf * S + s - 1) * m + b]
        elif k == kb or k == ki:  # noqa: SIM109 (plain comparisons compile simplest)
            q0 = pos[(kf * S + s) * m + b]
            if s < S - 1:
                q1 = pos[(kb * S + s + 1) * m + b]
                if q1 < 0:
                    q1 = pos[(ki * S + s + 1) * m + b]
        elif k == kw:
            q0 = pos[(ki * S + s) * m + b]
        pred[i, 0] = q0
        pred[i, 1] = q1
        cross[i, 0] = q0 >= 0 and dev[q0] != dev[i]
        cross[i, 1] = q1 >= 0 and dev[q1] != dev[i]
    return pred, cross


def dag_links(
    kc: np.ndarray, st: np.ndarray, mbs: np.ndarray, dev: np.ndarray, S: int, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """Compiled predecessors and cross-device flags of :func:`ppverify.core.dag.build_dag_arrays`
    (its ``links``) for the op columns of a complete step: the same ``(pred, cross)`` arrays.

    Example:
        >>> kc, st, mb = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1]), np.zeros(4, np.int64)
        >>> pred, cross = dag_links(kc, st, mb, np.array([0, 0, 1, 1]), 2, 1)
        >>> pred.tolist(), cross[:, 1].tolist()
        ([[-1, -1], [0, 3], [0, -1], [2, -1]], [False, True, False, False])
    """
    return _dag_links(
        np.asarray(kc, dtype=np.int64),
        np.asarray(st, dtype=np.int64),
        np.asarray(mbs, dtype=np.int64),
        np.asarray(dev, dtype=np.int64),
        int(S),
        int(m),
        KIND_CODE[F],
        KIND_CODE[B],
        KIND_CODE[I],
        KIND_CODE[W],
    )


@compiled_kernel(nogil=True)
def _exposed_waits(pred, start, end, offsets):  # pragma: no cover - compiled
    # per device, in position order: how much later each op starts than its device and its
    # producers' ends allow (the numpy reference's maxima, clip and position-order sums)
    p = offsets.shape[0] - 1
    out = np.zeros(p)
    for d in range(p):
        prev = 0.0
        acc = 0.0
        for i in range(offsets[d], offsets[d + 1]):
            r = prev
            q = pred[i, 0]
            if q >= 0 and end[q] > r:
                r = end[q]
            q = pred[i, 1]
            if q >= 0 and end[q] > r:
                r = end[q]
            w = start[i] - r
            if w < 0.0:
                w = 0.0
            acc += w
            prev = end[i]
        out[d] = acc
    return out


def exposed_waits(pred: np.ndarray, start: np.ndarray, end: np.ndarray, offsets: Any) -> np.ndarray:
    """Compiled :func:`ppverify.engines.simulate.exposed_comm` (ops grouped by device in
    ``offsets`` order, ``pred`` of shape ``(n, 2)``): the same sums, exactly.

    Example:
        >>> exposed_waits(np.array([[-1, -1], [0, 3], [0, -1], [2, -1]]), np.array([0, 5, 1.5, 2.5]),
        ...               np.array([1, 6, 2.5, 4.5]), [0, 2, 4]).tolist()
        [0.5, 0.5]
    """
    return _exposed_waits(
        np.ascontiguousarray(pred, dtype=np.int64),
        np.asarray(start, dtype=float),
        np.asarray(end, dtype=float),
        np.asarray(offsets, dtype=np.int64),
    )


@compiled_kernel(nogil=True)
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
