"""Memory slots on devices holding several stages of one pipe (V, loop): a precedence between the
last stage's forward of one microbatch and the first stage's forward of a later one, posted in the
one-device relaxation (:mod:`.relax`), and the slot-cycle bound (:func:`slot_cycle_bound`), an
analytic floor reported with the memory cycle of :mod:`.cycle`.

On such a device ``d`` let ``s1`` be the first stage a microbatch reaches and ``sn`` the last,
``a1`` the activation of ``F(s1)`` and ``A`` a microbatch's activations on the device. By the
symmetry order (:mod:`.model`: some optimal schedule runs the microbatches of every kind and stage
in order) the forwards of each stage run in microbatch order. When ``F(sn, j)`` starts, microbatch
``j`` holds all of ``A`` (its forwards on ``d`` have all started; every gradient op of ``j`` on
``d`` follows ``F(sn, j)``, so nothing of it is freed yet). A later microbatch ``i > j`` whose
``F(s1, i)`` has started holds at least ``a1``, and none of it is freed before ``F(sn, i)``,
which starts after ``F(sn, j)``. So at most ``k = floor((cap - A) / a1)`` of them can have
started: ``F(s1, j+k+1)`` starts only after ``F(sn, j)`` has run.

With the cap of one microbatch (``k = 0``) this is what makes a device's memory a chain of
cycles: on V with unit costs at p = 8, m = 24, device 7 (stages 7 and 8) runs ``F(7, j+1)`` after
``F(8, j)`` and before ``F(8, j+1)`` it must run ``I(8, j)``, ``I(7, j)``, both ``W``'s and
``F(7, j+1)``, after ``I(8, j)``'s input has come back (15 ticks after ``F(8, j)``): one
microbatch per 10 at best. The relaxation of device 7 proves 246.5 with it, the step of the
periodic start (:mod:`.periodic`), where the memory-time bound gave 220; the slot cycle gives the
same 246.5 in closed form, and with costs in milliseconds, where the relaxation proves little
within a few deterministic seconds, it is what proves such points optimal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

from ..core.ops import B, F, I, W
from .problem import Instance
from .window import _dist_from


def _pair(inst: Instance, d: int) -> tuple[list[int], list[int], int, int] | None:
    """``(first-stage forwards, last-stage forwards, a1, A)`` of device ``d`` (forwards in
    microbatch order; ``a1`` the first stage's activation, ``A`` one microbatch's on the device);
    None where the argument does not apply (one stage, several pipes, no cap, or a cap holding
    every activation)."""
    dag, cap = inst.dag, inst.cap
    ops = list(inst.device_ops(d))
    pipes = dag.schedule.pipe_of_mb
    if cap is None or not ops or len({pipes[dag.ops[i].mb] for i in ops}) != 1:
        return None
    fwd = [i for i in ops if dag.ops[i].kind == F]
    stages = sorted({dag.ops[i].stage for i in fwd})
    if len(stages) < 2:
        return None
    first = sorted((i for i in fwd if dag.ops[i].stage == stages[0]), key=lambda i: dag.ops[i].mb)
    last = sorted((i for i in fwd if dag.ops[i].stage == stages[-1]), key=lambda i: dag.ops[i].mb)
    mb0 = dag.ops[first[0]].mb
    a1 = inst.alloc[first[0]]
    whole = sum(inst.alloc[i] for i in fwd if dag.ops[i].mb == mb0)
    if a1 <= 0 or cap >= len(first) * whole:
        return None
    return first, last, a1, whole


def slot_precedences(inst: Instance, d: int) -> list[tuple[int, int, int]]:
    """``(u, v, lag)``: ``start(v) >= start(u) + lag``, from the memory at ``F(sn, j)``'s start
    on a device holding several stages (module doc): besides microbatch ``j``'s own ``A``, at most
    ``k = floor((cap - A) / a1)`` first-stage activations fit, and every later microbatch whose
    ``F(s1)`` has started holds one (none of it can be freed before its own ``F(sn)``, later than
    ``j``'s by the order). So ``F(s1, j+k+1)`` starts after ``F(sn, j)`` has run.

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(2)  # device 0: stages 0 and 3; cap: one microbatch (k = 0)
        >>> inst = instance(Problem(pl, 3, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1))
        >>> [(str(inst.dag.ops[u]), str(inst.dag.ops[v]), lag) for u, v, lag in slot_precedences(inst, 0)]
        [('3F0', '0F1', 1), ('3F1', '0F2', 1)]
    """
    pair = _pair(inst, d)
    if pair is None:
        return []
    first, last, a1, whole = pair
    k = (inst.cap - whole) // a1  # type: ignore[operator]
    if k < 0:
        return []
    return [(last[j], first[j + k + 1], inst.dur[last[j]]) for j in range(len(first) - k - 1)]


def _free_items(inst: Instance, ops: list[int]) -> list[tuple[int, int]]:
    """``(amount, work)`` per gradient or W op of one microbatch on one device that frees memory:
    what it frees and the least work that frees it (a W whose I frees nothing carries that I's
    work too: it cannot run without it)."""
    dag = inst.dag
    grads = {(dag.ops[i].kind, dag.ops[i].stage): i for i in ops if dag.ops[i].kind != F}
    items = []
    for (kind, stage), i in grads.items():
        if inst.free[i] <= 0:
            continue
        work = inst.dur[i]
        g = grads.get((I, stage))
        if kind == W and g is not None and inst.free[g] <= 0:
            work += inst.dur[g]
        items.append((inst.free[i], work))
    return items


def least_work_to_free(items: list[tuple[int, int]], copies: int, need: int) -> int:
    """Least total work of a choice of ``items`` (each at most ``copies`` times) freeing at
    least ``need``: exact over the counts where they are few, the fractional knapsack (rounded
    down, still a lower bound) beyond.

    Example:
        >>> least_work_to_free([(2, 5), (2, 3)], 2, 4)  # the cheaper item twice
        6
        >>> least_work_to_free([(2, 5), (2, 3)], 1, 4)  # one of each
        8
    """
    ranges = [range(min(copies, -(-need // a)) + 1) for a, _ in items]
    if math.prod(len(r) for r in ranges) <= 20000:
        costs = [
            sum(n * w for n, (_, w) in zip(counts, items))
            for counts in product(*ranges)
            if sum(n * a for n, (a, _) in zip(counts, items)) >= need
        ]
        return min(costs)  # every item ``copies`` times frees a microbatch's worth: never empty
    left, total = float(need), 0.0
    for a, w in sorted(items, key=lambda it: it[1] / it[0]):
        take = min(left, copies * a)
        total, left = total + take * w / a, left - take
    return math.floor(total)


@dataclass(frozen=True)
class _Cycle:
    """What :func:`slot_cycle_bound` and :func:`slot_cycle_lags` share on one device: forwards
    of the first and last stage in microbatch order, the ops per microbatch, the last stage
    ``sn`` and its gradient op ``G(sn)`` of the first microbatch, one microbatch's forward work,
    ``k``, ``R`` and the least time between the ends of ``F(sn)`` ``k + 1`` apart."""

    first: list[int]
    last: list[int]
    by_mb: dict[int, list[int]]
    sn: int
    gn: int
    fwd: int
    k: int
    rt: int
    cycle: int


def _gradient(inst: Instance, ops: list[int], sn: int) -> int | None:
    """G(sn) among ``ops``: the I or B of stage ``sn``."""
    return next((i for i in ops if inst.dag.ops[i].stage == sn and inst.dag.ops[i].kind in (I, B)), None)


def _slot_cycle(inst: Instance, d: int) -> _Cycle | None:
    """See :func:`slot_cycle_bound` (None where it does not apply)."""
    pair = _pair(inst, d)
    if pair is None:
        return None
    first, last, a1, whole = pair
    dag, cap = inst.dag, inst.cap
    assert cap is not None  # _pair gives None without a cap
    k, r = divmod(cap - whole, whole)
    if cap < whole or k + 1 >= len(first):
        return None
    by_mb: dict[int, list[int]] = {}
    for i in inst.device_ops(d):
        by_mb.setdefault(dag.ops[i].mb, []).append(i)
    mb0 = dag.ops[first[0]].mb
    items = _free_items(inst, by_mb[mb0])
    if not items or sum(a for a, _ in items) < whole - r:
        return None
    sn, fn = dag.ops[last[0]].stage, last[0]
    gn = _gradient(inst, by_mb[mb0], sn)
    if gn is None:
        return None
    rt = _dist_from(inst, fn, inst.mb_members[mb0])[gn] - inst.dur[fn]  # F(sn)'s end to G(sn)'s start
    fwd = sum(inst.dur[i] for i in by_mb[mb0] if dag.ops[i].kind == F)
    cycle = rt + (fwd if a1 > r else inst.dur[fn]) + least_work_to_free(items, k + 1, whole - r)
    return _Cycle(first, last, by_mb, sn, gn, fwd, k, rt, cycle)


def slot_cycle_bound(inst: Instance, d: int, head: list[int], tail: list[int], objective: str) -> int:
    """The **slot-cycle** bound (ticks) of a device holding several stages of one pipe under a
    cap (0 where it does not apply: several pipes, no cap, or room for every microbatch).

    Let ``A`` be one microbatch's activations on the device and the cap ``(k+1)*A + r`` with
    ``0 <= r < A``. Take microbatches in the order their last-stage forwards ``F(sn)`` run; when
    ``F(sn, n)`` starts, ``n`` holds ``A``, so the ``k + 1`` microbatches before it, ``j = n-k-1``
    to ``n-1``, whose ``F(sn)`` have all started (each then held ``A``), hold at most ``kA + r``:
    their gradient and W ops have freed at least ``A - r``. None of those ops starts before ``R``
    (the gradient's way through the rest of the pipe) after ``F(sn, j)`` ends, and when ``n``'s
    first forward ``F(s1, n)`` starts (``a1`` held) they have freed something already as soon as
    ``a1 > r``. So ``n``'s forwards and that freeing work (:func:`least_work_to_free`) run between
    ``F(sn, j)``'s end plus ``R`` and ``F(sn, n)``'s end: the ends of ``F(sn)`` ``k + 1`` apart are
    at least ``R`` plus that work apart. With ``k = 0`` and ``r`` below every amount an op frees,
    that is all of ``j``'s gradient ops: at p = 4, V, unit costs, a cap of one microbatch, device 3
    needs 6 per microbatch. The step is then at least the last ``F(sn)``'s earliest end plus ``R``
    and the way back (the longest path from ``G(sn)``, or the gradient work of the last ``q``
    microbatches, all of which starts after the ``q``-th last ``F(sn)`` plus ``R``). For the span,
    the same from the device's first op. No order of microbatches is assumed.

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import heads_tails
        >>> pl = v_shape(4)  # device 3: F(4) ends at 2; R = 3; cycles of 3 + 3; back: 3 + 0.5 + 3
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1))
        >>> slot_cycle_bound(inst, 3, *heads_tails(inst), "makespan") * inst.tick  # 2 + 11 * 6 + 6.5
        74.5
    """
    c = _slot_cycle(inst, d)
    if c is None:
        return 0
    dag, first, last, by_mb, k, rt, cycle = inst.dag, c.first, c.last, c.by_mb, c.k, c.rt, c.cycle
    m, fn, gn, fwd, mb0 = len(first), last[0], c.gn, c.fwd, dag.ops[first[0]].mb
    grads = [i for i in by_mb[mb0] if dag.ops[i].kind != F]
    grad_work = sum(inst.dur[i] for i in grads)
    if objective == "makespan":
        # microbatches have one shape, but take the least head and tail over them all: no order
        lead, first_start = min(head[i] for i in last) + inst.dur[fn], min(head[i] for i in first)
        after = min(inst.dur[g] + tail[g] for ops in by_mb.values() if (g := _gradient(inst, ops, c.sn)) is not None)
        last_tail = min(tail[i] for ops in by_mb.values() for i in ops if dag.ops[i].kind != F)
    else:
        lead, first_start = _dist_from(inst, first[0], inst.mb_members[mb0])[fn] + inst.dur[fn], 0
        after_g = _dist_from(inst, gn, inst.mb_members[mb0])
        after, last_tail = max(after_g[i] + inst.dur[i] for i in grads if i in after_g), 0
    ends: list[int] = []  # least end of the i-th F(sn), in the order they run
    for i in range(m):
        e = lead if i == 0 else ends[-1] + inst.dur[fn]
        e = max(e, first_start + (i + 1) * fwd)  # every forward of i + 1 microbatches has run
        if i > k:
            e = max(e, ends[i - k - 1] + cycle)
        ends.append(e)
    back = max(ends[m - q] + q * grad_work for q in range(1, k + 2)) + rt + last_tail
    return max(ends[-1] + rt + after, back)


def slot_cycle_lags(inst: Instance, d: int) -> list[tuple[int, int, int]]:
    """``(u, v, lag)``: ``start(v) >= start(u) + lag`` between the last-stage forwards of
    microbatches ``k + 1`` apart, the cycle of :func:`slot_cycle_bound`, for a model whose
    forwards of each stage run in microbatch order (the relaxation of :mod:`.relax`).

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)  # device 3 under a cap of one microbatch: 6 per microbatch
        >>> inst = instance(Problem(pl, 3, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1))
        >>> [(str(inst.dag.ops[u]), str(inst.dag.ops[v]), lag * inst.tick) for u, v, lag in slot_cycle_lags(inst, 3)]
        [('4F0', '4F1', 6.0), ('4F1', '4F2', 6.0)]
    """
    c = _slot_cycle(inst, d)
    if c is None:
        return []
    return [(c.last[j], c.last[j + c.k + 1], c.cycle) for j in range(len(c.last) - c.k - 1)]
