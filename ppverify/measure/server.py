"""Imported by multiprocessing's fork server only (the first of :data:`~ppverify.measure.workers.PRELOAD`),
never by the measuring process: a worker that fails while it starts, because the process that asked
for it is gone or going (Ctrl-C to the whole process group, SIGTERM, a kill), prints nothing,
instead of a traceback of a pickle it can no longer read.

The fork server reports a failure of a worker's start-up through :data:`sys.excepthook` (its
forked child calls it before it exits), so this module sets the hook in the server, whose forked
workers inherit it. A start-up failure while the measuring process still runs is reported as
before (that process then names the worker's exit code).
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType

from .workers import process_alive

#: the measuring process, named by it when it starts the server (not the server's parent when the
#: server imports this: the measuring process may already be gone, the server adopted by init)
STARTER = int(os.environ.get("PPVERIFY_FORK_SERVER", "0") or 0) or os.getppid()
#: how long a failing worker waits to see whether the measuring process is ending, in seconds (its
#: exit, interpreter shut-down included, took over 2 s on a loaded 2-core machine)
GRACE_S = 10.0


def quiet_if_orphaned(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    """:data:`sys.excepthook` of the fork server and its workers: nothing when the measuring
    process is gone or ends within :data:`GRACE_S`, else Python's usual traceback.

    Example:
        >>> quiet_if_orphaned is not sys.__excepthook__
        True
    """
    end = time.monotonic() + GRACE_S
    while time.monotonic() < end:
        if not process_alive(STARTER):
            return
        time.sleep(0.05)
    sys.__excepthook__(kind, value, tb)


if os.environ.get("PPVERIFY_FORK_SERVER"):  # set by workers._start_server for the server alone
    sys.excepthook = quiet_if_orphaned
