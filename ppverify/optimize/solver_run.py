"""How a long CP-SAT run is controlled from a command: a deterministic work limit under a
wall-clock ceiling, a progress line on stderr, and Ctrl-C that ends the search but keeps its best.

Three pieces any solver command can call (``optimize`` and ``gap`` do):

* :func:`run_limits`: the work limit in CP-SAT's deterministic seconds and the wall-clock
  ceiling. The solver stops on its work count, so the same command gives the same answer at any
  machine load; ``--time-limit`` only stops a machine far slower than that work implies (the
  result then says the clock cut it). Its default, :func:`wall_ceiling`, is four times the work
  plus :data:`WALL_ALLOWANCE` for the phases CP-SAT's work count leaves out.
  :func:`~ppverify.optimize.solver_setup.make_solver` with ``deterministic=True`` also makes
  several workers search in a fixed order (CP-SAT's ``interleave_search``: its parallel
  portfolio otherwise depends on thread timing).
* :class:`Progress`: phase, incumbent, bound and gap as they change, on one line rewritten in
  place on a terminal (one line per change otherwise, e.g. ``--progress`` into a log); fed by the
  optimizer between phases and by CP-SAT's solution and bound callbacks during a search.
* :func:`interruptible`: while it is active, Ctrl-C sets a stop event instead of raising. The
  command's signal watcher stops the CP-SAT call in progress (:mod:`.interrupt`), every later
  phase sees the event through its :class:`~ppverify.optimize.deadline.Deadline` as if the
  clock had run out, and the command prints and saves the best schedule and bound so far, then
  exits with 130. A second Ctrl-C quits at once.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

from ortools.sat.python import cp_model

from ..core.errors import ParameterError
from .problem import bound_time
from .result import relative_gap
from .solver_setup import stops_named

#: the search's default work in CP-SAT's deterministic seconds (what ``--time-limit 60`` gave before)
DEFAULT_WORK = 60.0
#: the default wall-clock ceiling as a multiple of the work limit (the same factor as ``compare``)
WALL_FACTOR = 4.0
#: seconds the default wall-clock ceiling adds to ``WALL_FACTOR`` x the work: what CP-SAT's work
#: count leaves out (the instance, the starting schedules and local search, the periodic and modulo
#: starts, the relaxation's and the windows' model building), which took 0.1-1.4 s on compare's
#: points (work 0.2) and 6 s on ``optimize --placement v -p 4 -m 8 --memory-cap 3 --work-limit 1``
#: on an idle machine, 17-20 s at load 4-6: without it the clock cut such runs at 4 x 1 s
WALL_ALLOWANCE = 30.0


def wall_ceiling(work: float, factor: float = WALL_FACTOR) -> float:
    """The default wall-clock ceiling of a run of ``work`` deterministic seconds: ``factor`` x
    ``work`` + :data:`WALL_ALLOWANCE`, so that the clock only stops a machine ``factor`` times
    slower than the counted work implies, with the phases the count leaves out on top; at most
    :data:`~ppverify.core.time_limit.MAX_SECONDS` (1e9 s, the longest ``--time-limit``), so that
    every allowed work limit has a ceiling the clock can keep (``--work-limit 1e9`` was refused
    for its own default of 4e9 + 30 s).

    Example:
        >>> wall_ceiling(0.2), wall_ceiling(60.0), wall_ceiling(1.0, factor=50.0), wall_ceiling(1e9)
        (30.8, 270.0, 80.0, 1000000000.0)
    """
    from ..core.time_limit import MAX_SECONDS

    return min(factor * float(work) + WALL_ALLOWANCE, MAX_SECONDS)


def run_limits(
    time_limit: float | None = None,
    work_limit: float | None = None,
    default_work: float = DEFAULT_WORK,
    wall_factor: float | None = WALL_FACTOR,
) -> tuple[float, float]:
    """``(work, wall)``: CP-SAT's deterministic seconds and the wall-clock ceiling of a run.

    The work defaults to ``default_work`` (:data:`DEFAULT_WORK`), but never more than a given
    ``time_limit`` (so ``--time-limit 10`` alone still means a ten-second run); the ceiling
    defaults to :func:`wall_ceiling`: ``wall_factor`` (:data:`WALL_FACTOR`) times the work plus
    :data:`WALL_ALLOWANCE` for the phases CP-SAT's work count leaves out, so that the clock only
    stops a machine that many times slower than the work implies (and then the result says so).
    ``wall_factor=None``: no ceiling unless a ``time_limit`` is given (``inf``; ``design``, whose
    work limit is per point).

    Example:
        >>> run_limits(), run_limits(10.0), run_limits(work_limit=5.0), run_limits(10.0, 5.0)
        ((60.0, 270.0), (10.0, 10.0), (5.0, 50.0), (5.0, 10.0))
        >>> run_limits(default_work=10.0, wall_factor=None), run_limits(2.0, default_work=10.0, wall_factor=None)
        ((10.0, inf), (2.0, 2.0))
        >>> run_limits(10.0, 0.0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter work-limit=0.0: must be > 0 and at most 1e9 deterministic seconds
    """
    if work_limit is not None and not 0 < work_limit <= 1e9:
        raise ParameterError("work-limit", work_limit, "must be > 0 and at most 1e9 deterministic seconds")
    if time_limit is not None and not 0 < time_limit <= 1e9:
        raise ParameterError("time-limit", time_limit, "must be > 0 and at most 1e9 seconds")
    if work_limit is None:
        work = default_work if time_limit is None else min(default_work, float(time_limit))
    else:
        work = float(work_limit)
    if time_limit is not None:
        wall = float(time_limit)
    else:
        wall = float("inf") if wall_factor is None else wall_ceiling(work, wall_factor)
    return work, wall


class Progress:
    """One progress line: ``label: phase  incumbent X  bound Y  gap Z %  (T s)``, written to
    ``stream`` whenever one of them changes. ``live`` rewrites the line in place (a terminal);
    otherwise each change is a new line. The incumbent only goes down and the bound only up, so
    callers may report what they have. Safe from CP-SAT's callback threads.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> p = Progress(out, "optimize", clock=lambda: 0.0)
        >>> p.phase("starting schedules", 12.0, 10.0)
        >>> p.update(bound=9.0)  # a lower bound than the best known: no change, no line
        >>> p.update(incumbent=11.0)
        >>> p.close()
        >>> print(out.getvalue(), end="")
        optimize: starting schedules  incumbent 12  bound 10  gap 16.67 %  (0.0 s)
        optimize: starting schedules  incumbent 11  bound 10  gap 9.09 %  (0.0 s)
    """

    def __init__(self, stream: TextIO, label: str, live: bool = False, clock: Any = time.monotonic) -> None:
        self.stream, self.label, self.live, self.clock = stream, label, live, clock
        self.t0 = clock()
        self.name = ""
        self.incumbent: float | None = None
        self.bound: float | None = None
        self.last = ""
        self.lock = threading.Lock()

    @staticmethod
    def for_command(label: str, asked: bool, stream: TextIO | None = None) -> Progress | None:
        """A progress line on ``stream`` (stderr) when it is a terminal or when ``asked``
        (``--progress``); None otherwise.

        Example:
            >>> import io
            >>> Progress.for_command("gap", False, io.StringIO()) is None
            True
        """
        out = sys.stderr if stream is None else stream
        live = bool(getattr(out, "isatty", lambda: False)())
        return Progress(out, label, live=live) if (asked or live) else None

    def phase(self, name: str, incumbent: float | None = None, bound: float | None = None) -> None:
        """A new phase starts (with the best value and bound known then)."""
        with self.lock:
            self.name = name
            self._merge(incumbent, bound)
            self._write()

    def update(self, incumbent: float | None = None, bound: float | None = None) -> None:
        """A new incumbent or bound within the current phase."""
        with self.lock:
            if self._merge(incumbent, bound):
                self._write()

    def close(self) -> None:
        """End the line (a terminal's cursor moves to the next line)."""
        with self.lock:
            if self.live and self.last:
                self.stream.write("\n")
                self.stream.flush()
            self.last = ""

    def search_callback(self, tick: float = 1.0, bounds: bool = True) -> cp_model.CpSolverSolutionCallback:
        """A CP-SAT solution callback reporting each new incumbent and (``bounds``: the model's
        bound is one of the whole problem) bound, the model's objective in ticks of ``tick``; pass
        it to ``solver.solve(model, callback)``, and :meth:`watch_bound` for bounds proven
        between solutions."""
        progress = self

        class _Callback(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                bound = bound_time(self.best_objective_bound, tick) if bounds else None
                progress.update(self.objective_value * tick, bound)

        return _Callback()

    def watch_bound(self, solver: cp_model.CpSolver, tick: float = 1.0) -> None:
        """Report the bounds CP-SAT proves during ``solver``'s next search."""
        solver.best_bound_callback = lambda b: self.update(bound=bound_time(b, tick))

    def _merge(self, incumbent: float | None, bound: float | None) -> bool:
        changed = False
        if incumbent is not None and (self.incumbent is None or incumbent < self.incumbent - 1e-9):
            self.incumbent, changed = float(incumbent), True
        if bound is not None and bound < float("inf") and (self.bound is None or bound > self.bound + 1e-9):
            self.bound, changed = float(bound), True
        return changed

    def _write(self) -> None:
        parts = [f"{self.label}: {self.name}"]
        if self.incumbent is not None:
            parts.append(f"incumbent {self.incumbent:.10g}")
        if self.bound is not None:
            parts.append(f"bound {self.bound:.10g}")
        gap = relative_gap(self.incumbent, self.bound) if self.bound is not None else None
        if gap is not None:
            parts.append(f"gap {100 * gap:.2f} %")
        text = "  ".join(parts)
        if text == self.last:
            return
        self.last = text
        line = f"{text}  ({self.clock() - self.t0:.1f} s)"
        self.stream.write(f"\r{line}\x1b[K" if self.live else line + "\n")
        self.stream.flush()


@contextlib.contextmanager
def interruptible() -> Iterator[threading.Event]:
    """Within the block, Ctrl-C (SIGINT) sets the yielded event instead of raising
    ``KeyboardInterrupt``, once: a second Ctrl-C raises as usual. Outside the main thread (where
    Python cannot install signal handlers) the event is never set by a signal.

    Example:
        >>> import os, signal
        >>> with interruptible() as stop:
        ...     os.kill(os.getpid(), signal.SIGINT)
        ...     for _ in range(1000):
        ...         if stop.is_set():
        ...             break
        ...         time.sleep(0.001)
        >>> stop.is_set()
        True
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def on_sigint(signum: int, frame: object) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C quits at once

    old = signal.signal(signal.SIGINT, on_sigint)
    try:
        with stops_named(lambda: "interrupted (Ctrl-C)" if stop.is_set() else ""):  # the status names it
            yield stop
    finally:
        signal.signal(signal.SIGINT, old)


__all__ = ["DEFAULT_WORK", "WALL_ALLOWANCE", "WALL_FACTOR", "Progress", "interruptible", "run_limits", "wall_ceiling"]
