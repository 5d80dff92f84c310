"""When the engines and generators switch to their compiled or vectorised paths
(:mod:`ppverify.engines.kernels`, :mod:`ppverify.engines.torch_steps_kernel`,
:mod:`ppverify.schedules.fast_orders`).

This module imports neither numba nor the engines: small commands decide here, without paying
numba's import or the kernels' cache load (about half a second), that they stay on the
pure-Python engines.
Above :data:`COMPILED_MIN_OPS` compute ops the engines run numba-compiled loops over flat numpy
arrays instead; the pure-Python engines remain the reference the tests compare them against
(every start and end exactly equal).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

_Kernel = TypeVar("_Kernel", bound=Callable[..., Any])

#: compute ops from which the engines use the compiled kernels (a JIT cache load costs ~0.3 s,
#: the Python loops ~1-2 us per op: below this size the interpreter is faster overall)
COMPILED_MIN_OPS = 20_000


def use_compiled(num_ops: int, min_ops: int | None = None) -> bool:
    """Whether an engine run over ``num_ops`` ops takes the compiled path: at least ``min_ops``
    ops (default :data:`COMPILED_MIN_OPS`), unless the environment variable
    ``PPVERIFY_COMPILED=0`` turns the kernels off (benchmarks use it for the reference column).

    Example:
        >>> use_compiled(100), use_compiled(100, min_ops=0), use_compiled(10**6)
        (False, True, True)
    """
    if os.environ.get("PPVERIFY_COMPILED", "1") == "0":
        return False
    return num_ops >= (COMPILED_MIN_OPS if min_ops is None else min_ops)


def compiled_kernel(**options: Any) -> Callable[[_Kernel], _Kernel]:
    """numba's ``njit(**options)`` with its on-disk cache (``cache=True``: later processes load the
    machine code instead of compiling it) where numba finds a folder it may write, and without
    one otherwise: a read-only install with no writable user cache (``~/.cache`` or
    ``$XDG_CACHE_HOME``, ``NUMBA_CACHE_DIR``) still runs the kernels, compiled once per process,
    with the same results. numba is imported only when a kernel module is.

    Example:
        >>> @compiled_kernel(nogil=True)
        ... def twice(x):
        ...     return 2 * x
        >>> twice(21)
        42
    """

    def decorate(func: _Kernel) -> _Kernel:
        from numba import njit

        try:
            return njit(cache=True, **options)(func)
        except RuntimeError as exc:  # numba's words when no cache folder can be written
            if "no locator available" not in str(exc):
                raise
            return njit(cache=False, **options)(func)

    return decorate
