"""Memory slots on devices holding several stages of one pipe (V, loop): a precedence between the
last stage's forward of one microbatch and the first stage's forward of a later one, posted in the
one-device relaxation (:mod:`.relax`).

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
periodic start (:mod:`.periodic`), where the memory-time bound gave 220.
"""

from __future__ import annotations

from ..core.ops import F
from .problem import Instance


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
