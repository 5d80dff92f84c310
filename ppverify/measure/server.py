"""Imported by multiprocessing's fork server only (the first of :data:`~ppverify.measure.workers.PRELOAD`),
never by the measuring process: a worker that fails while it starts, because the process that asked
for it is gone or going (Ctrl-C to the whole process group, SIGTERM, a kill), prints nothing,
instead of a traceback of a pickle it can no longer read.

The fork server reports a failure of a worker's start-up through :data:`sys.excepthook` (its
forked child calls it before it exits), so this module sets the hook in the server, whose forked
workers inherit it. A start-up failure while the measuring process still runs is reported as
before (that process then names the worker's exit code).

It also ends the server as soon as the measuring process is gone (:func:`end_with_starter`), also
while the server still imports its preload (torch: seconds), before it reads its "alive" pipe.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType

from .workers import process_alive

#: the measuring process, named by it when it starts the server (not the server's parent when the
#: server imports this: the measuring process may already be gone, the server adopted by init)
STARTER = int(os.environ.get("PPVERIFY_FORK_SERVER", "0") or 0) or os.getppid()
#: how often the fork server checks that the measuring process still runs, in seconds
STARTER_POLL_S = 0.2
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


def end_with_starter(starter: int, every: float = STARTER_POLL_S) -> None:
    """Return once process ``starter`` is gone (a zombie counts as gone), checking every
    ``every`` seconds; run in the fork server, it then ends the server (the thread started below).

    Example:
        >>> import subprocess
        >>> child = subprocess.Popen([sys.executable, "-c", "pass"])
        >>> end_with_starter(child.pid, every=0.05)  # returns once the child has exited
        >>> child.wait()
        0
    """
    while process_alive(starter):
        time.sleep(every)


def _end_server_with_starter() -> None:
    # The server reads its "alive" pipe only once its preload (torch) is imported: a command gone
    # in the meantime left it importing at full CPU for 5-20 s, and multiprocessing's resource
    # tracker with it (the tracker's pipe, passed with each worker the command asked for, waited
    # unreceived in the server's socket, so the tracker saw no end of file either). Closing the
    # server ends both; its workers die with it (PR_SET_PDEATHSIG).
    end_with_starter(STARTER)
    os._exit(0)


if os.environ.get("PPVERIFY_FORK_SERVER"):  # set by workers._start_server for the server alone
    sys.excepthook = quiet_if_orphaned
    threading.Thread(target=_end_server_with_starter, name="ppverify-starter-watch", daemon=True).start()
