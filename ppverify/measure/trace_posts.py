"""The time ranks spend inside their SEND/RECV posts, step by step: why a trace's steps spread.

PyTorch's runtime posts each SEND and RECV (``isend``/``irecv`` through ``c10d::send`` and
``c10d::recv_``) and goes on; on gloo a post should return within tens of microseconds. A host-side
trace's ``PP:<s>SEND_F<m>``/``PP:<s>RECV_B<m>`` range spans the post call, so its length is the time
the rank was held there (:func:`~ppverify.measure.trace_import.step_events` keeps it as the
event's end). On this 2-core machine most posts take 50-150 us and a few take milliseconds: the
call waits on gloo's own threads, which a process holding a core delays, even at ``nice 19``
(``scripts/bench_gloo_stall.py``). A rank blocked in a post starts nothing else, so a step pays
its ranks' blocked time; schedules with several stages per rank post two actions per op of a
few milliseconds, so the same blocked milliseconds weigh more in their steps.

:func:`post_times` gathers, over a trace's steps, each post's length, each step's blocked time
(on the rank that spent the most in posts beyond their median) and how the steps' makespans
follow it (least-squares slope and correlation): ``calibrate --from-trace`` prints it beside the
held-out steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .record import Event

_POSTS = ("SEND_F", "SEND_B", "RECV_F", "RECV_B")


@dataclass(frozen=True)
class PostTimes:
    """Per step (``steps``): its ``makespans`` (s) and ``blocked`` time (s: the most any rank
    spent in its posts beyond the median post each); over all posts their ``median`` and ``p90``
    length (s); ``slope`` and ``r``: the least-squares line of makespan on blocked time and their
    correlation (0 with fewer than 3 steps or no spread).

    Example:
        >>> PostTimes((1, 2), (0.2, 0.21), (0.001, 0.011), 8e-5, 2e-4).describe()
        'median 80 us, 90th percentile 200 us; blocked 1.0-11.0 ms per step'
    """

    steps: tuple[int, ...]
    makespans: tuple[float, ...]
    blocked: tuple[float, ...]
    median: float
    p90: float
    slope: float = 0.0
    r: float = 0.0

    def describe(self) -> str:
        """One line: the posts' median and 90th percentile, the blocked range, and (with 3 steps or
        more) how the makespans follow it."""
        text = (
            f"median {self.median * 1e6:.0f} us, 90th percentile {self.p90 * 1e6:.0f} us; blocked "
            f"{min(self.blocked) * 1e3:.1f}-{max(self.blocked) * 1e3:.1f} ms per step"
        )
        if len(self.steps) >= 3 and self.r:
            text += f"; makespan ~ {self.slope:.2f} x blocked + c (r = {self.r:.2f})"
        return text


def post_times(steps: Sequence[tuple[int, float, Sequence[Sequence[Event]]]]) -> PostTimes | None:
    """:class:`PostTimes` of ``(step, makespan s, per-rank events)`` triples, the events' SEND/RECV
    ends marking the end of their post calls (ns); None when no post has a length (a device-side
    or ppverify-recorded step, whose posts are instants).

    Example:
        >>> ev = lambda *durs: [[Event("RECV_F", 1, k, 0, d) for k, d in enumerate(durs)]]
        >>> pt = post_times([(1, 0.100, ev(100_000, 100_000)), (2, 0.105, ev(100_000, 5_100_000)),
        ...                  (3, 0.110, ev(100_000, 10_100_000))])
        >>> [round(b * 1e3, 1) for b in pt.blocked], round(pt.median * 1e6), round(pt.slope, 2), round(pt.r, 2)
        ([0.0, 5.0, 10.0], 100, 1.0, 1.0)
    """
    lengths = [e.end_ns - e.start_ns for _, _, evs in steps for rank in evs for e in rank if e.kind in _POSTS]
    if not lengths or not any(lengths):
        return None
    med = float(np.median(lengths))
    blocked = []
    for _, _, evs in steps:
        per_rank = [sum(max(0.0, e.end_ns - e.start_ns - med) for e in rank if e.kind in _POSTS) for rank in evs]
        blocked.append(max(per_rank, default=0.0) / 1e9)
    spans = [float(ms) for _, ms, _ in steps]
    slope = r = 0.0
    if len(steps) >= 3 and np.ptp(blocked) > 0 and np.ptp(spans) > 0:
        slope = float(np.polyfit(blocked, spans, 1)[0])
        r = float(np.corrcoef(blocked, spans)[0, 1])
    return PostTimes(
        tuple(n for n, _, _ in steps),
        tuple(spans),
        tuple(blocked),
        med / 1e9,
        float(np.quantile(lengths, 0.9)) / 1e9,
        slope,
        r,
    )


__all__ = ["PostTimes", "post_times"]
