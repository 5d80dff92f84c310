"""Chrome / Perfetto trace of a :class:`~ppverify.core.timeline.Timeline` (the JSON "Trace Event
Format" that ``chrome://tracing`` and https://ui.perfetto.dev open).

Layout: one process per device (``pid`` = device); in it a ``compute`` track (``tid`` 0) with one
slice per op (the second op of an overlapped F&B cell on a ``compute #2`` track), one track per communication direction (``send -> device d``, and ``allreduce`` /
``dp-allreduce`` for collectives), flow arrows from each send to the op that consumes it on the
receiving device, and a ``memory`` counter track (activations plus weights held).

Viewers require the slices of one thread to nest. Transfers on one link that overlap in time
(``async`` sends do not queue) therefore go to extra lanes of that link, each its own thread
(``send -> device 1 #2`` ...), and so do ops that share a device's time; lanes are assigned greedily (:func:`assign_lanes`: as few lanes as the most
transfers in flight at once). Flow events sit at the middle of the slice they belong to (the
send, the consuming op) and bind to it as its enclosing slice, which no neighbouring slice that
merely touches it can claim.

Times are microseconds (``ts``/``dur``): seconds x 1e6 for preset timelines; an abstract time unit
is written as 1000 us (1 ms) so that fractional units stay readable. ``otherData`` records the
scale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import ParameterError, ScheduleFileError
from .memory_unit import in_activations, printed_unit
from .timeline import Timeline

COMPUTE_TID = 0
#: microseconds per abstract time unit
US_PER_UNIT = 1000.0


def time_scale(timeline: Timeline) -> float:
    """Microseconds per time unit of the timeline.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> time_scale(run(build("gpipe", p=2, m=1)))
        1000.0
    """
    return 1e6 if timeline.time_unit == "s" else US_PER_UNIT


def assign_lanes(intervals: list[tuple[float, float]]) -> list[int]:
    """Lane of each ``(start, end)`` interval such that no two intervals of a lane overlap (they
    may touch), greedily in start order: the first free lane, else a new one. This uses as many
    lanes as the most intervals that overlap one instant, the fewest possible.

    Example:
        >>> assign_lanes([(0, 5), (1, 2), (2, 6), (5, 7), (6, 8)])
        [0, 1, 1, 0, 1]
    """
    order = sorted(range(len(intervals)), key=lambda n: (intervals[n][0], intervals[n][1], n))
    lane_end: list[float] = []
    lanes = [0] * len(intervals)
    for n in order:
        start, end = intervals[n]
        free = next((k for k, e in enumerate(lane_end) if e <= start), None)
        if free is None:
            free = len(lane_end)
            lane_end.append(end)
        lane_end[free] = end
        lanes[n] = free
    return lanes


def chrome_trace(timeline: Timeline, memory: bool = True, measured_memory: Any = None) -> dict[str, Any]:
    """The trace as a JSON-ready dict (``traceEvents`` plus ``otherData``).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> from ppverify.core.comm import FixedDelay
        >>> tr = chrome_trace(run(build("gpipe", p=2, m=1), comm=FixedDelay(0.5)))
        >>> sorted({e["ph"] for e in tr["traceEvents"]})
        ['C', 'M', 'X', 'f', 's']
        >>> [(e["name"], e["ts"], e["dur"]) for e in tr["traceEvents"] if e["ph"] == "X" and e["tid"] == 0][:2]
        [('0F0', 0.0, 1000.0), ('0B0', 4000.0, 1000.0)]
        >>> # the gradient 1B0 -> 0B0: sent over [3.5, 4] on device 1, consumed by 0B0 over [4, 5]
        >>> [(e["ph"], e["pid"], e["tid"], e["ts"]) for e in tr["traceEvents"] if e["ph"] in "sf"][:2]
        [('s', 1, 1, 3750.0), ('f', 0, 0, 4500.0)]
    """
    sc = time_scale(timeline)
    p = timeline.p
    events: list[dict[str, Any]] = []
    for d in range(p):
        events.append({"ph": "M", "name": "process_name", "pid": d, "tid": 0, "args": {"name": f"device {d}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": d, "tid": 0, "args": {"sort_index": d}})
        events.append({"ph": "M", "name": "thread_name", "pid": d, "tid": COMPUTE_TID, "args": {"name": "compute"}})
    start, end, dev = timeline.start.tolist(), timeline.end.tolist(), timeline.device.tolist()
    next_tid = [COMPUTE_TID + 1] * p
    op_tid = [COMPUTE_TID] * len(timeline.ops)
    for d in range(p):
        # ops that run at once (an overlapped F&B cell) get extra compute lanes
        mine = [i for i in range(len(timeline.ops)) if dev[i] == d]
        lanes = assign_lanes([(start[i], end[i]) for i in mine])
        extra = {lane: next_tid[d] + lane - 1 for lane in range(1, max(lanes, default=0) + 1)}
        next_tid[d] += len(extra)
        for lane, tid in extra.items():
            events.append(
                {"ph": "M", "name": "thread_name", "pid": d, "tid": tid, "args": {"name": f"compute #{lane + 1}"}}
            )
        for i, lane in zip(mine, lanes):
            op_tid[i] = extra.get(lane, COMPUTE_TID)
    for i, op in enumerate(timeline.ops):
        events.append(
            {
                "ph": "X",
                "name": str(op),
                "cat": op.kind,
                "pid": dev[i],
                "tid": op_tid[i],
                "ts": start[i] * sc,
                "dur": (end[i] - start[i]) * sc,
                "args": {"kind": op.kind, "stage": op.stage, "mb": op.mb},
            }
        )
    tr = timeline.transfers
    names = [tr.kind[n] if tr.src_op[n] < 0 else f"send -> device {tr.dst_dev[n]}" for n in range(len(tr))]
    links: dict[tuple[int, str], list[int]] = {}  # (device, track name) -> transfers, first seen first
    for n in range(len(tr)):
        links.setdefault((tr.src_dev[n], names[n]), []).append(n)
    tid_of = [0] * len(tr)
    for (d, name), members in links.items():
        lanes = assign_lanes([(tr.start[n], tr.end[n]) for n in members])
        base, next_tid[d] = next_tid[d], next_tid[d] + max(lanes) + 1  # a link's lanes side by side
        for lane in range(max(lanes) + 1):
            label = name if lane == 0 else f"{name} #{lane + 1}"
            events.append({"ph": "M", "name": "thread_name", "pid": d, "tid": base + lane, "args": {"name": label}})
            events.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": d,
                    "tid": base + lane,
                    "args": {"sort_index": base + lane},
                }
            )
        for n, lane in zip(members, lanes):
            tid_of[n] = base + lane
    for n in range(len(tr)):
        kind, src, dst, tid = tr.kind[n], tr.src_dev[n], tr.dst_dev[n], tid_of[n]
        collective = tr.src_op[n] < 0
        ts, dur = tr.start[n] * sc, (tr.end[n] - tr.start[n]) * sc
        label = kind if collective else f"{kind} {timeline.ops[tr.src_op[n]]} -> {timeline.ops[tr.dst_op[n]]}"
        events.append(
            {
                "ph": "X",
                "name": label,
                "cat": kind,
                "pid": src,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": {"bytes": tr.nbytes[n], "src": src, "dst": dst},
            }
        )
        if not collective:
            # flow arrow from the send slice to the consuming op, each end at its slice's middle so
            # that it binds to that slice alone (a neighbour ending where it starts cannot claim it)
            j = tr.dst_op[n]
            events.append(
                {
                    "ph": "s",
                    "name": kind,
                    "cat": "flow",
                    "id": n,
                    "pid": src,
                    "tid": tid,
                    "ts": (tr.start[n] + tr.end[n]) / 2 * sc,
                }
            )
            events.append(
                {
                    "ph": "f",
                    "bp": "e",
                    "name": kind,
                    "cat": "flow",
                    "id": n,
                    "pid": dst,
                    "tid": op_tid[j],
                    "ts": (start[j] + end[j]) / 2 * sc,
                }
            )
    if memory and measured_memory is not None:
        # a measured run's own curve (bytes autograd saved, per device): ``[(times, bytes), ...]``
        for d, (times, held) in enumerate(measured_memory):
            events.append(
                {"ph": "C", "name": "saved activations (measured)", "pid": d, "ts": 0.0, "args": {"bytes": 0}}
            )
            for t, v in zip(list(times), list(held)):
                events.append(
                    {"ph": "C", "name": "saved activations (measured)", "pid": d, "ts": t * sc, "args": {"bytes": v}}
                )
    elif memory:
        unit = timeline.costs.memory_unit
        # activations as every command prints them (one is the largest device's share: 4/3 units on
        # a map 0,1,1 with --costs), bytes as they are
        one = printed_unit(timeline.costs, timeline.schedule.placement)
        for d in range(p):
            times, mem = timeline.memory_events(d, include_weights=True)
            [static] = in_activations([float(timeline.static_memory()[d])], one)
            events.append({"ph": "C", "name": "memory", "pid": d, "ts": 0.0, "args": {unit: static}})
            for t, v in zip(times.tolist(), in_activations(mem.tolist(), one)):
                events.append({"ph": "C", "name": "memory", "pid": d, "ts": t * sc, "args": {unit: v}})
    other = {
        "semantics": timeline.semantics,
        "schedule": timeline.schedule.describe(),
        "time_unit": timeline.time_unit,
        "us_per_time_unit": sc,
        "memory_unit": timeline.costs.memory_unit,
        "makespan": timeline.makespan,
    }
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def write_trace(timeline: Timeline, path: str | Path, memory: bool = True, measured_memory: Any = None) -> Path:
    """Write :func:`chrome_trace` to ``path`` (JSON); returns the path. ``measured_memory``
    (per device ``(times, bytes)``, from ``measure``) replaces the model's memory track.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> out = write_trace(run(build("1f1b", p=2, m=2)), os.path.join(tempfile.mkdtemp(), "t.json"))
        >>> json.loads(out.read_text())["otherData"]["semantics"]
        'async'
    """
    from .files import atomic_write

    try:  # the name as given: Path() would drop a trailing '/'
        atomic_write(path, json.dumps(chrome_trace(timeline, memory, measured_memory)), "--trace")  # temp, then rename
    except ParameterError as exc:
        raise ScheduleFileError(str(path), "", f"cannot write the trace: {exc.rule}") from None
    return Path(path)
