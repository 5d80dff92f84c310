"""``measure --realtime``: the workers at the lowest real-time priority (``SCHED_FIFO``), so that
other jobs on the machine, even at ``nice 19``, do not delay their wake-ups (gloo's hand-overs
stretch twentyfold beside one busy process otherwise; ``scripts/bench_gloo_stall.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import ParameterError

#: the SCHED_FIFO priority of ``realtime`` workers: the lowest, above every ordinary process
REALTIME_PRIORITY = 1


def realtime_allowed(status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process may start its workers at real-time priority (``SCHED_FIFO``): Linux,
    and root, the ``CAP_SYS_NICE`` capability or a real-time priority limit (``ulimit -r``) of 1
    or more.

    Example:
        >>> isinstance(realtime_allowed(), bool)
        True
    """
    if not hasattr(os, "SCHED_FIFO"):
        return False
    import resource

    if resource.getrlimit(resource.RLIMIT_RTPRIO)[0] not in (0,):  # RLIM_INFINITY or >= 1
        return True
    try:
        caps = next(line for line in status.read_text().splitlines() if line.startswith("CapEff:"))
    except (OSError, StopIteration):
        return os.geteuid() == 0
    return bool(int(caps.split()[1], 16) >> 23 & 1)  # CAP_SYS_NICE


def check_realtime(realtime: bool, world_size: int = 1, compute: str = "sleep") -> None:
    """Refuse ``realtime`` (one line, before any worker) where :func:`realtime_allowed` says no,
    or, with ops that really compute (``compute="real"``), for more workers than the cores this
    process may use: at real-time priority a worker that computes keeps its core until it blocks,
    so one worker too many would wait behind another's whole op. Sleeping ops block at once, and a
    worker at that priority holds a core only for its actions' Python steps (and, profiled, never
    for its trace's export: :func:`leave_realtime`), so three of them share two cores.

    Example:
        >>> check_realtime(False, 64)
        >>> check_realtime(True, 10_000, "real")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter realtime=True: ...
    """
    if not realtime:
        return
    if not realtime_allowed():
        raise ParameterError(
            "realtime",
            True,
            "needs the SCHED_FIFO policy: Linux, and root, CAP_SYS_NICE or a real-time priority limit (ulimit -r) >= 1",
        )
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if compute != "sleep" and world_size > cores:
        raise ParameterError(
            "realtime",
            True,
            f"with --compute {compute} needs a core per worker: {world_size} workers, {cores} cores "
            "(at real-time priority a worker that computes keeps its core until it blocks)",
        )


def enter_realtime() -> None:
    """Put this process (a worker, before it starts its threads) at :data:`REALTIME_PRIORITY`.

    Example:
        >>> enter_realtime() if realtime_allowed() and os.cpu_count() else None  # doctest: +SKIP
    """
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_PRIORITY))


def leave_realtime() -> None:
    """Put the calling thread back at the ordinary policy (``SCHED_OTHER``) if it runs at a
    real-time one; nothing otherwise. A profiled worker calls it before it exports its trace
    (hundreds of milliseconds of CPU): at real-time priority the export would keep a core from the
    ranks still in their last step.

    Example:
        >>> leave_realtime()  # an ordinary thread: nothing changes
    """
    if not hasattr(os, "sched_getscheduler"):
        return
    if os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
