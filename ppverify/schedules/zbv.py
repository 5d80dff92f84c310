"""ZB-V (Qi et al. 2024, arXiv 2405.15362 / ICLR'24 §6): zero bubble in the V placement.

Two chunks per device in the ``v`` placement (device d holds stages d and ``2p-1-d``), backward
split into I and W. The op order is PyTorch's ``ScheduleZBVZeroBubble`` (tests compare the two):

1. warm-up: ``2(p-d)-1`` forwards of chunk 0; then ``d`` pairs (chunk 1 F, chunk 0 F); then
   ``p-d`` triples (chunk 1 F, I, W);
2. steady: (chunk 0 F if any left, chunk 0 I, W, chunk 1 F, I, W) until every forward is issued
   and both chunks have issued equally many;
3. cool-down: ``d`` pairs (chunk 0 I, chunk 1 I), ``p-d`` pairs (chunk 0 I, the oldest chunk 0
   W), then the remaining chunk 1 W's and chunk 0 W's.

The order is built for ``max(m, 2p-1)`` microbatches and ops of microbatches ``>= m`` are dropped
(PyTorch replaces them with idle slots, which its runtime skips).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, UPPER, Formula, exact_costs
from ..core.ops import F, I, Op, W
from ..core.placement import v_shape
from ..core.schedule import Schedule
from .registry import Family, check_int, register


def zbv(p: int, m: int) -> Schedule:
    """ZB-V on ``p`` devices (``S = 2p``).

    Example:
        >>> [str(o) for o in zbv(2, 2).programs[1]]
        ['1F0', '2F0', '1F1', '2F1', '2I0', '2W0', '1I0', '1W0', '2I1', '2W1', '1I1', '1W1']
    """
    n = max(2 * p - 1, m)
    programs = []
    for d in range(p):
        c0, c1 = d, 2 * p - 1 - d
        prog: list[Op] = []
        f0 = f1 = b0 = b1 = 0
        for _ in range(2 * (p - d) - 1):
            prog.append(Op(F, c0, f0))
            f0 += 1
        for _ in range(d):
            prog.append(Op(F, c1, f1))
            f1 += 1
            prog.append(Op(F, c0, f0))
            f0 += 1
        for _ in range(p - d):
            prog.append(Op(F, c1, f1))
            f1 += 1
            prog += [Op(I, c1, b1), Op(W, c1, b1)]
            b1 += 1
        while f1 < f0 or f0 < n:
            if f0 < n:
                prog.append(Op(F, c0, f0))
                f0 += 1
            prog += [Op(I, c0, b0), Op(W, c0, b0)]
            b0 += 1
            prog.append(Op(F, c1, f1))
            f1 += 1
            prog += [Op(I, c1, b1), Op(W, c1, b1)]
            b1 += 1
        w0, w1 = b0, b1
        for _ in range(d):
            prog.append(Op(I, c0, b0))
            b0 += 1
            prog.append(Op(I, c1, b1))
            b1 += 1
        for _ in range(p - d):
            prog.append(Op(I, c0, b0))
            b0 += 1
            prog.append(Op(W, c0, w0))
            w0 += 1
        prog += [Op(W, c1, k) for k in range(w1, b1)]
        prog += [Op(W, c0, k) for k in range(w0, b0)]
        programs.append(tuple(op for op in prog if op.mb < m))
    return Schedule(v_shape(p), m, tuple(programs), (0,) * m, "zbv", {"p": p, "m": m})


def zbv_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """ZB-V: makespan ``m(tF+tI+tW) + (p-1)tF/2``, exact when ``tF = tI``, ``tF/2 <= tW <= tF`` and
    ``m >= 2p``, a lower bound otherwise; peak ``min(m, p)`` (exact for ``m >= 2p``, else an upper
    bound).

    Chunk ops last half a share op. No schedule of one step beats the bound: the last device's
    first op, ``F(p-1, 0)``, waits for ``p-1`` chunk forwards (``(p-1)tF/2``) and the device then
    has ``m(tF+tI+tW)`` of work. The paper's "zero bubble at equal costs" is this bound with the
    fill left out (its post-validation overlaps it with the next step); PyTorch's order meets it
    in the domain above (checked against the table for p <= 8, m <= 4p) and exceeds it when W is
    much cheaper or dearer than F. Memory: PyTorch's order keeps ``p`` chunks of each leg in
    flight on every device, ``p`` share units in all, whatever ``freed_by_I``: before the last
    forward every I is directly followed by its W, and the I's whose W waits (the cool-down) come
    after it, when memory only falls.

    Example:
        >>> f = zbv_formula(4, 8)
        >>> f.makespan, f.makespan_kind, f.peak_activations
        (25.5, 'exact', (4.0, 4.0, 4.0, 4.0))
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    makespan = busy + Fraction(p - 1, 2) * c["F"]
    exact = m >= 2 * p and c["F"] == c["I"] and c["F"] / 2 <= c["W"] <= c["F"]
    return Formula(
        "zbv",
        float(makespan),
        float(1 - busy / makespan),
        (float(min(m, p)),) * p,
        EXACT if exact else LOWER,
        EXACT if m >= 2 * p else UPPER,
        "makespan exact for tF = tI, tF/2 <= tW <= tF and m >= 2p (else a lower bound); "
        "peaks exact for m >= 2p (else upper bounds)",
        "Qi et al. 2024 (ZB-V); bound and domain derived here, checked against the table",
    )


register(
    Family(
        "zbv",
        zbv,
        "ZB-V: zero bubble with 2 chunks per device in the V placement (PyTorch's ScheduleZBVZeroBubble order)",
        rules="p >= 1, m >= 1",
        formula=zbv_formula,
    )
)
