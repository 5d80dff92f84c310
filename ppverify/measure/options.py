"""The options of a measured run (steps, warm-up, hang timeout, seed), checked before any worker
process starts: a value no run can use is refused in one line (exit 2), never handed to workers
that would import torch for seconds and then fail, hang or overflow a timer.
"""

from __future__ import annotations

import math

from ..core.errors import ParameterError

#: most measured (and most warm-up) steps of one run: each step runs the whole schedule
MAX_STEPS = 10_000
#: longest hang timeout, in seconds (a day; timers and gloo's own timeout overflow far beyond)
MAX_TIMEOUT_S = 86_400.0
#: seeds of weights and data: what every random generator involved accepts
MAX_SEED = 2**31 - 1


def _count(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ParameterError(name, value, f"must be an integer in {low}..{high}")


def check_timeout(timeout: object, name: str = "timeout") -> None:
    """Refuse a hang timeout that is not a finite number of seconds in (0, :data:`MAX_TIMEOUT_S`].

    Example:
        >>> check_timeout(60.0)
        >>> check_timeout(float("inf"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter timeout=inf: must be a finite number of seconds in (0, 86400]
    """
    ok = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and math.isfinite(timeout)
    if not (ok and 0 < timeout <= MAX_TIMEOUT_S):  # type: ignore[operator]
        raise ParameterError(name, timeout, f"must be a finite number of seconds in (0, {MAX_TIMEOUT_S:g}]")


def check_run_options(steps: object, warmup: object, timeout: object, seed: object) -> None:
    """Refuse run options no measured run can use (before any worker process starts).

    Example:
        >>> check_run_options(3, 1, 60.0, 0)
        >>> check_run_options(0, 1, 60.0, 0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter steps=0: must be an integer in 1..10000
        >>> check_run_options(3, 1, 60.0, -1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter seed=-1: must be an integer in 0..2147483647
    """
    _count("steps", steps, 1, MAX_STEPS)
    _count("warmup", warmup, 0, MAX_STEPS)
    check_timeout(timeout)
    _count("seed", seed, 0, MAX_SEED)


#: the longest emulated link delay (``measure --link-delay``): beyond a minute per transfer a
#: step would outlast any timeout
MAX_LINK_DELAY_S = 60.0


def check_link_delay(delay: object) -> None:
    """Refuse a link delay that is not a finite number of seconds in 0..60.

    Example:
        >>> check_link_delay(0.005)
        >>> check_link_delay(-1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter link-delay=-1: must be seconds in 0..60 (0: the link as it is)
    """
    ok = isinstance(delay, (int, float)) and not isinstance(delay, bool) and 0 <= float(delay) <= MAX_LINK_DELAY_S
    if not ok:
        raise ParameterError("link-delay", delay, "must be seconds in 0..60 (0: the link as it is)")
