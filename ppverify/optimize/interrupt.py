"""Stopping CP-SAT calls in progress on Ctrl-C or SIGTERM.

Python runs a signal handler only between bytecodes, and the thread that called
``CpSolver.solve`` waits inside C++ until the solver stops (up to its whole time limit). So each
solve runs inside :func:`stoppable`, which keeps the solver in a set of running calls, and the
CLI's signal watcher thread calls :func:`stop_all` (CP-SAT's ``stop_search`` is safe from another
thread): the solve returns within a moment and the pending signal then stops the command. The set
only ever holds calls in progress, so it is the one piece of state shared across calls.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_RUNNING: set[Any] = set()
_LOCK = threading.Lock()


@contextlib.contextmanager
def stoppable(solver: Any) -> Iterator[None]:
    """Run a block (a ``solver.solve`` call) that :func:`stop_all` may stop.

    Example:
        >>> from ortools.sat.python import cp_model
        >>> m = cp_model.CpModel(); x = m.new_int_var(0, 3, "x"); m.maximize(x)
        >>> s = cp_model.CpSolver()
        >>> with stoppable(s):
        ...     s.solve(m) == cp_model.OPTIMAL
        True
    """
    with _LOCK:
        _RUNNING.add(solver)
    try:
        yield
    finally:
        with _LOCK:
            _RUNNING.discard(solver)


def stop_all() -> int:
    """Ask every solve in progress to stop now (from any thread); returns how many there were.

    Example:
        >>> stop_all()
        0
    """
    with _LOCK:
        running = list(_RUNNING)
    for solver in running:
        with contextlib.suppress(Exception):
            solver.stop_search()
    return len(running)
