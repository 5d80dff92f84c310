"""One schedule's timelines as the compact JSON the report page draws.

A point (one schedule in one configuration) lists its ops once (``"0F1"`` text, device); every
level then gives, in its own timeline order, the op index, start, end and what the op waited for,
its transfers (drawn on their links) and the memory curve of each device. Numbers are rounded to
a resolution of about ``makespan * 1e-7`` so a 50,000-op page stays a few megabytes.

What an op waited for is read off the timeline itself: the latest of (its device's previous op
end, each input's arrival) that equals its start is the reason (:data:`WAIT_CODES`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..core.dag import predecessors, split_pairs
from ..core.memory_unit import printed_unit
from ..core.ops import Op
from ..core.schedule import Schedule
from ..core.timeline import Timeline
from ..views.memory_units import in_activations

#: what an op waited for, as the page shows it (the code is ``waits[i]``, ``wait_refs[i]`` names
#: the op or transfer it waited for)
WAIT_CODES: dict[int, str] = {
    0: "nothing (ready at the start of the step)",
    1: "device busy",  # its previous op on the device ended when it started
    2: "input in flight",  # its input transfer arrived when it started
    3: "input being computed",  # its producer ended when it started, no transfer recorded in between
    4: "held back after its device and inputs were ready (slot column boundary, memory cap or a synchronisation)",
}


def _digits(makespan: float) -> int:
    """Decimal places that keep about 7 significant digits of the makespan."""
    if not makespan > 0:
        return 9
    return max(0, 7 - math.ceil(math.log10(makespan)))


def _round(xs: Iterable[float], nd: int) -> list[float]:
    return np.round(np.asarray(list(xs), dtype=float), nd).tolist()


def op_waits(tl: Timeline) -> tuple[list[int], list[int]]:
    """Per op of ``tl`` (timeline order): the wait code (:data:`WAIT_CODES`) and the op index (codes
    1, 3) or transfer index (code 2) it waited for, else -1.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> from ppverify.core.comm import FixedDelay
        >>> tl = run(build("gpipe", p=2, m=2), comm=FixedDelay(0.5), semantics="async")
        >>> [str(o) for o in tl.ops], op_waits(tl)[0]
        (['0F0', '0F1', '0B0', '0B1', '1F0', '1F1', '1B0', '1B1'], [0, 1, 2, 2, 2, 2, 1, 1])
    """
    n = len(tl.ops)
    start = np.asarray(tl.start, dtype=float)
    end = np.asarray(tl.end, dtype=float)
    dev = np.asarray(tl.device, dtype=int)
    tol = 1e-9 * max(float(tl.makespan), 1e-30)
    index: dict[Op, int] = {}
    for i, op in enumerate(tl.ops):
        index.setdefault(op, i)
    arrivals: dict[tuple[int, int], int] = {}
    tr = tl.transfers
    for k in range(len(tr)):
        if tr.src_op[k] >= 0 and tr.dst_op[k] >= 0:
            arrivals[(tr.src_op[k], tr.dst_op[k])] = k
    prev = np.full(n, -1)
    for d in np.unique(dev):
        idx = np.flatnonzero(dev == d)
        idx = idx[np.lexsort((end[idx], start[idx]))]
        prev[idx[1:]] = idx[:-1]
    split = split_pairs(tl.schedule)
    codes, refs = [0] * n, [-1] * n
    for i, op in enumerate(tl.ops):
        s = start[i]
        if s <= tol:
            continue
        cands: list[tuple[float, int, int]] = []  # (ready time, code, ref): inputs first on ties
        for q, _ in predecessors(op, tl.schedule.num_stages, split):
            j = index.get(q)
            if j is None:
                continue
            t = arrivals.get((j, i))
            cands.append((float(tr.end[t]), 2, t) if t is not None else (float(end[j]), 3, j))
        if prev[i] >= 0:
            cands.append((float(end[prev[i]]), 1, int(prev[i])))
        if not cands:
            codes[i] = 4
            continue
        ready, code, ref = max(cands, key=lambda c: (c[0], c[1]))
        if s - ready > tol:
            codes[i] = 4
        else:
            codes[i], refs[i] = code, ref
    return codes, refs


def queued_behind(tl: Timeline) -> list[int]:
    """Per transfer of ``tl``: the transfer it queued behind, else -1. A point-to-point transfer
    queued when it started after its data was ready (its sending op's end) and another transfer
    sharing its link, or one of its devices, ended exactly then (the ``contention`` engine's
    queues); collectives never queue here.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> from ppverify.core.comm import FixedDelay
        >>> tl = run(build("gpipe", p=2, m=2), comm=FixedDelay(2.0), semantics="contention")
        >>> [(k, s, e) for k, s, e in zip(tl.transfers.kind, tl.transfers.start, tl.transfers.end)][:2]
        [('activation', 1.0, 3.0), ('activation', 3.0, 5.0)]
        >>> queued_behind(tl)[:2]  # 0F1 ended at 2; its activation waited for the link until 3
        [-1, 0]
    """
    tr = tl.transfers
    n = len(tr)
    if not n:
        return []
    start, end = tr.column("start"), tr.column("end")
    sd, dd, so = tr.column("src_dev"), tr.column("dst_dev"), tr.column("src_op")
    op_end = np.asarray(tl.end, dtype=float)
    tol = 1e-9 * max(float(tl.makespan), 1e-30)
    by_end: dict[float, list[int]] = {}
    for t in range(n):
        by_end.setdefault(round(float(end[t]) / tol) if tol else float(end[t]), []).append(t)
    out = [-1] * n
    for t in range(n):
        if so[t] < 0 or start[t] <= op_end[so[t]] + tol:
            continue
        key = round(float(start[t]) / tol) if tol else float(start[t])
        cands = [u for k in (key - 1, key, key + 1) for u in by_end.get(k, []) if u != t and so[u] >= 0]
        same = [u for u in cands if sd[u] == sd[t] and dd[u] == dd[t]]
        near = same or [u for u in cands if {int(sd[u]), int(dd[u])} & {int(sd[t]), int(dd[t])}]
        if near:
            out[t] = near[0]
    return out


def canonical_ops(schedule: Schedule) -> list[Op]:
    """The schedule's ops in device and program order: what a point lists once.

    Example:
        >>> from ppverify.schedules import build
        >>> [str(o) for o in canonical_ops(build("gpipe", p=2, m=1))]
        ['0F0', '0B0', '1F0', '1B0']
    """
    return list(schedule.ops())


def timeline_payload(tl: Timeline, ops: list[Op]) -> dict[str, Any]:
    """One level's drawing data: ``o`` (index into ``ops``), ``d``, ``s``, ``e``, ``w``/``wr``
    (waits), transfers ``tr`` (``q``: the transfer each queued behind, :func:`queued_behind`),
    per-device activation curves ``mem`` (times, values) and ``weights``: each device's
    weight/gradient/optimizer bytes (:meth:`Timeline.static_memory`, the ``weights`` column of
    ``ppverify simulate``), held throughout, so the page draws what the device holds against
    ``memory_capacity`` (the whole device's).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> s = build("1f1b", p=2, m=2)
        >>> p = timeline_payload(run(s, semantics="slot"), canonical_ops(s))
        >>> p["makespan"], p["s"][:3], p["mem"][0], p["weights"]
        (6.0, [0.0, 1.0, 3.0], [[0.0, 1.0, 4.0, 6.0], [1.0, 2.0, 1.0, 0.0]], [0.0, 0.0])
    """
    where = {op: k for k, op in enumerate(ops)}
    ms = float(tl.makespan)
    nd = _digits(ms)
    codes, refs = op_waits(tl)
    tr = tl.transfers
    kinds = sorted(set(tr.kind))
    # activations as every command prints them (one is the largest device's share: 4/3 units on
    # 0,1,1), bytes as they are
    one = printed_unit(tl.costs, tl.schedule.placement)
    mem = [memory_curve(*tl.memory_events(d), nd, one) for d in range(tl.p)]
    return {
        "semantics": tl.semantics,
        "makespan": ms,
        "time_unit": tl.time_unit,
        "memory_unit": tl.costs.memory_unit,
        "memory_capacity": tl.info.memory_capacity,
        "o": [where.get(op, -1) for op in tl.ops],
        "d": np.asarray(tl.device, dtype=int).tolist(),
        "s": _round(tl.start, nd),
        "e": _round(tl.end, nd),
        "w": codes,
        "wr": refs,
        "mem": mem,
        "weights": np.round(in_activations(np.asarray(tl.static_memory(), dtype=float).tolist(), one), 6).tolist(),
        "tr": {
            "kinds": kinds,
            "k": [kinds.index(k) for k in tr.kind],
            "sd": [int(x) for x in tr.src_dev],
            "dd": [int(x) for x in tr.dst_dev],
            "so": [int(x) for x in tr.src_op],
            "do": [int(x) for x in tr.dst_op],
            "s": _round(tr.start, nd),
            "e": _round(tr.end, nd),
            "b": np.round(np.asarray(tr.nbytes, dtype=float), 0).tolist(),
            "q": queued_behind(tl),
        },
    }


def memory_curve(times: Iterable[float], amounts: Iterable[float], nd: int, one: Any = 1) -> list[list[float]]:
    """One device's memory curve as the page draws it: ``[times, amounts]``, the times rounded to
    ``nd`` places, the amounts divided by ``one`` (:func:`~ppverify.core.memory_cap.printed_unit`)
    and several events at one (rounded) instant collapsed to the level after the last of them, as
    the PNG (:func:`ppverify.report.plots.gantt`) draws it: a release and an allocation at one
    instant are no dip to the level between.

    Example:
        >>> memory_curve([0.0, 1.0, 1.0, 2.0], [1.0, 0.0, 3.0, 0.0], 3)  # (1, 0) then (1, 3): 3 kept
        [[0.0, 1.0, 2.0], [1.0, 3.0, 0.0]]
    """
    t = _round(times, nd)
    m = np.round(in_activations(np.asarray(list(amounts), dtype=float).tolist(), one), 6).tolist()
    keep = [k for k in range(len(t)) if k + 1 == len(t) or t[k + 1] != t[k]]
    return [[t[k] for k in keep], [m[k] for k in keep]]


def program_payload(schedule: Schedule) -> dict[str, Any]:
    """A schedule drawn as written when no engine could run it (an INVALID schedule): every op at
    its program slot (one unit per action), so the minimal core can still be shown in place.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> p = program_payload(s)
        >>> p["semantics"], p["s"], p["d"]
        ('program', [0, 1, 0, 1], [0, 0, 1, 1])
    """
    o, d, s = [], [], []
    k = 0
    for dev in range(schedule.p):
        for slot, _op in enumerate(schedule.ops(dev)):
            o.append(k)
            d.append(dev)
            s.append(slot)
            k += 1
    return {
        "semantics": "program",
        "makespan": float(max(s, default=0) + 1),
        "time_unit": "slots",
        "memory_unit": "",
        "memory_capacity": None,
        "o": o,
        "d": d,
        "s": s,
        "e": [x + 1 for x in s],
        "w": [0] * len(o),
        "wr": [-1] * len(o),
        "tr": {"kinds": [], "k": [], "sd": [], "dd": [], "so": [], "do": [], "s": [], "e": [], "b": [], "q": []},
        "mem": [],
        "weights": [],
    }
