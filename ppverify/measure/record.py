"""Recorded events of a measured step, and their reconstruction into a ppverify ``Timeline``.

Workers record with ``time.monotonic_ns()``, which on Linux reads ``CLOCK_MONOTONIC``: one clock
for every process of the machine, so events of different ranks compare directly. An
:class:`Event` is ``(kind, stage, mb, start_ns, end_ns)``:

* ``F``/``B``/``I``/``W``: a compute op, from the moment the stage starts computing (after its
  input has arrived) to its end;
* ``SEND_F``/``SEND_B``: the moment stage ``stage`` posts the send of microbatch ``mb``'s
  activation (to ``stage+1``) or gradient (to ``stage-1``); ``start_ns == end_ns``;
* ``RECV_F``/``RECV_B``: the moment stage ``stage`` posts the receive of microbatch ``mb``'s
  activation or gradient (PyTorch's runtime); ``start_ns == end_ns``; not part of the timeline
  (:mod:`.handover` reads them);
* ``ALLREDUCE``: the gradient all-reduce of ``stage``'s two replicas (two-pipe runner); ``mb``
  holds the peer rank.

:func:`to_timeline` turns one step's events into a :class:`~ppverify.core.timeline.Timeline` with
``semantics="measured"``, times in seconds from the step start. A transfer lasts from the send's
post to the start of the op that consumed it (the latest moment it can have arrived).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ..core.costs import CostModel
from ..core.ops import Op
from ..core.schedule import Schedule
from ..core.timeline import Timeline, TimelineInfo, Transfers

MEASURED = "measured"


class Event(NamedTuple):
    """One recorded event on one rank (see the module docstring).

    Example:
        >>> Event("F", 0, 1, 100, 250)
        Event(kind='F', stage=0, mb=1, start_ns=100, end_ns=250)
    """

    kind: str
    stage: int
    mb: int
    start_ns: int
    end_ns: int


def to_timeline(
    schedule: Schedule,
    costs: CostModel,
    events: Sequence[Sequence[Event]],
    t0_ns: int,
    info: TimelineInfo | None = None,
) -> Timeline:
    """One measured step as a :class:`Timeline`: ``events[rank]`` are rank's events, ``t0_ns``
    the step start (the earliest rank's start after the barrier). Ops appear by device, then start.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> ev = [[Event("F", 0, 0, 1000, 2000), Event("SEND_F", 0, 0, 2100, 2100), Event("B", 0, 0, 6000, 8000)],
        ...       [Event("F", 1, 0, 2500, 3500), Event("B", 1, 0, 3500, 5500), Event("SEND_B", 1, 0, 5600, 5600)]]
        >>> tl = to_timeline(s, CostModel.unit(s.placement), ev, 1000)
        >>> [str(o) for o in tl.ops], tl.start.tolist(), tl.makespan
        (['0F0', '0B0', '1F0', '1B0'], [0.0, 5e-06, 1.5e-06, 2.5e-06], 7e-06)
        >>> tl.transfers.kind, tl.transfers.start, tl.transfers.end
        (['activation', 'gradient'], [1.1e-06, 4.6e-06], [1.5e-06, 5e-06])
    """
    rows: list[tuple[int, int, Op, int, int]] = []
    sends: list[tuple[int, Event]] = []
    reduces: list[tuple[int, Event]] = []
    for rank, evs in enumerate(events):
        for ev in evs:
            if ev.kind in ("F", "B", "I", "W"):
                rows.append((rank, ev.start_ns, Op(ev.kind, ev.stage, ev.mb), ev.start_ns, ev.end_ns))
            elif ev.kind in ("SEND_F", "SEND_B"):
                sends.append((rank, ev))
            elif ev.kind == "ALLREDUCE":
                reduces.append((rank, ev))
    rows.sort(key=lambda r: (r[0], r[1]))
    ops = [r[2] for r in rows]
    index = {(op.kind, op.stage, op.mb): i for i, op in enumerate(ops)}
    device = np.array([r[0] for r in rows], dtype=int)
    start = np.array([(r[3] - t0_ns) / 1e9 for r in rows], dtype=float)
    end = np.array([(r[4] - t0_ns) / 1e9 for r in rows], dtype=float)
    tr = Transfers()
    nbytes = costs.boundary_bytes
    for rank, ev in sends:
        if ev.kind == "SEND_F":
            src = index.get(("F", ev.stage, ev.mb))
            dst = index.get(("F", ev.stage + 1, ev.mb))
            kind, boundary = "activation", ev.stage
        else:
            src = _grad_op(index, ev.stage, ev.mb)
            dst = _grad_op(index, ev.stage - 1, ev.mb, consumer=True)
            kind, boundary = "gradient", ev.stage - 1
        if src is None or dst is None:
            continue
        t = (ev.start_ns - t0_ns) / 1e9
        size = float(nbytes[boundary]) if 0 <= boundary < len(nbytes) else 0.0
        tr.add(kind, rank, int(device[dst]), src, dst, t, max(t, float(start[dst])), size)
    for rank, ev in reduces:
        size = float(costs.weight_bytes[ev.stage]) if ev.stage < len(costs.weight_bytes) else 0.0
        tr.add("allreduce", rank, ev.mb, -1, -1, (ev.start_ns - t0_ns) / 1e9, (ev.end_ns - t0_ns) / 1e9, size)
    return Timeline(schedule, costs, MEASURED, ops, device, start, end, tr, info or TimelineInfo())


def _grad_op(index: Mapping[tuple[str, int, int], int], stage: int, mb: int, consumer: bool = False) -> int | None:
    # the op producing (B or I) or consuming (B, or I when the backward is split) a gradient
    for kind in ("B", "I") if not consumer else ("B", "I", "W"):
        i = index.get((kind, stage, mb))
        if i is not None:
            return i
    return None


def step_start(begins_ns: Sequence[int]) -> int:
    """The start of a step: the earliest rank's start (every rank leaves the barrier then).

    Example:
        >>> step_start([120, 100, 130])
        100
    """
    return int(min(begins_ns))


def causality_violations(timeline: Timeline, tolerance: float = 1e-4) -> list[str]:
    """Dependencies of the step's DAG (:mod:`ppverify.core.dag`) that a timeline breaks: an op that
    starts more than ``tolerance`` seconds before the end of an op it depends on. A correct
    measured run has none (its ops cannot use data before it exists); one line per violation.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> ev = [[Event("F", 0, 0, 0, 10), Event("B", 0, 0, 40, 50)], [Event("F", 1, 0, 5, 20), Event("B", 1, 0, 20, 30)]]
        >>> causality_violations(to_timeline(s, CostModel.unit(s.placement), ev, 0), tolerance=0.0)
        ['1F0 starts at 5e-09 s, before 0F0 (a predecessor) ends at 1e-08 s']
    """
    from ..core.dag import predecessors, split_pairs

    split = split_pairs(timeline.schedule)
    at = {(op.kind, op.stage, op.mb): i for i, op in enumerate(timeline.ops)}
    out = []
    for i, op in enumerate(timeline.ops):
        for dep, _ in predecessors(op, timeline.schedule.num_stages, split):
            j = at.get((dep.kind, dep.stage, dep.mb))
            if j is not None and timeline.start[i] < timeline.end[j] - tolerance:
                out.append(
                    f"{op} starts at {float(timeline.start[i]):.6g} s, before {dep} (a predecessor) "
                    f"ends at {float(timeline.end[j]):.6g} s"
                )
    return out
