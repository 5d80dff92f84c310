"""The memory-cycle bound for devices holding one stage: a chain of memory cycles and, within each,
the work the device must do before the cap lets the next forward start.

Take a one-stage device with cap ``k*a + r`` (``a`` one activation, ``0 <= r < a``), ``F``,
``G`` (the gradient op, I or B) and ``W`` of durations ``tF``, ``tG``, ``tW``, ``G`` freeing
``fG`` and ``W`` the rest ``fW`` (none without W), ``R`` the least time from the start of a
forward to the start of its gradient op (the microbatch's round trip). By the symmetry order
(:mod:`.model`) some optimal schedule runs the microbatches of every kind in order; in such a
schedule, with ``S`` the start of ``F(0)`` (the device's first op) and ``x_j = start(F(j)) - S``:

* ``x_j >= x_(j-1) + tF`` (forwards in order);
* **cycle**: ``x_j >= x_(j-k) + R + tG + e`` with ``e`` the memory lag of
  :func:`.model.memory_lags` (F(j) waits for the end of G(j-k) and then of W(j-k) or G(j-k+1));
* **count**: before ``F(j)`` starts, ``(j+1)*a - cap`` must have been freed by ``nG`` gradient ops
  and ``nW <= nG`` W's (prefixes, by the order). Every gradient op starts at least ``R`` after
  ``S``, and ``F(k) .. F(j-1)`` wait for a free: all of them run in ``[S + R, S + x_j)``, so
  ``x_j >= R + (j-k)*tF + nG*tG + nW*tW``. Only gradient ops ``G(i)`` with
  ``x_i + R + tG <= x_j`` can have ended, which bounds ``nG``; the least ``x_j`` that satisfies
  this for the cheapest feasible ``(nG, nW)`` is a bound (the condition only gets easier as
  ``x_j`` grows, so the least such value is found by scanning the breakpoints upwards).

The makespan is then at least ``head(F(0)) + x_(m-1) + tF + tail(F(m-1))``; a span at least
``x_(m-1)`` plus the path from ``F(m-1)`` to the end of the device's last op of that microbatch.

With F=I=W=1, transfer delay 1 and cap p activations on a linear placement (zero-bubble memory
model) this gives, on device 0 and m a multiple of p with m >= 2p,
``(7p - 4) + (m/p - 2)(4p - 1) + 4p - 1``: the first forwards back to back, a first cycle whose
``3p - 1`` ops run from the first gradient's arrival ``R = 4p - 3`` on, then one cycle of
``R + 2`` per p microbatches. At m = 2p this is the optimum ``11p - 5``; at m = 4p it is
``19p - 7``, two ticks below the optimum ``19p - 5``: that difference comes from transfers
meeting on the intermediate devices, which no one-device argument sees (the one-device
relaxation of :mod:`.relax` has the same optimum ``19p - 7``).
"""

from __future__ import annotations

import math
from bisect import bisect_right

from ..core.ops import B, F, I, Op, W
from .problem import Instance
from .stagepair import slot_cycle_bound
from .window import _dist_from

#: exact search over gradient-op counts up to this range, a linear floor beyond (still sound)
_EXACT_RANGE = 256


