"""GPipe (Huang et al. 2019): all forwards, then all backwards."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.closed_form import EXACT, Formula, exact_costs, make_formula
from ..core.ops import B, F, Op
from ..core.placement import linear
from ..core.schedule import Schedule
from .registry import Family, check_int, register


def gpipe(p: int, m: int) -> Schedule:
    """GPipe on ``p`` devices with ``m`` microbatches; stage s on device s.

    Device program: ``F(0) .. F(m-1)`` then ``B(0) .. B(m-1)``.

    Example:
        >>> [str(o) for o in gpipe(2, 2).programs[0]]
        ['0F0', '0F1', '0B0', '0B1']
    """
    programs = tuple(tuple(Op(F, d, mb) for mb in range(m)) + tuple(Op(B, d, mb) for mb in range(m)) for d in range(p))
    return Schedule(linear(p), m, programs, (0,) * m, "gpipe", {"p": p, "m": m})


def gpipe_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """GPipe: makespan ``(m+p-1)(tF+tB)``, bubble ``(p-1)/(m+p-1)``, peak ``m`` on every device.

    Derivation: the last device starts its first F after ``(p-1)tF`` and then runs m F and m B
    back to back; the last microbatch's gradient then crosses p-1 devices (``(p-1)tB``). Exact for
    any tF, tB (Huang et al. 2019).

    Example:
        >>> f = gpipe_formula(4, 4)
        >>> f.makespan, round(f.bubble_ratio, 4), f.peak_activations, f.exact
        (14.0, 0.4286, (4.0, 4.0, 4.0, 4.0), True)
        >>> gpipe_formula(4, 4, {"F": 1, "B": 2}).makespan
        21.0
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    return make_formula(
        "gpipe",
        m * t,
        (m + p - 1) * t,
        [m] * p,
        EXACT,
        EXACT,
        "exact for any tF, tB",
        "Huang et al., GPipe, NeurIPS'19, arXiv 1811.06965",
    )


register(
    Family(
        "gpipe",
        gpipe,
        "GPipe: all forwards, then all backwards (Huang et al. 2019)",
        formula=gpipe_formula,
    )
)
