"""1F1B with the backward split into ``I`` (input gradient) then ``W`` (weight gradient).

The program is 1F1B's with every ``B(s, mb)`` replaced by ``I(s, mb), W(s, mb)`` back to back. The
gradient leaves the device after ``I``, so the previous stage may start its own ``I`` while this
device runs ``W``; memory is freed when ``W`` ends (``I`` frees ``freed_by_I`` of it, 0 by default).
Zero-bubble's ZB-H1 goes further and delays the W's; this family is the plain split.
"""

from __future__ import annotations

from ..ops import B, I, Op, W
from ..schedule import Schedule
from .one_f_one_b import one_f_one_b
from .registry import Family, formula_in_formulas, register


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
            if op.kind == B:
                out += [Op(I, op.stage, op.mb), Op(W, op.stage, op.mb)]
            else:
                out.append(op)
        programs.append(tuple(out))
    return Schedule(base.placement, m, tuple(programs), base.pipe_of_mb, "1f1b-split", {"p": p, "m": m})


register(
    Family(
        "1f1b-split",
        one_f_one_b_split,
        "1F1B with each backward split into I (input grad) then W (weight grad)",
        rules="p >= 1, m >= 1",
        formula=formula_in_formulas("one_f_one_b_split_formula"),
    )
)