def _min_free_work(need: int, hi: int, a: int, fg: int, fw: int, tg: int, tw: int) -> float:
    """Least ``nG*tG + nW*tW`` with ``fG*nG + fW*nW >= need``, ``0 <= nW <= nG <= hi`` (``inf``
    when none).

    Example:
        >>> _min_free_work(131, 5, 131, 83, 48, 1, 1)  # two I's, or one I and its W
        2
        >>> _min_free_work(262, 1, 131, 83, 48, 1, 1)
        inf
    """
    lo = -(-need // a)
    if fg == 0:  # only W's free memory; each needs its gradient op first
        nw = -(-need // fw)
        return nw * (tg + tw) if nw <= hi else math.inf
    top = min(hi, -(-need // fg))  # beyond need/fG no W is needed and more G's only cost more
    if lo > top:
        return math.inf

    def cost(ng: int) -> float:
        nw = max(0, -(-(need - fg * ng) // fw)) if fw > 0 else 0
        return ng * tg + nw * tw if nw <= ng else math.inf

    if top - lo <= _EXACT_RANGE:
        return min(cost(ng) for ng in range(lo, top + 1))
    # the cost is at least the linear ng*tG + tW*(need - fG*ng)/fW, least at an end of the range
    lin = [ng * tg + (tw * (need - fg * ng) / fw if fw else 0) for ng in (lo, top)]
    return math.floor(min(lin))


def cycle_offsets(inst: Instance, d: int) -> list[int] | None:
    """Lower bounds on ``start(F(j)) - start(F(0))`` for the forwards of one-stage device ``d``
    in microbatch order (module doc); ``None`` when the bound does not apply (several stages, no
    cap, or a cap that holds every activation).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.memory import zero_bubble
        >>> pl = linear(2)  # R = 5; F(2) after F0 F1 + 2 frees from 5 on; F(3) one cycle of 7 after F(1)
        >>> costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
        >>> cycle_offsets(instance(Problem(pl, 4, costs, FixedDelay(1), split=True, memory_cap=2)), 0)
        [0, 1, 7, 10]
    """
    dag, cap = inst.dag, inst.cap
    ops = list(inst.device_ops(d))
    pipes = dag.schedule.pipe_of_mb
    if cap is None or not ops or len({(pipes[dag.ops[i].mb], dag.ops[i].stage) for i in ops}) != 1:
        return None
    pos = {dag.ops[i]: i for i in ops}
    s = dag.ops[ops[0]].stage
    mbs = sorted({dag.ops[i].mb for i in ops})
    m = len(mbs)
    f0 = pos[Op(F, s, mbs[0])]
    g0 = pos.get(Op(I, s, mbs[0]), pos.get(Op(B, s, mbs[0])))
    w0 = pos.get(Op(W, s, mbs[0]))
    a = inst.alloc[f0]
    if a <= 0 or g0 is None:
        return None
    k = cap // a
    if k < 1 or k >= m:
        return None
    tf, tg = inst.dur[f0], inst.dur[g0]
    tw = inst.dur[w0] if w0 is not None else 0
    fg = inst.free[g0]
    fw = inst.free[w0] if w0 is not None else 0
    r = cap - k * a
    extra = 0
    if w0 is not None and dag.ops[g0].kind == I:
        extra = tw if fg == 0 else (min(tg, tw) if fw > r else 0)
    rt = _dist_from(inst, f0, inst.mb_members[mbs[0]]).get(g0, 0)
    x: list[int] = []
    ends: list[int] = []  # earliest end offset of G(i): x_i + R + tG, nondecreasing
    for j in range(m):
        t = x[j - 1] + tf if j else 0
        if j >= k:
            t = max(t, x[j - k] + rt + tg + extra)
            need = (j + 1) * a - cap
            base = rt + (j - k) * tf
            while True:
                n = bisect_right(ends, t, 0, j)  # gradient ops that can have ended by t
                g = base + _min_free_work(need, n, a, fg, fw, tg, tw)
                if g <= t:
                    break
                if n < j and ends[n] <= g:
                    t = ends[n]  # one more gradient op can have ended: the work may drop
                    continue
                if math.isinf(g):  # pragma: no cover - n = j always frees enough when k >= 1
                    break
                t = int(g)
                break
        x.append(t)
        ends.append(t + rt + tg)
    return x


def memory_cycle_bounds(inst: Instance, head: list[int], tail: list[int], objective: str) -> list[int]:
    """Per device, the memory-cycle bound on the objective (module doc); on a device holding
    several stages of one pipe under a cap with room for fewer microbatches than it runs, the
    slot cycle of :func:`.stagepair.slot_cycle_bound` (0 where neither applies).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.memory import zero_bubble
        >>> from ppverify.optimize.bounds import heads_tails
        >>> pl = linear(4)  # m = 2p: 11p - 5, the optimum
        >>> costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
        >>> inst = instance(Problem(pl, 8, costs, FixedDelay(1), split=True, memory_cap=4))
        >>> memory_cycle_bounds(inst, *heads_tails(inst), "makespan")
        [39, 35, 31, 26]
    """
    dag = inst.dag
    out = []
    for d in range(inst.p):
        x = cycle_offsets(inst, d)
        if x is None:
            out.append(slot_cycle_bound(inst, d, head, tail, objective))
            continue
        ops = list(inst.device_ops(d))
        fwd = sorted((i for i in ops if dag.ops[i].kind == F), key=lambda i: dag.ops[i].mb)
        first, last = fwd[0], fwd[-1]
        if objective == "makespan":
            out.append(head[first] + x[-1] + inst.dur[last] + tail[last])
        else:
            mb = dag.ops[last].mb
            dist = _dist_from(inst, last, inst.mb_members[mb])
            out.append(x[-1] + max(dist[i] + inst.dur[i] for i in ops if dag.ops[i].mb == mb and i in dist))
    return out
