"""GPipe (Huang et al. 2019): all forwards, then all backwards."""

from __future__ import annotations

from ..ops import B, F, Op
from ..placement import linear
from ..schedule import Schedule
from .registry import Family, formula_in_formulas, register


def gpipe(p: int, m: int) -> Schedule:
    """GPipe on ``p`` devices with ``m`` microbatches; stage s on device s.

    Device program: ``F(0) .. F(m-1)`` then ``B(0) .. B(m-1)``.

    Example:
        >>> [str(o) for o in gpipe(2, 2).programs[0]]
        ['0F0', '0F1', '0B0', '0B1']
    """
    programs = tuple(tuple(Op(F, d, mb) for mb in range(m)) + tuple(Op(B, d, mb) for mb in range(m)) for d in range(p))
    return Schedule(linear(p), m, programs, (0,) * m, "gpipe", {"p": p, "m": m})


register(
    Family(
        "gpipe",
        gpipe,
        "GPipe: all forwards, then all backwards (Huang et al. 2019)",
        formula=formula_in_formulas("gpipe_formula"),
    )
)
