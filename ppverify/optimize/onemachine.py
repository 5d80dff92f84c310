"""The one-machine bound with release and tail thresholds, and its cross-device form for the span.

Classic single-machine argument (Jackson, Carlier): if every op of a set ``X`` on one device starts
at least ``r`` after a reference time ``S`` and at least ``q`` must follow the end of each before a
time ``E``, then ``E - S >= r + sum(dur X) + q`` (the ops of ``X`` run one at a time). Taking ``X``
as the ops whose release is ``>= r`` and whose tail is ``>= q``, for every pair of thresholds, gives
the strongest such bound.

* **makespan**: ``S = 0``, ``E`` the makespan, releases and tails from the dependency DAG (tails
  include the step's collectives, :mod:`.collectives`: an op a replica all-reduce waits for is
  followed by at least that all-reduce).
* **span** (cross-device): the span of device ``a`` is ``E_a - S_a`` (its last end minus its first
  start). An op ``x`` on *any* device ``b`` starts at least ``h_a(x)`` after ``S_a``, where
  ``h_a(x)`` is the longest dependency path from the start of an op of device ``a`` that precedes
  ``x`` to the start of ``x``; and at least ``t_a(x)`` must pass from the end of ``x`` to the end
  of an op of device ``a`` that follows it. So device ``b``'s busy time, squeezed between those
  release and tail times, lower-bounds device ``a``'s span.

Why it matters: with a linear placement, the last device must run every F and I between the first
forward's arrival (``(p-1)(tF+c)`` after device 0 starts) and the end of its last input gradient,
which still has to travel back to device 0 (``(p-2)tI + (p-1)c``) and be followed there by I and W.
So device 0's span is at least ``m(tF+tI) + (p-1)(tF+tI+2c) + tW`` (the last device's Ws can all
be deferred, so they do not count): for the zero-bubble profiled setting p=8, m=24 this is
exactly the reference span at cap 2p·M_F, which the memory-window and device-relaxation bounds
(one device at a time) could not see.
"""

from __future__ import annotations

from collections.abc import Iterable

from .deadline import Deadline
from .problem import Instance


def threshold_bound(items: Iterable[tuple[int, int, int]]) -> int:
    """``max over r, q of r + sum(d for (h, t, d) if h >= r and t >= q) + q`` over
    ``(release, tail, duration)`` items; 0 for none.

    Example:
        >>> threshold_bound([(0, 5, 1), (3, 0, 1), (3, 2, 4)])  # r=3, q=2: only (3, 2, 4) -> 9
        9
        >>> threshold_bound([(0, 0, 2), (0, 0, 3)])
        5
    """
    groups: dict[tuple[int, int], int] = {}
    for h, t, d in items:
        groups[(h, t)] = groups.get((h, t), 0) + d
    if not groups:
        return 0
    best = 0
    by_h = sorted(groups.items(), key=lambda kv: -kv[0][0])
    for q in sorted({t for _, t in groups}):
        acc = 0
        for (h, t), d in by_h:  # releases in decreasing order: the set grows as r decreases
            if t >= q:
                acc += d
                best = max(best, h + acc + q)
    return best


def _mb_paths(inst: Instance, members: list[int], order_rank: dict[int, int]) -> tuple[dict, dict]:
    """Within one microbatch: ``rel[x][a]`` = longest start-to-start path from an op on device a to
    x (0 when x itself is on a), ``tail[x][a]`` = longest end-to-end path from x to an op on a."""
    dag = inst.dag
    members = sorted(members, key=order_rank.__getitem__)
    inside = set(members)
    dist: dict[int, dict[int, int]] = {}  # dist[u][x]: start(u) -> start(x)
    for u in members:
        du = {u: 0}
        for x in members:
            if order_rank[x] <= order_rank[u]:
                continue
            for k, q in enumerate(dag.pred[x]):
                if q in du and q in inside:
                    val = du[q] + inst.dur[q] + inst.delay[x][k]
                    if val > du.get(x, -1):
                        du[x] = val
        dist[u] = du
    rel: dict[int, dict[int, int]] = {x: {} for x in members}
    tail: dict[int, dict[int, int]] = {x: {} for x in members}
    for u in members:
        a = dag.device[u]
        for x, val in dist[u].items():
            if val > rel[x].get(a, -1):
                rel[x][a] = val
            back = val + inst.dur[x] - inst.dur[u]  # end(u) -> end(x), u precedes x
            if back > tail[u].get(dag.device[x], -1):
                tail[u][dag.device[x]] = back
    return rel, tail


def cross_device_span_bounds(inst: Instance, deadline: Deadline | None = None) -> list[int]:
    """Per device a, a lower bound on its span from the one-machine bound on every device b
    (module doc). Valid for every schedule; dependencies link ops of one microbatch only, so paths
    are computed per microbatch (once per distinct microbatch shape).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(4)  # device 0 from device 3: 3(F+c) + 8(F+I) + (2I+3c) + I + W = 6+16+5+2
        >>> cross_device_span_bounds(instance(Problem(pl, 8, CostModel.abstract(pl, F=1, I=1, W=1),
        ...                                               FixedDelay(1), split=True, objective="span")))
        [29, 25, 24, 24]
    """
    dag = inst.dag
    rank = {i: r for r, i in enumerate(inst.topo)}
    by_mb: dict[int, list[int]] = {}
    for i, op in enumerate(dag.ops):
        by_mb.setdefault(op.mb, []).append(i)
    cache: dict[tuple, tuple[list, list]] = {}
    # items[a][b]: (release, tail, duration) of the ops on b seen from device a
    items: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for mb, members in by_mb.items():
        if mb % 64 == 0 and deadline is not None:
            deadline.check()  # a :class:`.deadline.Deadline`
        members.sort(key=lambda i: (dag.ops[i].kind, dag.ops[i].stage))
        # a microbatch's shape: its ops' devices, durations and incoming edges (as member indices)
        local = {i: n for n, i in enumerate(members)}
        key = tuple(
            (
                dag.ops[i].kind,
                dag.ops[i].stage,
                dag.device[i],
                inst.dur[i],
                tuple((local.get(q, -1), inst.delay[i][k]) for k, q in enumerate(dag.pred[i]) if q >= 0),
            )
            for i in members
        )
        if key not in cache:
            rel, tail = _mb_paths(inst, members, rank)
            cache[key] = ([rel[i] for i in members], [tail[i] for i in members])
        rels, tails = cache[key]
        for n, i in enumerate(members):
            b = dag.device[i]
            for a, h in rels[n].items():
                t = tails[n].get(a)
                if t is not None:
                    items.setdefault((a, b), []).append((h, t, inst.dur[i]))
    out = [0] * inst.p
    for (a, _b), its in items.items():
        out[a] = max(out[a], threshold_bound(its))
    return out


def makespan_bounds(inst: Instance, head: list[int], tail: list[int]) -> list[int]:
    """Per device, the one-machine threshold bound on the makespan from the DAG's heads and tails.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import heads_tails
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> makespan_bounds(inst, *heads_tails(inst))  # device 1: released at tF, tail tB: (m+p-1)(tF+tB)
        [8, 9]
    """
    return [threshold_bound((head[i], tail[i], inst.dur[i]) for i in inst.device_ops(d)) for d in range(inst.p)]
