"""The wall-clock limit of one command (``--time-limit``): :func:`time_limit` gives a block its
seconds, :func:`check_time` and :func:`seconds_left` are what the work inside reads, and a time-out
is a :class:`TimeLimitError` (a :class:`~ppverify.core.limits.LimitError`: one line, exit 2).

The deadline is a context variable rather than a parameter threaded through every solver call,
scoped to one block.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from .limits import LimitError

#: the :func:`time_limit` in force: (deadline, flag, seconds, clock), read by :func:`check_time`
_DEADLINE: contextvars.ContextVar[tuple[float, str, float, Callable[[], float]] | None] = contextvars.ContextVar(
    "ppverify_deadline", default=None
)

#: longest ``--time-limit`` in seconds (about 30 years: the system's interval timer ends near 2**31 s)
MAX_SECONDS = 1e9
#: a command given ``--time-limit T`` with a hard stop ends by ``T`` times this (the issue's 10 %)
HARD_STOP_FACTOR = 1.08


class TimeLimitError(LimitError):
    """A command ran out of its ``--time-limit`` before an answer (no verdict either way).

    Example:
        >>> str(TimeLimitError("--time-limit 2", "no answer within 2 s"))
        '--time-limit 2: no answer within 2 s'
    """


@contextlib.contextmanager
def time_limit(
    seconds: float | None,
    flag: str = "--time-limit",
    hard_stop: str | None = None,
    clock: Callable[[], float] | None = None,
) -> Iterator[None]:
    """Give the block ``seconds`` of wall-clock time; past them it ends with :class:`TimeLimitError`.

    Nothing is raised asynchronously (no signal handler raising at an arbitrary bytecode, inside a
    ctypes call, a ``Thread.start`` or a finalizer). The limit acts at three kinds of places:

    * cooperative checks: :func:`check_time` between pieces of work (Z3 text pieces, properties)
      and at the end of the block, so that no answer is given after the limit;
    * the solvers' own limits: :func:`seconds_left` gives a Z3 ``timeout`` (or CP-SAT
      ``max_time_in_seconds``) that ends a search at the deadline with ``unknown``, which the
      caller reads as the time-out (:func:`ppverify.verify.smt.decide`);
    * a watchdog thread that only *asks*: at the deadline it calls ``interrupt()`` on Z3's context
      (a flag Z3's C++ code polls; the call in progress returns ``unknown``); an exception that
      leaves the block after the deadline (a call interrupted that way) becomes the time-out.

    Some native work polls nothing (Z3's simplifier ignores interrupts). With ``hard_stop`` (the
    command's name, e.g. ``"ppverify verify"``), a block still running at :data:`HARD_STOP_FACTOR`
    times the limit has the watchdog print the time-out's one line and end the process with exit
    2; only for commands with nothing half-written to lose (outputs are written atomically after
    the answer). ``None`` means no limit; ``clock`` (default :func:`time.monotonic`) is what the
    cooperative checks read, so a test can run a limit without waiting for it.

    Example:
        >>> with time_limit(0.05):
        ...     while True:
        ...         check_time()
        Traceback (most recent call last):
        ...
        ppverify.core.time_limit.TimeLimitError: --time-limit 0.05: no answer within 0.05 s
    """
    import math
    import threading
    import time

    if seconds is None:
        yield
        return
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
        raise LimitError(f"{flag} {seconds}", f"must be a finite number of seconds > 0, at most {MAX_SECONDS:g}")
    now = clock or time.monotonic
    done, fired = threading.Event(), threading.Event()
    token = _DEADLINE.set((now() + seconds, flag, float(seconds), now))
    watchdog = threading.Thread(
        target=_watch, args=(seconds, done, fired, hard_stop, flag), name="ppverify-time-limit", daemon=True
    )
    watchdog.start()
    try:
        yield
        check_time()  # an answer found after the limit is no answer within it
    except TimeLimitError:
        raise
    except Exception:
        if fired.is_set() or _left() <= 0:  # interrupted by the limit, not a failure of its own
            raise _time_out() from None
        raise
    finally:
        done.set()
        _DEADLINE.reset(token)


def _watch(seconds: float, done: Any, fired: Any, hard_stop: str | None, flag: str) -> None:
    """The watchdog of :func:`time_limit`: it never raises into the main thread, only asks Z3 to
    stop at the deadline, and (``hard_stop``) ends the process at :data:`HARD_STOP_FACTOR` times it."""
    import os
    import sys

    if done.wait(seconds):
        return
    fired.set()
    z3 = sys.modules.get("z3")
    if z3 is not None:
        with contextlib.suppress(Exception):
            z3.main_ctx().interrupt()
    if hard_stop is None or done.wait(seconds * (HARD_STOP_FACTOR - 1)):
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        print(f"{hard_stop}: error: {flag} {seconds:g}: no answer within {seconds:g} s (stopped)", file=sys.stderr)
        sys.stderr.flush()
    os._exit(2)


def _left() -> float:
    limit = _DEADLINE.get()
    return float("inf") if limit is None else limit[0] - limit[3]()


def _time_out() -> TimeLimitError:
    limit = _DEADLINE.get()
    flag, seconds = (limit[1], limit[2]) if limit is not None else ("--time-limit", 0.0)
    return TimeLimitError(f"{flag} {seconds:g}", f"no answer within {seconds:g} s")


def seconds_left() -> float | None:
    """Seconds left of the :func:`time_limit` in force (at least 0), or ``None`` without one: what
    a solver's own limit is set to (Z3 ``timeout``, CP-SAT ``max_time_in_seconds``).

    Example:
        >>> seconds_left() is None
        True
        >>> with time_limit(30, clock=lambda: 100.0):
        ...     seconds_left()
        30.0
    """
    if _DEADLINE.get() is None:
        return None
    return max(0.0, _left())


def check_time(needed_s: float = 0.0) -> None:
    """Give up now, as the :func:`time_limit` in force would later, when less than ``needed_s``
    seconds of it are left (0: when it has passed): a cooperative check between pieces of work, or
    before a step that cannot be stopped once started and is expected to take ``needed_s``. No
    limit in force: nothing.

    Example:
        >>> check_time(1e9)
        >>> with time_limit(5):
        ...     check_time(10)
        Traceback (most recent call last):
        ...
        ppverify.core.time_limit.TimeLimitError: --time-limit 5: no answer within 5 s
    """
    left = _left()
    if left < needed_s or left <= 0:
        raise _time_out()


def time_out_error() -> TimeLimitError | None:
    """The :class:`TimeLimitError` of the :func:`time_limit` in force (``None`` without one): what
    a solver's ``unknown`` under the limit means.

    Example:
        >>> time_out_error() is None
        True
        >>> with time_limit(2, clock=lambda: 0.0):
        ...     str(time_out_error())
        '--time-limit 2: no answer within 2 s'
    """
    return _time_out() if _DEADLINE.get() is not None else None
