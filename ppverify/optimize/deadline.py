"""One wall-clock deadline for a whole ``optimize`` run: created when the command starts (from
``--time-limit``, on the monotonic clock) and passed down through model building, bounds,
heuristics, local search and the CP-SAT call, so that every phase stops in time.

Long loops call :meth:`Deadline.check` at coarse intervals; it raises :class:`WallLimitReached`
once the deadline has passed, and :func:`ppverify.optimize.optimize` turns that into a result
that says which phase the clock cut (never a traceback). The deterministic work limits of the
solver are unchanged: a run not cut by the clock gives the same answer on any machine load.

A deadline may also carry a stop event (:func:`ppverify.optimize.solver_run.interruptible`: set
by Ctrl-C): once it is set the deadline has passed for every phase, which then ends as if the
clock had run out, and :meth:`Deadline.stopped` tells the two apart.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


class WallLimitReached(Exception):
    """The run's wall-clock deadline passed inside a phase (caught by ``optimize``)."""


@dataclass(frozen=True)
class Deadline:
    """``end`` on the ``time.monotonic()`` clock; ``limit`` the seconds it was made from;
    ``stop`` an event that ends it early (None: only the clock does).

    Example:
        >>> d = Deadline.after(60.0)
        >>> d.expired(), 59.0 < d.remaining() <= 60.0
        (False, True)
        >>> Deadline.after(0.0).expired()
        True
        >>> stop = threading.Event()
        >>> d = Deadline.after(60.0, stop)
        >>> stop.set()
        >>> d.at(0.5).expired(), d.remaining(), d.stopped()
        (True, 0.0, True)
    """

    end: float
    limit: float
    stop: threading.Event | None = field(default=None, compare=False, repr=False)

    @staticmethod
    def after(seconds: float, stop: threading.Event | None = None) -> Deadline:
        """A deadline ``seconds`` from now (or once ``stop`` is set)."""
        return Deadline(time.monotonic() + float(seconds), float(seconds), stop)

    def stopped(self) -> bool:
        """True once the stop event is set (an interrupt, not the clock)."""
        return self.stop is not None and self.stop.is_set()

    @property
    def start(self) -> float:
        """When the deadline was created (monotonic clock)."""
        return self.end - self.limit

    def remaining(self) -> float:
        """Seconds left (negative once passed; 0 once stopped)."""
        left = self.end - time.monotonic()
        return min(left, 0.0) if self.stopped() else left

    def expired(self) -> bool:
        """True once the deadline has passed (or the stop event is set)."""
        return self.stopped() or time.monotonic() >= self.end

    def at(self, share: float) -> Deadline:
        """An earlier deadline: ``share`` of the whole limit after the start (for one phase).

        Example:
            >>> d = Deadline(100.0, 10.0)
            >>> d.at(0.5).end
            95.0
        """
        return Deadline(self.start + share * self.limit, share * self.limit, self.stop)

    def check(self) -> None:
        """Raise :class:`WallLimitReached` once the deadline has passed.

        Example:
            >>> Deadline.after(0.0).check()
            Traceback (most recent call last):
            ...
            ppverify.optimize.deadline.WallLimitReached
        """
        if self.expired():
            raise WallLimitReached()


def check(deadline: Deadline | None) -> None:
    """:meth:`Deadline.check` when a deadline is given (none: never raises).

    Example:
        >>> check(None)
    """
    if deadline is not None:
        deadline.check()
