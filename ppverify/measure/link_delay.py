"""An emulated slow link for the measured level (``measure --link-delay S``).

The worker processes of ``measure`` share one machine, so their point-to-point transfers take
what gloo on loopback takes (tens of microseconds plus the hand-over). A schedule designed for a
network whose transfers take milliseconds cannot show its advantage there. With a link delay
``D`` every cross-rank message also carries its sender's clock (CLOCK_MONOTONIC, one clock for
all processes of the host) at the moment the SEND was posted, and the consumer op does not start
before ``post + D``: the data arrives no earlier than a link of latency ``D`` would deliver it.
The wait happens where a rank waits for its input anyway (before the op's recorded start), so it
never blocks the sender and never delays a local hand-over between two stages of one rank.

The stamp travels as a second tensor of the same batch of point-to-point operations (directly
after each data tensor), so the pairing of sends and receives between two ranks, which gloo
matches in posting order, is the runtime's own.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist

_now = time.monotonic_ns


def stamp() -> Any:
    """A one-element tensor holding this process's CLOCK_MONOTONIC time in ns (float64 holds it
    exactly for 104 days of uptime).

    Example:
        >>> float(stamp()[0]) > 0
        True
    """
    return torch.tensor([float(_now())], dtype=torch.float64)


def stamped_sends(ops: list[Any]) -> list[Any]:
    """``ops`` (``dist.P2POp`` isends) with a clock stamp sent after each to the same peer.

    Example:
        >>> stamped_sends([])
        []
    """
    if not ops:
        return ops
    t = stamp()
    return [x for op in ops for x in (op, dist.P2POp(dist.isend, t, op.peer, op.group, op.tag))]


def stamped_recvs(ops: list[Any]) -> tuple[list[Any], list[Any]]:
    """``ops`` (``dist.P2POp`` irecvs) with a receive of the sender's stamp after each, and the
    stamp buffers (filled once the batch completes).

    Example:
        >>> stamped_recvs([])
        ([], [])
    """
    bufs = [torch.zeros(1, dtype=torch.float64) for _ in ops]
    out = [x for op, b in zip(ops, bufs) for x in (op, dist.P2POp(dist.irecv, b, op.peer, op.group, op.tag))]
    return out, bufs


def wait_for_link(stamps: list[Any], delay_s: float) -> None:
    """Sleep until ``delay_s`` after the latest of the received ``stamps`` (no sleep when that
    time has passed).

    Example:
        >>> t0 = _now(); wait_for_link([stamp()], 0.002); _now() - t0 >= 2_000_000
        True
    """
    if not stamps:
        return
    due = max(int(b[0].item()) for b in stamps) + round(delay_s * 1e9)
    left = due - _now()
    if left > 0:
        time.sleep(left / 1e9)
