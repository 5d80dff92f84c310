"""Chrome / Perfetto trace of a :class:`~ppverify.timeline.Timeline` (the JSON "Trace Event
Format" that ``chrome://tracing`` and https://ui.perfetto.dev open).

Layout: one process per device (``pid`` = device); in it a ``compute`` track (``tid`` 0) with one
slice per op, one track per communication direction (``send -> device d``, and ``allreduce`` /
``dp-allreduce`` for collectives), flow arrows from each send to the op that consumes it on the
receiving device, and a ``memory`` counter track (activations plus weights held).

Times are microseconds (``ts``/``dur``): seconds x 1e6 for preset timelines; an abstract time unit
is written as 1000 us (1 ms) so that fractional units stay readable. ``otherData`` records the
scale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import ScheduleFileError
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


def chrome_trace(timeline: Timeline, memory: bool = True) -> dict[str, Any]:
    """The trace as a JSON-ready dict (``traceEvents`` plus ``otherData``).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> from ppverify.comm import FixedDelay
        >>> tr = chrome_trace(run(build("gpipe", p=2, m=1), comm=FixedDelay(0.5)))
        >>> sorted({e["ph"] for e in tr["traceEvents"]})
        ['C', 'M', 'X', 'f', 's']
        >>> [(e["name"], e["ts"], e["dur"]) for e in tr["traceEvents"] if e["ph"] == "X" and e["tid"] == 0][:2]
        [('0F0', 0.0, 1000.0), ('0B0', 4000.0, 1000.0)]
    """
    sc = time_scale(timeline)
    p = timeline.p
    events: list[dict[str, Any]] = []
    for d in range(p):
        events.append({"ph": "M", "name": "process_name", "pid": d, "tid": 0, "args": {"name": f"device {d}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": d, "tid": 0, "args": {"sort_index": d}})
        events.append({"ph": "M", "name": "thread_name", "pid": d, "tid": COMPUTE_TID, "args": {"name": "compute"}})
    start, end, dev = timeline.start.tolist(), timeline.end.tolist(), timeline.device.tolist()
    for i, op in enumerate(timeline.ops):
        events.append({"ph": "X", "name": str(op), "cat": op.kind, "pid": dev[i], "tid": COMPUTE_TID,
                       "ts": start[i] * sc, "dur": (end[i] - start[i]) * sc,
                       "args": {"kind": op.kind, "stage": op.stage, "mb": op.mb}})
    tracks: dict[tuple[int, str], int] = {}

    def track(d: int, name: str) -> int:
        key = (d, name)
        if key not in tracks:
            tid = 1 + sum(1 for k in tracks if k[0] == d)
            tracks[key] = tid
            events.append({"ph": "M", "name": "thread_name", "pid": d, "tid": tid, "args": {"name": name}})
        return tracks[key]

    tr = timeline.transfers
    for n in range(len(tr)):
        kind, src, dst = tr.kind[n], tr.src_dev[n], tr.dst_dev[n]
        collective = tr.src_op[n] < 0
        name = kind if collective else f"send -> device {dst}"
        tid = track(src, name)
        ts, dur = tr.start[n] * sc, (tr.end[n] - tr.start[n]) * sc
        label = kind if collective else f"{kind} {timeline.ops[tr.src_op[n]]} -> {timeline.ops[tr.dst_op[n]]}"
        events.append({"ph": "X", "name": label, "cat": kind, "pid": src, "tid": tid, "ts": ts, "dur": dur,
                       "args": {"bytes": tr.nbytes[n], "src": src, "dst": dst}})
        if not collective:
            # flow arrow: from the send slice to the consuming op on the receiving device
            j = tr.dst_op[n]
            events.append({"ph": "s", "name": kind, "cat": "flow", "id": n, "pid": src, "tid": tid, "ts": ts})
            events.append({"ph": "f", "bp": "e", "name": kind, "cat": "flow", "id": n, "pid": dst,
                           "tid": COMPUTE_TID, "ts": start[j] * sc})
    if memory:
        unit = timeline.costs.memory_unit
        for d in range(p):
            times, mem = timeline.memory_events(d, include_weights=True)
            base = float(timeline.static_memory()[d])
            events.append({"ph": "C", "name": "memory", "pid": d, "ts": 0.0, "args": {unit: base}})
            for t, v in zip(times.tolist(), mem.tolist()):
                events.append({"ph": "C", "name": "memory", "pid": d, "ts": t * sc, "args": {unit: v}})
    other = {"semantics": timeline.semantics, "schedule": timeline.schedule.describe(),
             "time_unit": timeline.time_unit, "us_per_time_unit": sc, "memory_unit": timeline.costs.memory_unit,
             "makespan": timeline.makespan}
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def write_trace(timeline: Timeline, path: str | Path, memory: bool = True) -> Path:
    """Write :func:`chrome_trace` to ``path`` (JSON); returns the path.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> out = write_trace(run(build("1f1b", p=2, m=2)), os.path.join(tempfile.mkdtemp(), "t.json"))
        >>> json.loads(out.read_text())["otherData"]["semantics"]
        'async'
    """
    path = Path(path)
    try:
        with path.open("w", encoding="utf-8") as fh:
            json.dump(chrome_trace(timeline, memory), fh)
    except OSError as exc:
        raise ScheduleFileError(str(path), "", f"cannot write the trace: {exc.strerror or exc}") from None
    return path
