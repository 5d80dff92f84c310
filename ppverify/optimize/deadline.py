"""One wall-clock deadline for a whole ``optimize`` run: created when the command starts (from
``--time-limit``, on the monotonic clock) and passed down through model building, bounds,
heuristics, local search and the CP-SAT call, so that every phase stops in time.

Long loops call :meth:`Deadline.check` at coarse intervals; it raises :class:`WallLimitReached`
once the deadline has passed, and :func:`ppverify.optimize.optimize` turns that into a result
that says which phase the clock cut (never a traceback). The deterministic work limits of the
solver are unchanged: a run not cut by the clock gives the same answer on any machine load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


class WallLimitReached(Exception):
    """The run's wall-clock deadline passed inside a phase (caught by ``optimize``)."""


@dataclass(frozen=True)
class Deadline:
    """``end`` on the ``time.monotonic()`` clock; ``limit`` the seconds it was made from.

    Example:
        >>> d = Deadline.after(60.0)
        >>> d.expired(), 59.0 < d.remaining() <= 60.0
        (False, True)
        >>> Deadline.after(0.0).expired()
        True
    """

    end: float
    limit: float

    @staticmethod
    def after(seconds: float) -> Deadline:
        """A deadline ``seconds`` from now."""
        return Deadline(time.monotonic() + float(seconds), float(seconds))

    @property
    def start(self) -> float:
        """When the deadline was created (monotonic clock)."""
        return self.end - self.limit

    def remaining(self) -> float:
        """Seconds left (negative once passed)."""
        return self.end - time.monotonic()

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return time.monotonic() >= self.end

    def at(self, share: float) -> Deadline:
        """An earlier deadline: ``share`` of the whole limit after the start (for one phase).

        Example:
            >>> d = Deadline(100.0, 10.0)
            >>> d.at(0.5).end
            95.0
        """
        return Deadline(self.start + share * self.limit, share * self.limit)

    def check(self) -> None:
        """Raise :class:`WallLimitReached` once the deadline has passed.

        Example:
            >>> Deadline.after(0.0).check()
            Traceback (most recent call last):
            ...
            ppverify.optimize.deadline.WallLimitReached
        """
        if time.monotonic() >= self.end:
            raise WallLimitReached()


def check(deadline: Deadline | None) -> None:
    """:meth:`Deadline.check` when a deadline is given (none: never raises).

    Example:
        >>> check(None)
    """
    if deadline is not None:
        deadline.check()
