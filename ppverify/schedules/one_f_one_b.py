"""1F1B (PipeDream-Flush / DAPPLE; Megatron's non-interleaved schedule)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from ..compiled import use_compiled
from ..ops import B, F, Op
from ..placement import linear
from ..schedule import Schedule
from .registry import Family, formula_in_formulas, register


def one_f_one_b(p: int, m: int) -> Schedule:
    """1F1B: device d runs ``min(p-1-d, m)`` warm-up forwards, then alternates one forward and
    one backward while forwards remain, then the remaining backwards.

    Example:
        >>> [str(o) for o in one_f_one_b(3, 3).programs[0]]
        ['0F0', '0F1', '0F2', '0B0', '0B1', '0B2']
        >>> [str(o) for o in one_f_one_b(3, 3).programs[2]]
        ['2F0', '2B0', '2F1', '2B1', '2F2', '2B2']
    """
    if use_compiled(2 * m * p):  # vectorised, the same programs (tests/test_kernels.py)
        from .fast_orders import one_f_one_b_programs

        return Schedule(linear(p), m, one_f_one_b_programs(p, m), (0,) * m, "1f1b", {"p": p, "m": m})
    programs = tuple(
        tuple(one_f_one_b_order(min(p - 1 - d, m), m, partial(Op, F, d), partial(Op, B, d))) for d in range(p)
    )
    return Schedule(linear(p), m, programs, (0,) * m, "1f1b", {"p": p, "m": m})


def one_f_one_b_order(warm: int, total: int, fwd: Callable[[int], Op], bwd: Callable[[int], Op]) -> list[Op]:
    """One device's 1F1B order over its ``total`` forwards and backwards: ``warm`` forwards, then
    one forward and one backward while forwards remain, then the remaining backwards. ``fwd(k)``
    and ``bwd(k)`` are the device's k-th forward and backward (interleaved 1F1B maps k to chunks).

    Example:
        >>> [str(o) for o in one_f_one_b_order(1, 3, lambda k: Op(F, 0, k), lambda k: Op(B, 0, k))]
        ['0F0', '0F1', '0B0', '0F2', '0B1', '0B2']
    """
    prog = [fwd(k) for k in range(warm)]
    for k in range(total - warm):
        prog += [fwd(warm + k), bwd(k)]
    prog += [bwd(k) for k in range(total - warm, total)]
    return prog


register(
    Family(
        "1f1b",
        one_f_one_b,
        "1F1B: warm-up forwards, one-forward-one-backward, drain (PipeDream-Flush)",
        formula=formula_in_formulas("one_f_one_b_formula"),
    )
)
