"""DualPipeV (DeepSeek's DualPipe "cut in half"; PyTorch's ``ScheduleDualPipeV``).

One pipe in the ``v`` placement (device d holds stages d and ``2p-1-d``), all ``m`` microbatches
through it, and DualPipe's eight phases (:func:`ppverify.schedules.dualpipe.dualpipe_program`)
with ``N = p``, half rank ``h = d`` and ``M = m``: phase 0 is stage d, phase 1 stage ``2p-1-d``.
Overlapped F&B slots are :class:`ppverify.core.ops.Overlap`; PyTorch writes them
``(0F7;7B3)OVERLAP_F_B``. The op order equals PyTorch's (tests compare them and the
``dualpipev_4rank_10mb.csv`` fixture). PyTorch requires ``m >= 2p`` (at least as many
microbatches as stages); so does this family.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, Formula, exact_costs
from ..core.errors import ParameterError
from ..core.ops import Op
from ..core.placement import v_shape
from ..core.schedule import Schedule
from .dualpipe import DUALPIPE_NOTE, dualpipe_makespan, dualpipe_program
from .registry import Family, check_int, register


def dualpipev(p: int, m: int) -> Schedule:
    """DualPipeV on ``p`` devices (``S = 2p``), ``m >= 2p``.

    Example:
        >>> [str(a) for a in dualpipev(2, 4).programs[1]]
        ['1F0', '2F0', '1F1', '2F1', '1F2', '2B0', '(2F2;1B0)OVERLAP_F_B', '(1F3;2B1)OVERLAP_F_B', '(2F3;1B1)OVERLAP_F_B', '2B2', '1B2', '2I3', '1I3', '2W3', '1W3']
    """
    if m < 2 * p:
        raise ParameterError(
            "m",
            m,
            f"dualpipev needs m >= 2p = {2 * p} (PyTorch's ScheduleDualPipeV rule: "
            "at least as many microbatches as stages)",
        )
    programs = []
    for d in range(p):
        stages = (d, 2 * p - 1 - d)

        def op_of(k: str, ph: int, i: int, st: tuple[int, int] = stages) -> Op:
            return Op(k, st[ph], i)

        programs.append(tuple(dualpipe_program(p, d, m, op_of)))
    return Schedule(v_shape(p), m, tuple(programs), (0,) * m, "dualpipev", {"p": p, "m": m})


def dualpipev_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """DualPipeV: makespan ``m(tF+tB) + (p-1)(F&B + B - 3W)`` with chunk op times (half the share
    costs) and ``F&B = F + B``; exact when ``tF = tI``, ``tW <= tF``; peak ``(2p+1)/2`` share units
    (``2p+1`` chunks) on every device.

    The bubble is DeepSeek's for DualPipe on twice the devices (DeepSeek-V3 report, arXiv 2412.19437: DualPipeV is
    DualPipe folded into a V). ppverify checks it against the table (p <= 8, 2p <= m <= 4p): it is
    exact in the domain above. Outside it the paper's value is neither a bound nor exact (the
    table is faster when ``tI > tF``, slower when ``tW > tF``), so ppverify reports the plain lower
    bound instead: the last device waits for ``p-1`` chunk forwards, then has ``m(tF+tB)`` of work.
    Overlapped F&B slots are assumed to last ``F + B`` (cost model ``overlap = 1``). The peaks do
    not depend on ``freed_by_I`` (the share an I frees; checked against the table for p <= 6 at
    four shares).

    Example:
        >>> f = dualpipev_formula(4, 8, {"F": 1, "B": 2})
        >>> f.makespan, f.makespan_kind, f.peak_activations
        (27.0, 'exact', (4.5, 4.5, 4.5, 4.5))
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    if m < 2 * p:
        raise ParameterError("m", m, f"dualpipev needs m >= 2p = {2 * p}")
    c = {k: x / 2 for k, x in exact_costs(costs).items()}  # chunk ops: half a share
    busy = m * 2 * (c["F"] + c["B"])
    makespan, exact = dualpipe_makespan(c, busy, Fraction(p - 1))
    return Formula(
        "dualpipev",
        float(makespan),
        float(1 - busy / makespan),
        (float(Fraction(2 * p + 1, 2)),) * p,
        EXACT if exact else LOWER,
        EXACT,
        DUALPIPE_NOTE,
        "DeepSeek-V3 report (arXiv 2412.19437) / DualPipe README (DualPipeV row); domain checked here",
    )


register(
    Family(
        "dualpipev",
        dualpipev,
        "DualPipeV: DualPipe folded into the V placement, one pipe (PyTorch's ScheduleDualPipeV)",
        rules="p >= 1, m >= 2p",
        formula=dualpipev_formula,
    )
)
