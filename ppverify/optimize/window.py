"""The memory-window bound for devices holding several stages (loop, V and two-pipe placements).

On a device ``d`` let ``S`` be the start of its first op. A gradient op ``g`` (I or B) of
microbatch ``mb`` on ``d`` cannot start before ``S + L(g)``, where ``L(g)`` is the longest
dependency path (durations and transfer delays) from the start of a forward of ``mb`` on ``d``
to the start of ``g``: that forward starts at ``S`` at the earliest. So no gradient op, and no W
(each W follows its I), starts on ``d`` before ``S + L`` with ``L = min_g L(g)``, and no memory is
freed there before that time. Until then the device runs forwards only, each holding its
activation: their total allocation is at most the cap, so their total duration is at most
``Fmax``, the fractional knapsack of the device's forwards (duration per allocated unit, largest
first) under the cap, an upper bound on every feasible set. At least ``L - Fmax`` of the window is
idle, and that idle is inside the device's span. (With one stage per device this is the head part
of the window bound of :mod:`.bounds`.)

Microbatches of one pipe have the same shape (costs depend on the stage, delays on the devices),
so ``L`` is computed on the first microbatch of each pipe present on the device.
"""

from __future__ import annotations

import math

from ..core.ops import B, F, I
from .problem import Instance


def _dist_from(inst: Instance, src: int, members: list[int]) -> dict[int, int]:
    """Longest start-to-start path from op ``src`` to the ops of its microbatch (``members`` in
    topological order)."""
    dag = inst.dag
    dist = {src: 0}
    for i in members:
        for k, q in enumerate(dag.pred[i]):
            if q in dist:
                val = dist[q] + inst.dur[q] + inst.delay[i][k]
                if val > dist.get(i, -1):
                    dist[i] = val
    return dist


def forward_capacity(inst: Instance, ops: list[int]) -> int:
    """Most forward work (ticks) the device can hold at once under the cap: the fractional
    knapsack of its forwards, rounded down (all of them without a cap).

    Example:
        >>> from ppverify.core.placement import loop
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = loop(2, 2)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=2, I=2, W=2), split=True, memory_cap=1))
        >>> forward_capacity(inst, list(inst.device_ops(0)))  # cap 1 = 2 chunk activations of 1 tick each
        2
    """
    fwd = [i for i in ops if inst.dag.ops[i].kind == F]
    if inst.cap is None:
        return sum(inst.dur[i] for i in fwd)
    room, work = inst.cap, 0.0
    for i in sorted(fwd, key=lambda i: -inst.dur[i] / max(inst.alloc[i], 1e-12)):
        if inst.alloc[i] <= room:
            room -= inst.alloc[i]
            work += inst.dur[i]
        else:
            work += inst.dur[i] * room / inst.alloc[i]
            break
    return int(work)


def multi_stage_head_idle(inst: Instance, d: int) -> int:
    """Idle forced into device ``d``'s span before its first gradient op (module doc).

    Example:
        >>> from ppverify.core.placement import loop
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = loop(2, 2)   # stages 0,2 on device 0, 1,3 on device 1; F=I=W=1 tick
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=2, I=2, W=2), split=True, memory_cap=1))
        >>> multi_stage_head_idle(inst, 0)  # first I: I(2) after F0 F1 F2 F3 I3 = 5 ticks; 2 forwards fit
        3
    """
    dag = inst.dag
    ops = list(inst.device_ops(d))
    if not ops:
        return 0
    pipes = dag.schedule.pipe_of_mb
    first_mb: dict[int, int] = {}
    for i in ops:
        mb = dag.ops[i].mb
        pp = pipes[mb]
        if pp not in first_mb or mb < first_mb[pp]:
            first_mb[pp] = mb
    lag = None
    for mb in first_mb.values():
        members = inst.mb_members[mb]
        mine = [i for i in ops if dag.ops[i].mb == mb]
        grads = [i for i in mine if dag.ops[i].kind in (I, B)]
        longest = {g: 0 for g in grads}
        for f in (i for i in mine if dag.ops[i].kind == F):
            dist = _dist_from(inst, f, members)
            for g in grads:
                if g in dist:
                    longest[g] = max(longest[g], dist[g])
        for g in grads:
            lag = longest[g] if lag is None else min(lag, longest[g])
    if lag is None:
        return 0
    return max(0, lag - forward_capacity(inst, ops))


def _pending_rate(inst: Instance, d: int) -> tuple[list[int], dict[int, int], float] | None:
    """Device ``d``'s ops, the last microbatch of each pipe there, and the most gradient/W work
    per held memory unit of what may be pending beside the last forward: (stage, mb) pairs with
    their gradient op still to run (all of the activation held) or only their W (the W part
    held). None where no cap applies or where such work holds no memory (then the cap limits
    nothing: the callers' bounds are 0)."""
    dag = inst.dag
    ops = list(inst.device_ops(d))
    if not ops or inst.cap is None:
        return None
    pipes = dag.schedule.pipe_of_mb
    pos = {dag.ops[i]: i for i in ops}
    last_mb: dict[int, int] = {}
    for i in ops:
        mb = dag.ops[i].mb
        last_mb[pipes[mb]] = max(last_mb.get(pipes[mb], -1), mb)
    items: list[tuple[int, int]] = []  # (work, held units)
    for i in ops:
        op = dag.ops[i]
        if op.kind != F:
            continue
        g = pos.get(type(op)(I, op.stage, op.mb), pos.get(type(op)(B, op.stage, op.mb)))
        w = pos.get(type(op)("W", op.stage, op.mb))
        if g is None:
            continue
        items.append((inst.dur[g] + (inst.dur[w] if w is not None else 0), inst.alloc[i]))
        if w is not None:
            items.append((inst.dur[w], inst.free[w]))
    if any(weight == 0 and work > 0 for work, weight in items):
        return None
    return ops, last_mb, max((work / weight for work, weight in items if weight > 0), default=0.0)


