"""Where a measured step's time goes, op by op: the runtime's overhead read off the timelines.

A measured timeline (:mod:`.record`) holds each op's start and end on one clock. Against the
ops' costs it splits a step into the terms the calibrated model (:mod:`ppverify.core.overhead`) has:

* **overshoot**: an op lasts its cost plus the wake-up of its sleep (``end - start - cost``);
* **gap**: between two consecutive ops of a rank when the second did not wait for another rank,
  the runtime's own time: its Python per compute action, plus the SEND/RECV actions it runs in
  between (counted from PyTorch's lowering of the rank's list, :func:`lowered_gaps`);
* **wait**: when an op waited for an op of another rank, its start minus that op's end (the
  producer's SEND, the transfer, the consumer's wake-up);
* **head**: the step start (barrier exit) to a rank's first op.

:func:`breakdown` pools these over runs (medians: a loaded machine's wake-ups have long tails)
and fits ``gap = g + t * n`` (n the SEND/RECV actions between the ops) by least squares over the
per-n medians (and trimmed means); :func:`critical_path` follows the measured critical path of one step back from
its last op and sums each term along it, which is what the makespan pays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.ops import Comm, Op, Overlap
from ..core.schedule import Schedule
from ..core.timeline import Timeline


@dataclass(frozen=True)
class PathTerms:
    """Seconds of one step's measured critical path by term: ``cost`` (the ops' costs),
    ``overshoot``, ``gaps``, ``waits``, ``head``; ``ops``, ``comm`` (SEND/RECV actions PyTorch's
    lowering attaches to the path's ops) and ``hops`` (cross-rank waits) count them.

    Example:
        >>> PathTerms(0.3, 0.01, 0.02, 0.005, 0.001, 22, 36, 10).overhead
        0.036
    """

    cost: float
    overshoot: float
    gaps: float
    waits: float
    head: float
    ops: int
    comm: int
    hops: int

    @property
    def overhead(self) -> float:
        """Everything on the path that is not an op's cost."""
        return round(self.overshoot + self.gaps + self.waits + self.head, 12)


def lowered_gaps(schedule: Schedule, rank: int) -> list[int]:
    """For each compute op of ``rank`` in program order: the SEND/RECV actions PyTorch's runtime
    runs on that rank between the previous compute op and this one (its lowering, as
    :func:`ppverify.io.torch_lowering.lower_like_pytorch` writes it).

    Example:
        >>> from ppverify.schedules import build
        >>> lowered_gaps(build("gpipe", p=2, m=2), 0)   # 0F0 | 0SEND_F0 0F1 | 0SEND_F1 0RECV_B0 0B0 | 0RECV_B1 0B1
        [0, 1, 2, 1]
    """
    from ..io.torch_lowering import lower_like_pytorch

    out, n = [], 0
    for a in lower_like_pytorch(schedule).programs[rank]:
        if type(a) is Op:
            out.append(n)
            n = 0
        elif type(a) is Overlap:
            out.extend([n] + [0] * (len(a.ops) - 1))
            n = 0
        elif isinstance(a, Comm):
            n += 1
    return out


def _rank_order(tl: Timeline) -> dict[int, list[int]]:
    order: dict[int, list[int]] = {}
    for i in np.argsort(tl.start, kind="stable"):
        order.setdefault(int(tl.device[i]), []).append(int(i))
    return order


def _cross_dep(tl: Timeline, i: int, at: dict, split: set) -> int | None:
    from ..core.dag import predecessors

    best, best_end = None, -np.inf
    for d, _ in predecessors(tl.ops[i], tl.schedule.num_stages, split):
        j = at.get((d.kind, d.stage, d.mb))
        if j is not None and tl.device[j] != tl.device[i] and tl.end[j] > best_end:
            best, best_end = j, float(tl.end[j])
    return best


def op_samples(tl: Timeline) -> dict[str, list]:
    """One measured step's samples: ``overshoot`` (s per op), ``gap`` (``(n SEND/RECV, s)`` when
    the op did not wait; one-pipe schedules only, whose actions PyTorch's lowering fixes),
    ``wait`` (s) and ``head`` (s, per rank whose first op waits for nobody).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.measure.record import Event, to_timeline
        >>> from ppverify.core.costs import CostModel
        >>> s = build("gpipe", p=2, m=1)
        >>> ev = [[Event("F", 0, 0, 1000, 3100), Event("B", 0, 0, 12000, 14100)],
        ...       [Event("F", 1, 0, 4000, 6100), Event("B", 1, 0, 6300, 8400)]]
        >>> d = op_samples(to_timeline(s, CostModel.abstract(s.placement, F=2e-6, B=2e-6), ev, 0))
        >>> [round(x * 1e9) for x in d["overshoot"]], [(n, round(g * 1e9)) for n, g in d["gap"]]
        ([100, 100, 100, 100], [(0, 200)])
        >>> [round(x * 1e9) for x in d["wait"]], [round(x * 1e9) for x in d["head"]]
        ([3600, 900], [1000])
    """
    from ..core.dag import split_pairs

    s = tl.schedule
    split = split_pairs(s)
    at = {(o.kind, o.stage, o.mb): i for i, o in enumerate(tl.ops)}
    out: dict[str, list] = {"overshoot": [], "gap": [], "wait": [], "head": []}
    one_pipe = s.placement.num_pipes == 1
    for rank, idx in _rank_order(tl).items():
        counts = lowered_gaps(s, rank) if one_pipe else []
        prev_end = None
        for k, i in enumerate(idx):
            op = tl.ops[i]
            out["overshoot"].append(float(tl.end[i] - tl.start[i]) - float(tl.costs.duration[op.kind][op.stage]))
            j = _cross_dep(tl, i, at, split)
            if j is not None and (prev_end is None or tl.end[j] > prev_end):
                out["wait"].append(float(tl.start[i] - tl.end[j]))
            elif prev_end is None:
                out["head"].append(float(tl.start[i]))
            elif one_pipe and k < len(counts):
                out["gap"].append((counts[k], float(tl.start[i]) - prev_end))
            prev_end = float(tl.end[i])
    return out


def critical_path(tl: Timeline) -> PathTerms:
    """Follow one measured step's critical path back from its last op (at each op: the
    predecessor that ended last, the rank's previous op or an op of another rank it depends on)
    and sum each term along it (see the module doc).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.measure.record import Event, to_timeline
        >>> from ppverify.core.costs import CostModel
        >>> s = build("gpipe", p=2, m=1)
        >>> ev = [[Event("F", 0, 0, 1000, 3100), Event("B", 0, 0, 12000, 14100)],
        ...       [Event("F", 1, 0, 4000, 6100), Event("B", 1, 0, 6300, 8400)]]
        >>> t = critical_path(to_timeline(s, CostModel.abstract(s.placement, F=2e-6, B=2e-6), ev, 0))
        >>> [round(x * 1e9) for x in (t.cost, t.overshoot, t.gaps, t.waits, t.head)], t.ops, t.comm, t.hops
        ([8000, 400, 200, 4500, 1000], 4, 4, 2)
    """
    from ..core.dag import split_pairs
    from ..core.overhead import comm_actions

    s = tl.schedule
    split = split_pairs(s)
    at = {(o.kind, o.stage, o.mb): i for i, o in enumerate(tl.ops)}
    prev: dict[int, int] = {}
    for idx in _rank_order(tl).values():
        prev.update({b: a for a, b in zip(idx, idx[1:])})
    terms = dict(cost=0.0, overshoot=0.0, gaps=0.0, waits=0.0, head=0.0)
    ops = comm = hops = 0
    i = int(np.argmax(tl.end))
    while True:
        op = tl.ops[i]
        cost = float(tl.costs.duration[op.kind][op.stage])
        terms["cost"] += cost
        terms["overshoot"] += float(tl.end[i] - tl.start[i]) - cost
        ops += 1
        comm += comm_actions(s.placement, op.kind, op.stage)
        j, pj = _cross_dep(tl, i, at, split), prev.get(i)
        if j is not None and (pj is None or tl.end[j] > tl.end[pj]):
            terms["waits"] += float(tl.start[i] - tl.end[j])
            hops += 1
            i = j
        elif pj is not None:
            terms["gaps"] += float(tl.start[i] - tl.end[pj])
            i = pj
        else:
            terms["head"] += float(tl.start[i])
            break
    return PathTerms(**terms, ops=ops, comm=comm, hops=hops)


@dataclass(frozen=True)
class Breakdown:
    """Pooled medians (seconds): ``overshoot`` per op, the gap fit ``gap_base + gap_per_comm * n``,
    ``wait`` and ``head``; ``samples`` counts the ops; ``means``: the same three per-op terms
    ``(overshoot, gap_base, gap_per_comm)`` from means over the lower :data:`TRIM` of each
    sample (a makespan adds its ops' costs up, so it pays their means, tails included: a RECV's
    wait for a core, say; the top is dropped, where a few stalls of a loaded machine sit).

    Example:
        >>> Breakdown(8e-5, 1e-4, 2e-4, 4e-4, 3e-4, 100).per_action
        0.00018
    """

    overshoot: float
    gap_base: float
    gap_per_comm: float
    wait: float
    head: float
    samples: int
    means: tuple[float, float, float] | None = None

    @property
    def per_action(self) -> float:
        """What one compute action costs beyond its op's cost: overshoot plus the base gap."""
        return round(self.overshoot + self.gap_base, 12)


#: share of each sample kept (the lowest) for the means of :class:`Breakdown`
TRIM = 0.98


def _trimmed_mean(values: Sequence[float]) -> float:
    v = np.sort(np.asarray(values, dtype=float))
    return float(v[: max(1, int(np.ceil(TRIM * len(v))))].mean())


def _line(groups: dict[int, list[float]], stat) -> tuple[float, float]:
    # gap = g + t * n by least squares over the statistic of each n, weighted by the group sizes
    if not groups:
        return 0.0, 0.0
    if len(groups) == 1:
        return float(stat(next(iter(groups.values())))), 0.0
    ns = np.array(sorted(groups), dtype=float)
    val = np.array([stat(groups[int(n)]) for n in ns])
    w = np.sqrt([len(groups[int(n)]) for n in ns])
    (t, g0), *_ = np.linalg.lstsq(np.stack([ns, np.ones_like(ns)], 1) * w[:, None], val * w, rcond=None)
    return float(g0), float(t)


def breakdown(timelines: Sequence[Timeline]) -> Breakdown:
    """Pool :func:`op_samples` over measured steps: medians, and ``gap = g + t * n`` fitted by
    least squares over the median gap of each n (weighted by how many gaps have that n).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.measure.record import Event, to_timeline
        >>> from ppverify.core.costs import CostModel
        >>> s = build("gpipe", p=2, m=1)
        >>> ev = [[Event("F", 0, 0, 1000, 3100), Event("B", 0, 0, 12000, 14100)],
        ...       [Event("F", 1, 0, 4000, 6100), Event("B", 1, 0, 6300, 8400)]]
        >>> b = breakdown([to_timeline(s, CostModel.abstract(s.placement, F=2e-6, B=2e-6), ev, 0)])
        >>> round(b.overshoot * 1e9), round(b.gap_base * 1e9), b.samples
        (100, 200, 4)
    """
    pooled: dict[str, list] = {"overshoot": [], "gap": [], "wait": [], "head": []}
    for tl in timelines:
        for k, v in op_samples(tl).items():
            pooled[k].extend(v)
    groups: dict[int, list[float]] = {}
    for n, g in pooled["gap"]:
        groups.setdefault(n, []).append(g)
    g0, t = _line(groups, np.median)
    gm, tm = _line(groups, _trimmed_mean)

    def med(k: str) -> float:
        return float(np.median(pooled[k])) if pooled[k] else 0.0

    means = (_trimmed_mean(pooled["overshoot"]) if pooled["overshoot"] else 0.0, gm, tm)
    return Breakdown(med("overshoot"), g0, t, med("wait"), med("head"), len(pooled["overshoot"]), means)


__all__ = ["TRIM", "Breakdown", "PathTerms", "breakdown", "critical_path", "lowered_gaps", "op_samples"]
