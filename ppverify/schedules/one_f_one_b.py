"""1F1B (PipeDream-Flush / DAPPLE; Megatron's non-interleaved schedule)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from ..core.closed_form import EXACT, Formula, exact_costs, make_formula
from ..core.compiled import use_compiled
from ..core.ops import B, F, Op
from ..core.placement import linear
from ..core.schedule import Schedule
from .registry import Family, check_int, register


def one_f_one_b(p: int, m: int) -> Schedule:
    """1F1B: device d runs ``min(p-1-d, m)`` warm-up forwards, then alternates one forward and
    one backward while forwards remain, then the remaining backwards.

    Example:
        >>> [str(o) for o in one_f_one_b(3, 3).programs[0]]
        ['0F0', '0F1', '0F2', '0B0', '0B1', '0B2']
        >>> [str(o) for o in one_f_one_b(3, 3).programs[2]]
        ['2F0', '2B0', '2F1', '2B1', '2F2', '2B2']
    """
    if use_compiled(2 * m * p):  # vectorised, the same programs (tests/engines/test_kernels.py)
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


def one_f_one_b_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """1F1B: GPipe's makespan ``(m+p-1)(tF+tB)``; peak on device d ``min(p-d, m)``.

    Derivation: the same critical path as GPipe (the last device is never idle once started);
    device d holds its warm-up ``min(p-1-d, m)`` forwards plus the one forward of each steady
    F-B pair before that pair's B frees one.

    Example:
        >>> one_f_one_b_formula(4, 4).peak_activations
        (4.0, 3.0, 2.0, 1.0)
        >>> one_f_one_b_formula(2, 2).to_dict()["peak_activations"]
        [2.0, 1.0]
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    return make_formula(
        "1f1b",
        m * t,
        (m + p - 1) * t,
        [min(p - d, m) for d in range(p)],
        EXACT,
        EXACT,
        "exact for any tF, tB",
        "PipeDream-Flush (Narayanan et al. ICML'21, arXiv 2006.09503) / DAPPLE (Fan et al. PPoPP'21, arXiv 2007.01045)",
    )


register(
    Family(
        "1f1b",
        one_f_one_b,
        "1F1B: warm-up forwards, one-forward-one-backward, drain (PipeDream-Flush)",
        formula=one_f_one_b_formula,
    )
)