def multi_stage_tail_idle(inst: Instance, d: int) -> int:
    """Idle forced into device ``d``'s span after its last forward starts (module doc, tail part).

    The last forward ``f`` of the device belongs to the last microbatch of some pipe (symmetry
    order). Its microbatch's gradient ops on ``d`` start at least ``L(f)`` after it (the shortest
    path to any of them). In between the device runs ``f`` and only the gradient and W work of
    other microbatches, all of which holds memory when ``f`` starts: at most the fractional
    knapsack (work per held unit) of what the cap leaves beside ``f`` and the other forwards of
    its microbatch. The least idle over the candidates for ``f`` is forced.

    Example:
        >>> from ppverify.core.placement import loop
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = loop(2, 2)   # F=B=1 tick; device 0 holds stages 0 and 2; cap: two chunk activations
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=2, B=2), split=False, memory_cap=1))
        >>> multi_stage_tail_idle(inst, 0)  # f = F(2): B(2) after F3 B3 = 3; F(0) and F(2) fill the cap
        2
    """
    dag = inst.dag
    found = _pending_rate(inst, d)
    if found is None:
        return 0
    ops, last_mb, best_ratio = found
    assert inst.cap is not None  # _pending_rate is None without a cap
    idle = None
    for mb in last_mb.values():
        members = inst.mb_members[mb]
        mine = [i for i in ops if dag.ops[i].mb == mb]
        fwds = [i for i in mine if dag.ops[i].kind == F]
        grads = [i for i in mine if dag.ops[i].kind in (I, B)]
        held = sum(inst.alloc[i] for i in fwds)
        room = max(0, inst.cap - held)
        pending = best_ratio * room  # every unit left holds at most the best work per unit
        for f in fwds:
            dist = _dist_from(inst, f, members)
            lag = min((dist.get(g, 0)) for g in grads) if grads else 0
            here = max(0, int(lag - inst.dur[f] - pending))
            idle = here if idle is None else min(idle, here)
    return idle or 0


def multi_stage_end_gap(inst: Instance, d: int, tail: list[int]) -> int:
    """Least time in which device ``d`` runs nothing between its last forward's start and the end
    of the step (makespan), from the forward's tail (``tail``: :func:`~.bounds.heads_tails`).

    Proof. Let ``f`` (start ``t``) be the last forward on ``d``; by the symmetry order it belongs
    to the last microbatch of its pipe, and every other forward of that microbatch on ``d`` has
    run. The step ends at ``T >= t + dur(f) + tail(f)``. What ``d`` runs in ``[t, T)`` is ``f``,
    the gradient and W ops of ``f``'s microbatch on ``d`` (``own``), and gradient or W ops of
    earlier microbatches; these hold memory at ``t`` (an activation is freed only by its own
    gradient or W ops), at most the cap less what ``f``'s microbatch holds, so they are at most
    ``pending``, the best work per held unit times that room (as in
    :func:`multi_stage_tail_idle`). So at least ``tail(f) - own - pending`` of ``[t, T)`` is not
    busy on ``d``; the least over the candidates for ``f`` holds. Unlike
    :func:`multi_stage_tail_idle` (idle before ``f``'s microbatch's first gradient op on ``d``)
    this counts the whole way to the end of the step, the tail after ``d``'s last op included.

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import heads_tails
        >>> pl = v_shape(2)  # device 1: stages 1 and 2, 1 tick per op, transfers of 2 ticks
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(1), split=True, memory_cap=2))
        >>> multi_stage_end_gap(inst, 1, heads_tails(inst)[1])  # f = F(2): tail 12, own 4, pending 2 * 2
        4
    """
    dag = inst.dag
    found = _pending_rate(inst, d)
    if found is None:
        return 0
    ops, last_mb, best_ratio = found
    assert inst.cap is not None  # _pending_rate is None without a cap
    gap = None
    for mb in last_mb.values():
        mine = [i for i in ops if dag.ops[i].mb == mb]
        fwds = [i for i in mine if dag.ops[i].kind == F]
        own = sum(inst.dur[i] for i in mine if dag.ops[i].kind != F)
        room = max(0, inst.cap - sum(inst.alloc[i] for i in fwds))
        pending = best_ratio * room
        for f in fwds:
            here = max(0, math.ceil(tail[f] - own - pending - 1e-9))
            gap = here if gap is None else min(gap, here)
    return gap or 0
