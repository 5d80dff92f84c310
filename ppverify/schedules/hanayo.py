"""Hanayo (Liu et al. SC'23, arXiv 2308.15762): one pipe folded into ``W`` waves.

``S = 2*W*p`` stages in the ``wave`` placement: device d holds, per wave w, a down-leg stage
``2wp + d`` and an up-leg stage ``2wp + 2p-1-d``. The op order is the one of the topal-team
``elf`` library (``generate_hanayo_schedule``), not the code of the paper (Liu et al., "Hanayo", SC'23, arXiv 2308.15762):

1. warm-up: device d runs ``F`` of its first stage for microbatches ``0 .. min(p-d, m)-1``;
2. for each wave w and microbatch mb, devices in descending order: the up-leg forward of wave w
   for mb, then either the next pending down-leg forward (waves in order, microbatches in order)
   or, once all forwards are issued, the next pending backward (up-leg stages, last wave first);
3. for each wave w and microbatch mb, devices descending: the down-leg backward of wave ``W-1-w``
   for mb, then the next pending up-leg backward if any remain.

Its restricted regime is ``m = p`` (the CLI's default): outside it the schedule is still built
and valid, but the turning device's memory grows (to m for W = 1) and the bubble formula is no
longer exact; ``params["regime"]`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, Formula, exact_costs, make_formula
from ..core.ops import B, F, Op
from ..core.placement import wave
from ..core.schedule import Schedule
from .registry import Family, Param, check_int, register

OUTSIDE_REGIME = "outside restricted regime m = p"
REGIME_NOTE = (
    "hanayo's restricted regime is m = p (elf order); with m != p the schedule is valid "
    "but its memory and bubble differ from the paper's figures"
)


def hanayo(p: int, m: int, waves: int = 1) -> Schedule:
    """Hanayo with ``waves`` waves on ``p`` devices (``S = 2*waves*p``).

    Example:
        >>> s = hanayo(2, 2)
        >>> [str(o) for o in s.programs[0]]
        ['0F0', '0F1', '3F0', '3B0', '3F1', '3B1', '0B0', '0B1']
        >>> hanayo(2, 3).params["regime"]
        'outside restricted regime m = p'
    """
    check_int("waves", waves, 1)
    pl = wave(p, waves)
    S = pl.num_stages
    # ids[d]: stages of device d in ascending order: down-leg of wave w at 2w, up-leg at 2w+1
    ids = [[s for s in range(S) if pl.maps[0][s] == d] for d in range(p)]
    progs: list[list[Op]] = [[] for _ in range(p)]
    done = [min(p - d, m) for d in range(p)]  # forwards of down-leg stages issued, in (wave, mb) order
    back = [0] * p  # backwards of up-leg stages issued, last wave first
    total = m * waves

    def next_up_backward(d: int) -> Op:
        k = back[d]
        back[d] += 1
        return Op(B, ids[d][-1 - 2 * (k // m)], k % m)

    for d in range(p):
        progs[d] += [Op(F, ids[d][0], mb) for mb in range(done[d])]
    for w in range(waves):
        for mb in range(m):
            for d in reversed(range(p)):
                progs[d].append(Op(F, ids[d][2 * w + 1], mb))
                if done[d] < total:
                    k = done[d]
                    done[d] += 1
                    progs[d].append(Op(F, ids[d][2 * (k // m)], k % m))
                else:
                    progs[d].append(next_up_backward(d))
    for w in range(waves):
        for mb in range(m):
            for d in reversed(range(p)):
                progs[d].append(Op(B, ids[d][-2 * (w + 1)], mb))
                if back[d] < total:
                    progs[d].append(next_up_backward(d))
    params: dict[str, int | str] = {"p": p, "m": m, "waves": waves}
    if m != p:
        params["regime"] = OUTSIDE_REGIME
    return Schedule(pl, m, tuple(tuple(x) for x in progs), (0,) * m, "hanayo", params)


def hanayo_formula(p: int, m: int, costs: Mapping[str, float] | None = None, waves: int = 1) -> Formula:
    """Hanayo (elf order): for ``m >= p`` makespan ``m(tF+tB) + (p-1)·max(tF, tB)/W``, at tF = tB
    bubble ``(p-1)/(2W·m+p-1)``; for ``m < p`` that value is a lower bound. Peak (exact for every m),
    in chunks of 1/(2W): ``min(2Wm, max(2Wm - (p-1-d), min(p-d, m) + 2m(W-1) + 1))``.

    Derivation: each chunk op is 1/(2W) of a share op, so the single fill/drain of the folded pipe
    costs ``(p-1)/(2W)`` of a forward plus a backward at tF = tB; with unequal costs the drain
    runs at the pace of the longer kind (checked against the table). With m < p the devices wait
    for each other between waves and the bound is loose. Memory: the turning device (d = p-1)
    holds every chunk of every microbatch (m); device d holds ``p-1-d`` fewer chunks, or its
    warm-up plus the earlier waves' chunks when m < p. Reference figures: p=4, m=4, W=1 peaks
    2.5, 3, 3.5, 4 and 11 slots; W=2 at F=B=1: 9.5.

    Example:
        >>> f = hanayo_formula(4, 4)
        >>> f.makespan, f.peak_activations
        (11.0, (2.5, 3.0, 3.5, 4.0))
        >>> hanayo_formula(4, 4, waves=2).makespan
        9.5
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    check_int("waves", waves, 1)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    w2 = 2 * waves
    makespan = m * t + Fraction(p - 1, waves) * max(c["F"], c["B"])
    peaks = [
        Fraction(min(w2 * m, max(w2 * m - (p - 1 - d), min(p - d, m) + 2 * m * (waves - 1) + 1)), w2) for d in range(p)
    ]
    regime = (
        "restricted regime m = p"
        if m == p
        else ("m > p (outside the restricted regime m = p)" if m > p else "m < p (outside the restricted regime m = p)")
    )
    return make_formula(
        "hanayo",
        m * t,
        makespan,
        peaks,
        EXACT if m >= p else LOWER,
        EXACT,
        f"makespan exact for m >= p and any tF, tB, a lower bound for m < p; peaks exact; here: {regime}",
        "Liu et al. SC'23, arXiv 2308.15762, with the elf library's order; bubble derived by simulation",
    )


register(
    Family(
        "hanayo",
        hanayo,
        "Hanayo: one pipe folded into W waves (wave placement), elf library order (Liu et al. 2023)",
        params=(Param("waves", int, 1, "Hanayo waves W (S = 2*W*p stages)"),),
        rules="p >= 1, m >= 1, waves >= 1; restricted regime m = p (other m are built and reported as outside it)",
        formula=hanayo_formula,
    )
)
