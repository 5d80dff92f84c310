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

from ..ops import B, F, Op
from ..placement import wave
from ..schedule import Schedule
from .registry import Family, Param, check_int, formula_in_formulas, register

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
    params = {"p": p, "m": m, "waves": waves}
    if m != p:
        params["regime"] = OUTSIDE_REGIME
    return Schedule(pl, m, tuple(tuple(x) for x in progs), (0,) * m, "hanayo", params)


register(
    Family(
        "hanayo",
        hanayo,
        "Hanayo: one pipe folded into W waves (wave placement), elf library order (Liu et al. 2023)",
        params=(Param("waves", int, 1, "Hanayo waves W (S = 2*W*p stages)"),),
        rules="p >= 1, m >= 1, waves >= 1; restricted regime m = p (other m are built and reported as outside it)",
        formula=formula_in_formulas("hanayo_formula"),
    )
)
