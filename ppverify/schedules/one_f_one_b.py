"""1F1B (PipeDream-Flush / DAPPLE; Megatron's non-interleaved schedule)."""

from __future__ import annotations

from ..ops import B, F, Op
from ..placement import linear
from ..schedule import Schedule
from .registry import Family, register


def one_f_one_b(p: int, m: int) -> Schedule:
    """1F1B: device d runs ``min(p-1-d, m)`` warm-up forwards, then alternates one forward and
    one backward while forwards remain, then the remaining backwards.

    Example:
        >>> [str(o) for o in one_f_one_b(3, 3).programs[0]]
        ['0F0', '0F1', '0F2', '0B0', '0B1', '0B2']
        >>> [str(o) for o in one_f_one_b(3, 3).programs[2]]
        ['2F0', '2B0', '2F1', '2B1', '2F2', '2B2']
    """
    programs = []
    for d in range(p):
        warm = min(p - 1 - d, m)
        prog = [Op(F, d, mb) for mb in range(warm)]
        for k in range(m - warm):
            prog += [Op(F, d, warm + k), Op(B, d, k)]
        prog += [Op(B, d, mb) for mb in range(m - warm, m)]
        programs.append(tuple(prog))
    return Schedule(linear(p), m, tuple(programs), (0,) * m, "1f1b", {"p": p, "m": m})


def _formula(p, m, costs=None):
    from ..formulas import one_f_one_b_formula

    return one_f_one_b_formula(p, m, costs)


register(Family("1f1b", one_f_one_b, "1F1B: warm-up forwards, one-forward-one-backward, drain (PipeDream-Flush)", formula=_formula))
