"""The link as a profiler trace shows it (``calibrate --from-trace``): one-way times of the
point-to-point transfers whose RECV was posted before the SEND (SEND post to the completion of the
receive work), against the bytes of the recorded shapes, and the latency and bandwidth fitted to
them by :func:`~ppverify.measure.fit.fit_link` (one message size: latency only).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Any

from .record import Event

#: bandwidth written when the trace holds one message size (the line has no slope: latency only)
LATENCY_ONLY_BPS = 1e15

#: a receive transfer of an imported step: ``<stage>RECV_<F|B><microbatch>``
_RECV = re.compile(r"(\d+)RECV_([FB])(\d+)$")


def link_samples(
    events: Sequence[Sequence[Event]],
    arrivals: dict[tuple[str, int, int], tuple[float, float]],
    model_bytes: Sequence[float] = (),
) -> list[tuple[float, float]]:
    """``(bytes, one-way s)`` of each transfer whose RECV was posted before its SEND: SEND post to
    the receive's completion. ``arrivals[(direction, receiving stage, mb)] = (end ns, bytes)``;
    a transfer whose recorded bytes are 0 (a trace without ``record_shapes``) takes its
    boundary's bytes from ``model_bytes`` (``model_bytes[b]``: between stages b and b + 1, an
    activation forward and its gradient backward) when given.

    Example:
        >>> ev = [[Event("SEND_F", 0, 0, 5000, 5000)], [Event("RECV_F", 1, 0, 1000, 1000)]]
        >>> link_samples(ev, {("F", 1, 0): (65000.0, 128.0)})
        [(128.0, 6e-05)]
        >>> link_samples(ev, {("F", 1, 0): (65000.0, 0.0)}, model_bytes=(4096.0,))
        [(4096.0, 6e-05)]
    """
    send: dict[tuple[str, int, int], int] = {}
    post: dict[tuple[str, int, int], int] = {}
    for evs in events:
        for e in evs:
            if e.kind == "SEND_F":
                send[("F", e.stage + 1, e.mb)] = e.start_ns
            elif e.kind == "SEND_B":
                send[("B", e.stage - 1, e.mb)] = e.start_ns
            elif e.kind in ("RECV_F", "RECV_B"):
                post[(e.kind[-1], e.stage, e.mb)] = e.start_ns
    out = []
    for key, (end, nbytes) in sorted(arrivals.items()):
        if key in send and key in post and post[key] <= send[key] < end:
            boundary = key[1] - 1 if key[0] == "F" else key[1]
            if not nbytes and 0 <= boundary < len(model_bytes):
                nbytes = float(model_bytes[boundary])
            out.append((float(nbytes), (end - send[key]) / 1e9))
    return out


def arrivals(step: Any) -> dict[tuple[str, int, int], tuple[float, float]]:
    """``{(direction, receiving stage, mb): (end ns, bytes)}`` of the receive transfers of a
    :func:`~ppverify.io.trace_step.recorded_step` (its spans are in microseconds).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> t = NS(action="1RECV_F0", span=NS(end=65.0, nbytes=128.0))
        >>> arrivals(NS(transfers=[[t, NS(action="0SEND_F0", span=None)]]))
        {('F', 1, 0): (65000.0, 128.0)}
    """
    out: dict[tuple[str, int, int], tuple[float, float]] = {}
    for trs in step.transfers:
        for t in trs:
            m = _RECV.match(t.action)
            if m:
                out[(m.group(2), int(m.group(1)), int(m.group(3)))] = (t.span.end * 1000.0, t.span.nbytes)
    return out


def fit_trace_link(samples: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """``(latency s, bandwidth bytes/s)`` of ``(bytes, one-way s)`` samples: the line along
    the lower envelope of each size's median (:func:`~ppverify.measure.fit.fit_link`; the median,
    as a late transfer holds waits of its consumer's own), with :data:`LATENCY_ONLY_BPS` for a line without slope (one size, or none: latency 0).

    Example:
        >>> fit_trace_link([(128.0, 1e-4), (128.0, 3e-4), (128.0, 2e-4)])  # one size: the median
        (0.0002, 1000000000000000.0)
        >>> fit_trace_link([])
        (0.0, 1000000000000000.0)
    """
    from .fit import fit_link

    by_size: dict[float, list[float]] = {}
    for b, t in samples:
        by_size.setdefault(b, []).append(t)
    latency, bandwidth = fit_link([(b, statistics.median(ts)) for b, ts in sorted(by_size.items())])
    return latency, LATENCY_ONLY_BPS if bandwidth == float("inf") else bandwidth


__all__ = ["LATENCY_ONLY_BPS", "arrivals", "fit_trace_link", "link_samples"]
