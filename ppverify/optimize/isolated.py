"""CP-SAT's interleaved search run in a forked child process, so that a native abort cannot take
the command down with it.

With several workers in a fixed order (``interleave_search``: what makes a work limit give the
same answer at any load), OR-Tools 9.15 sometimes aborts the whole process: ``Check failed:
heuristics.fixed_search != nullptr``, exit 134, nothing printed (about one run in 25 of ``gap
chimera -p 4 -m 8 --work-limit 0.5`` on a loaded machine; which run depends on thread timing, not
on the model). ``LoadCpModel`` can return before it sets a worker's fixed search, and
``SolveLoadedCpModel`` then CHECKs it. No parameter that keeps the same answers was found to rule
it out, so :func:`solve_in_child` runs the very same solve in a ``fork``: the child solves (same
model, parameters and callbacks: the progress line still comes, from the child) and sends its
response back as text; the parent reads it into its solver, so ``solver.value(x)``,
``objective_value`` and the statistics read as after ``solver.solve``. A child that dies (SIGABRT)
is solved again, at most :data:`ATTEMPTS` times in all (the abort depends on timing: a retry runs
clean), then :class:`SolverCrashError` (one line, exit 2), never a lost process.

Signals: the child ignores SIGINT, SIGTERM and SIGHUP (a terminal's Ctrl-C reaches the whole
process group); the parent's signal handling stops it through a pipe (:class:`_ChildStop`, kept
with the running solves of :mod:`.interrupt`), so Ctrl-C still ends the search with its best
schedule; a parent that dies closes the pipe, which stops the child too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from ..core.errors import PPVerifyError
from .interrupt import stoppable

#: solves of one model before :class:`SolverCrashError` (an abort in one try in ~100 under load)
ATTEMPTS = 3


class SolverCrashError(PPVerifyError):
    """CP-SAT aborted the process that ran it in every try (the command's one line, exit 2).

    Example:
        >>> str(SolverCrashError(3, "signal 6 (SIGABRT)"))[:48]
        'CP-SAT aborted in all 3 tries (signal 6 (SIGABRT'
    """

    def __init__(self, attempts: int, how: str) -> None:
        super().__init__(
            f"CP-SAT aborted in all {attempts} tries ({how}; OR-Tools' interleaved search): "
            "run again, or give --workers 1"
        )


class _ChildStop:
    """What :func:`.interrupt.stop_all` stops for a search running in a child: one byte on the
    child's control pipe (the child then calls ``stop_search`` and returns its best)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def stop_search(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.fd, b"s")


def _stop_on_request(fd: int, solver: cp_model.CpSolver) -> None:
    """In the child: stop the search on a byte from the parent, or when the parent is gone."""
    with contextlib.suppress(OSError):
        os.read(fd, 1)  # a byte (stop) or end-of-file (the parent closed the pipe or died)
    solver.stop_search()


def _child(solver: cp_model.CpSolver, model: cp_model.CpModel, callback: Any, control: int, out: int) -> None:
    """The forked child: solve, write the response as text, end without Python's clean-up (the
    parent's buffers and handlers are the parent's)."""
    code = 70
    try:
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)  # the parent's signal pipe is the parent's
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(getattr(signal, name), signal.SIG_IGN)
        threading.Thread(target=_stop_on_request, args=(control, solver), daemon=True).start()
        if callback is not None:
            solver.solve(model, callback)
        else:
            solver.solve(model)
        data = str(solver.response_proto).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
        code = 0
    except BaseException:  # the parent sees a failed try and solves again
        code = 70
    finally:
        os._exit(code)


def _one_try(solver: cp_model.CpSolver, model: cp_model.CpModel, callback: Any) -> tuple[Any, str]:
    """One solve in a child: ``(response, "")``, or ``(None, how the child ended)``."""
    for stream in (sys.stdout, sys.stderr):  # else the child would write their buffers again
        with contextlib.suppress(Exception):
            stream.flush()
    control_r, control_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in os._exit
        os.close(control_w)
        os.close(out_r)
        _child(solver, model, callback, control_r, out_w)
    os.close(control_r)
    os.close(out_w)
    chunks: list[bytes] = []
    done = False
    try:
        with stoppable(_ChildStop(control_w)):
            while chunk := os.read(out_r, 1 << 16):
                chunks.append(chunk)
        done = True
    finally:
        os.close(out_r)
        os.close(control_w)  # end-of-file: a child still searching stops
        if not done:  # a second Ctrl-C raised here: the child must not outlive the command
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        response = cmh.CpSolverResponse()
        response.parse_text_format(b"".join(chunks).decode())
        return response, ""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return None, f"signal {sig} ({signal.Signals(sig).name})"
    return None, f"exit code {os.WEXITSTATUS(status)}"


def solve_in_child(
    solver: cp_model.CpSolver, model: cp_model.CpModel, callback: Any = None, attempts: int = ATTEMPTS
) -> cp_model.CpSolverStatus:
    """``solver.solve(model, callback)`` run in a forked child (module doc): the same status, and
    the solver reads as after its own solve. A retry gets the wall seconds left.

    Example:
        >>> model = cp_model.CpModel()
        >>> x = model.new_int_var(0, 7, "x")
        >>> _ = model.add(x >= 3)
        >>> model.minimize(x)
        >>> solver = cp_model.CpSolver()
        >>> solver.parameters.num_workers, solver.parameters.interleave_search = 2, True
        >>> solve_in_child(solver, model) == cp_model.OPTIMAL, solver.value(x), solver.objective_value
        (True, 3, 3.0)
    """
    t0, wall = time.monotonic(), solver.parameters.max_time_in_seconds
    how = ""
    for _ in range(attempts):
        response, how = _one_try(solver, model, callback)
        if response is not None:
            solver._CpSolver__response = response  # type: ignore[attr-defined]  # what CpSolver.solve sets (9.15)
            return response.status
        solver.parameters.max_time_in_seconds = max(0.01, wall - (time.monotonic() - t0))
    raise SolverCrashError(attempts, how)


__all__ = ["ATTEMPTS", "SolverCrashError", "solve_in_child"]
