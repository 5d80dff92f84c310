"""1F1B with the backward split into ``I`` (input gradient) then ``W`` (weight gradient).

The program is 1F1B's with every ``B(s, mb)`` replaced by ``I(s, mb), W(s, mb)`` back to back. The
gradient leaves the device after ``I``, so the previous stage may start its own ``I`` while this
device runs ``W``; memory is freed when ``W`` ends (``I`` frees ``freed_by_I`` of it, 0 by default;
each W directly follows its I, so the peaks do not depend on that share).
Zero-bubble's ZB-H1 goes further and delays the W's; this family is the plain split.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.closed_form import EXACT, Formula, exact_costs, make_formula
from ..core.ops import B, I, Op, W
from ..core.schedule import Schedule
from .one_f_one_b import one_f_one_b
from .registry import Family, check_int, register


def one_f_one_b_split(p: int, m: int) -> Schedule:
    """1F1B whose backwards are each an ``I`` immediately followed by a ``W``.

    Example:
        >>> [str(o) for o in one_f_one_b_split(2, 2).programs[1]]
        ['1F0', '1I0', '1W0', '1F1', '1I1', '1W1']
    """
    base = one_f_one_b(p, m)
    programs = []
    for prog in base.programs:
        out: list[Op] = []
        for op in prog:
            assert isinstance(op, Op)  # 1F1B programs hold compute ops only
            if op.kind == B:
                out += [Op(I, op.stage, op.mb), Op(W, op.stage, op.mb)]
            else:
                out.append(op)
        programs.append(tuple(out))
    return Schedule(base.placement, m, tuple(programs), base.pipe_of_mb, "1f1b-split", {"p": p, "m": m})


def one_f_one_b_split_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """1F1B with B split into I then W: makespan ``m(tF+tI+tW) + (p-1)(tF+tI)``; peaks as 1F1B
    (``min(p-d, m)``, whatever ``freed_by_I``: a device peaks when a forward starts, and by then
    every I it has run was followed by its W, which freed the rest).

    Derivation: the last device starts after ``(p-1)tF`` and then never idles (``m(tF+tI+tW)``);
    its last I ends tW before that, and the last gradient then crosses p-1 devices as I ops
    (``(p-1)tI``), after which device 0 runs its last W. Compared with 1F1B's
    ``(m+p-1)(tF+tB)`` the split saves ``(p-1)tW``: W is off the gradient chain.

    Example:
        >>> one_f_one_b_split_formula(4, 4).makespan   # unit slots: F = I = W = 1
        18.0
        >>> one_f_one_b_split_formula(4, 4, {"F": 1, "B": 2}).makespan  # I = W = 1
        18.0
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    return make_formula(
        "1f1b-split",
        busy,
        busy + (p - 1) * (c["F"] + c["I"]),
        [min(p - d, m) for d in range(p)],
        EXACT,
        EXACT,
        "exact for any tF, tI, tW and any freed_by_I (each W directly follows its I)",
        "derived here; cf. zero-bubble (Qi et al. ICLR'24, arXiv 2401.10241)",
    )


register(
    Family(
        "1f1b-split",
        one_f_one_b_split,
        "1F1B with each backward split into I (input grad) then W (weight grad)",
        rules="p >= 1, m >= 1",
        formula=one_f_one_b_split_formula,
    )
)
