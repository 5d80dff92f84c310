"""Energetic reasoning on a device's memory: a lower bound on its span from the memory-time its
activations must hold.

Each forward ``f`` on device ``d`` allocates its activation at its start; the part that its
gradient op ``g`` frees stays held until ``g`` ends, the rest until ``W`` (or ``B``) ends. Those
ops follow ``f`` by at least the longest dependency path between them (the microbatch's round trip
through the later devices, transfer delays included), so each part is held for at least that
path plus the freeing op's duration. The sum over all forwards, ``E``, is memory-time (units x
ticks) that must fit inside the device's span ``[S, S + D)``, where memory never exceeds the cap.

It fits in less than ``cap x D``: in the first ticks of the span only the forwards started so far
hold memory (at most one forward starts per shortest forward duration), and in the last ticks only
what the ops still to end can free (at most one freeing op ends per shortest such duration, each
freeing at most the largest amount). The available memory-time is therefore
``sum over ticks x < D of min(cap, ramp_up(x), ramp_down(D - x))``, and the span is at least the
least ``D`` whose available memory-time reaches ``E``. With a binding cap this is the throughput
limit of a device that can keep only ``cap / M_F`` microbatches in flight for a whole round trip.

Microbatches of one pipe have the same shape, so paths are computed once per pipe and stage.
"""

from __future__ import annotations

from ..core.ops import B, F, I, Op, W
from .deadline import Deadline
from .problem import Instance
from .window import _dist_from


def available(cap: int, up_step: int, up_amount: int, down_step: int, down_amount: int, span: int) -> int:
    """Memory-time available in a span of ``span`` ticks: ``sum_x min(cap, up_amount * (x //
    up_step + 1), down_amount * ((span - x - 1) // down_step + 1))``, summed in constant pieces.

    Example:
        >>> available(4, 1, 1, 1, 2, 5)  # up 1,2,3,4,4; down 10,8,6,4,2 -> 1+2+3+4+2
        12
        >>> available(4, 0, 1, 1, 2, 5)  # zero-length forwards: up is the cap -> 4+4+4+4+2
        18
    """
    # a step of 0 (zero-length ops): any number start or end at once, so that ramp is no limit
    if up_step == 0:
        up_step, up_amount = 1, cap
    if down_step == 0:
        down_step, down_amount = 1, cap
    cuts = {0, span}
    k = 1
    while k * up_step < span and up_amount * k < cap:
        cuts.add(k * up_step)
        k += 1
    k = 1
    while span - k * down_step > 0 and down_amount * k < cap:
        cuts.add(span - k * down_step)
        k += 1
    pts = sorted(c for c in cuts if 0 <= c <= span)
    total = 0
    for a, b in zip(pts, pts[1:]):
        up = up_amount * (a // up_step + 1)
        down = down_amount * ((span - a - 1) // down_step + 1)
        total += (b - a) * min(cap, up, down)
    return total


def memory_energy_spans(inst: Instance, deadline: Deadline | None = None) -> list[int]:
    """Per device, the least span (ticks) that holds its activations' memory-time under the cap
    (module doc); 0 without a cap.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)   # F=B=1: device 0 holds each activation >= 3 ticks (F0 F1 B1 then B0)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, B=1), split=False, memory_cap=1))
        >>> memory_energy_spans(inst)[0]  # 4 activations x 4 ticks (to the end of B0) in a cap of 1
        16
    """
    if inst.cap is None:
        return [0] * inst.p
    dag = inst.dag
    pipes = dag.schedule.pipe_of_mb
    pos = {op: i for i, op in enumerate(dag.ops)}
    members_of = inst.mb_members
    out = []
    for d in range(inst.p):
        if deadline is not None:
            deadline.check()  # a :class:`.deadline.Deadline`
        ops = list(inst.device_ops(d))
        fwd = [i for i in ops if dag.ops[i].kind == F]
        frees = [i for i in ops if inst.free[i] > 0]
        if not fwd or not frees:
            out.append(0)
            continue
        energy = 0
        shape: dict[tuple[int, int], int] = {}
        for f in fwd:
            op = dag.ops[f]
            key = (pipes[op.mb], op.stage)
            if key not in shape:
                dist = _dist_from(inst, f, members_of[op.mb])
                e = 0
                for kind in (I, W, B):
                    j = pos.get(Op(kind, op.stage, op.mb))
                    if j is not None and inst.free[j] > 0:
                        e += inst.free[j] * (dist[j] + inst.dur[j])
                shape[key] = e
            energy += shape[key]
        up_step = min(inst.dur[i] for i in fwd)
        up_amount = max(inst.alloc[i] for i in fwd)
        down_step = min(inst.dur[i] for i in frees)
        down_amount = max(inst.free[i] for i in frees)
        # a device never holds more than all its forwards allocate: a larger cap reads as that
        # (still an upper bound on what it holds, and the ramps' work no longer grows with the cap)
        cap = min(inst.cap, sum(inst.alloc[i] for i in fwd))
        lo = -(-energy // cap)
        hi = lo + up_step * (-(-cap // up_amount)) + down_step * (-(-cap // down_amount)) + 1
        while available(cap, up_step, up_amount, down_step, down_amount, hi) < energy:
            hi *= 2  # pragma: no cover - the ramps never lose more than the bound above
        while lo < hi:
            mid = (lo + hi) // 2
            if available(cap, up_step, up_amount, down_step, down_amount, mid) >= energy:
                hi = mid
            else:
                lo = mid + 1
        out.append(lo)
    return out
