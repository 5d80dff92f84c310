"""The parent side of :func:`~ppverify.measure.workers.run_workers` while its workers run: collect
each rank's result, detect a hang per phase (:class:`~ppverify.measure.hang.MeasureTimeout`, naming
each rank's blocked action), and turn a failure into one :class:`WorkerError` that names its first
cause (a rank's own error, not its peers' closed connections; or a worker killed without a word).
"""

from __future__ import annotations

import contextlib
import queue
import signal
import time
from pathlib import Path
from typing import Any

from ..core.errors import PPVerifyError
from .hang import MeasureTimeout
from .status import read_status
from .worker_side import MAIN_GUARD_ADVICE, MAIN_REIMPORT_EXIT


class WorkerError(PPVerifyError):
    """A worker raised: the schedule or input was rejected at run time (one line: rank and error).

    Example:
        >>> str(WorkerError(1, "AssertionError: Computing 1F0 before receiving input"))
        'rank 1 failed: AssertionError: Computing 1F0 before receiving input'
    """

    def __init__(self, rank: int, message: str) -> None:
        self.rank, self.message = rank, message
        super().__init__(f"rank {rank} failed: {message}")


def _kill_all(procs: list) -> None:
    # here beside the collector, which stops every worker on a hang; run_workers stops them on its way out
    for pr in procs:
        with contextlib.suppress(Exception):
            if pr.is_alive():
                pr.kill()
    for pr in procs:
        with contextlib.suppress(Exception):
            pr.join(timeout=5)


def _collect(
    procs: list, results: Any, status_paths: list[Path], world_size: int, timeout: float, startup_timeout: float
) -> list[Any]:
    # startup_timeout: run_workers passes its STARTUP_TIMEOUT, read at each call
    out: dict[int, Any] = {}
    started = time.monotonic()
    phase_start: dict[int, float] = {}
    seen: dict[int, tuple[int, str]] = {}
    moved = started  # when a rank last changed action or finished: a stuck run stops moving, a slow one does not
    while len(out) < world_size:
        try:
            rank, ok, value = results.get(timeout=0.05)
        except queue.Empty:
            pass
        else:
            if not ok:
                raise _first_cause(rank, value, results, procs, status_paths)
            out[rank] = value
            moved = time.monotonic()
            continue
        now = time.monotonic()
        states = {r: read_status(status_paths[r]) for r in range(world_size) if r not in out}
        if states != seen:
            seen, moved = states, now
        for phase, _ in states.values():
            if phase >= 0:
                phase_start.setdefault(phase, now)
        lagging = min((ph for ph, _ in states.values()), default=-1)
        if lagging < 0:
            late = now - started > startup_timeout
        else:
            late = now - phase_start.get(lagging, now) > timeout
        dead = [r for r, pr in enumerate(procs) if r not in out and not pr.is_alive() and pr.exitcode not in (0, None)]
        if dead and results.empty():
            time.sleep(0.2)  # a dying worker may still be flushing its error
            if results.empty():
                r = dead[0]
                raise WorkerError(r, death_message(procs[r].exitcode, states.get(r, (-1, ""))[1]))
        if late:
            blocked = {r: text for r, (_, text) in states.items()}
            _kill_all(procs)
            raise MeasureTimeout(timeout if lagging >= 0 else startup_timeout, blocked, now - moved)
    return [out[r] for r in range(world_size)]


def death_message(exitcode: int, doing: str) -> str:
    """Why a worker process ended without reporting: the signal that killed it (a negative exit
    code, as multiprocessing gives it) or its exit code, and what it was doing then.

    A worker that exits while starting may have failed to re-import the caller's main module,
    which multiprocessing does first: its own error is on stderr, and one that re-ran measure (a
    script without ``if __name__ == "__main__":``) exits with :data:`MAIN_REIMPORT_EXIT`, named.

    Example:
        >>> death_message(-9, "1B0")
        'worker process killed by signal 9 (SIGKILL) while in 1B0; every worker stopped'
        >>> death_message(3, "")
        'worker process exited with code 3; every worker stopped'
        >>> death_message(86, "starting")  # doctest: +ELLIPSIS
        'worker process exited while starting: a worker re-imports the main module ... every worker stopped'
    """
    if exitcode == MAIN_REIMPORT_EXIT:
        return f"worker process exited while starting: {MAIN_GUARD_ADVICE}; every worker stopped"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown signal"
        what = f"killed by signal {-exitcode} ({name})"
    else:
        what = f"exited with code {exitcode}"
    hint = ""
    if doing == "starting" and exitcode > 0:  # the re-import of the main module comes first in a worker
        hint = " (its error is printed above; a worker first re-imports the main module of the measuring script)"
    return f"worker process {what}{f' while in {doing}' if doing else ''}{hint}; every worker stopped"


_SECONDARY = ("Connection closed by peer", "Connection reset by peer", "gloo/transport")


def _first_cause(
    rank: int, message: str, results: Any, procs: list | None = None, status_paths: list[Path] | None = None
) -> WorkerError:
    # when one rank fails, its peers' sockets close and they fail too ("connection closed"):
    # gather errors for a moment and report the one that is not such a consequence
    status = [read_status(sp)[1] for sp in status_paths] if status_paths else []
    errors = [(rank, message)]
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        try:
            r, ok, value = results.get(timeout=0.05)
        except queue.Empty:
            continue
        if not ok:
            errors.append((r, value))
    for r, msg in errors:
        if not any(word in msg for word in _SECONDARY):
            return WorkerError(r, msg)
    # every error is a closed connection: a worker that died without a word (killed) is the cause
    reported = {r for r, _ in errors}
    for r, pr in enumerate(procs or []):
        if r not in reported and not pr.is_alive() and pr.exitcode not in (0, None):
            return WorkerError(r, death_message(pr.exitcode, status[r] if r < len(status) else ""))
    return WorkerError(*errors[0])
