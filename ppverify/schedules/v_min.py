"""V-Min (Qi, Wan, Amar, Lin, "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, arXiv
2405.15362): the V placement at about a third of 1F1B's activation memory, built from a building
block (:func:`ppverify.schedules.blocks.v_block`, ``w_delay = 0``).

The block runs the forwards down the V and the input gradients back up one pass after another,
each ``W`` two slots after its ``I``; repeated every 6 chunk passes it has no collision for any p.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, UPPER, Formula, exact_costs, freed_by_I_of, make_formula
from ..core.schedule import Schedule
from .blocks import block_span, repeat, v_block
from .registry import Family, check_int, register


def v_min(p: int, m: int) -> Schedule:
    """V-Min on ``p`` devices (``S = 2p``): the V building block repeated for ``m`` microbatches.

    Example:
        >>> [str(o) for o in v_min(2, 2).programs[1]]
        ['1F0', '2F0', '1F1', '2F1', '2I0', '1I0', '2W0', '1W0', '2I1', '1I1', '2W1', '1W1']
    """
    return repeat(v_block(p, 0, "v-min"), m, "v-min", {"p": p, "m": m})


def v_peak(p: int, m: int, w_delay: int, i_delay: int = 0) -> int:
    """Peak activations of the V block with its delays:
    ``min(m, floor((p+4)/3) + i_delay + w_delay)``: an upper bound for any ``m``, and every
    device's peak once ``m >= v_peak_exact_from(p, w_delay, i_delay)``.

    Derivation (docs/building-blocks.md): stage s holds its activations from ``F[s] = s`` to
    ``W[s] + 1``, so the two stages of device d live ``2c + 6 + 12 w_delay`` block units together
    (``c`` the I chain's start, ``6 i_delay`` later per interval of delay); every 6 units one
    microbatch enters each, and a chunk counts 1/2.

    Example:
        >>> v_peak(8, 24, 0), v_peak(8, 2, 0), v_peak(8, 24, 1), v_peak(8, 24, 1, i_delay=2)
        (4, 2, 5, 7)
    """
    return min(m, (p + 4) // 3 + i_delay + w_delay)


def v_peak_exact_from(p: int, w_delay: int = 0, i_delay: int = 0) -> int:
    """The ``m`` from which :func:`v_peak` is every device's peak (for every larger ``m`` too):
    ``ceil(L0/6)``, stage 0's life ``L0 = W[0] + 1 = c + 2p + 2 + 6 w_delay`` in intervals, which
    is ``2 floor((p+1)/3) + 1 + i_delay + w_delay`` (``c`` is ``2p`` to ``2p + 4``, 2 modulo 6,
    plus ``6 i_delay``). From there each device holds, for at least a whole interval, what the
    endless repetition holds (microbatch 0's longest life has ended, microbatch m's forward not
    begun). A smaller ``m`` may reach it too or fall short on some devices (p = 3, w_delay = 1,
    i_delay = 3, m = 6: 5.5 on device 0, not 6; docs/building-blocks.md).

    Example:
        >>> v_peak_exact_from(8), v_peak_exact_from(3, 1, 3)
        (7, 7)
    """
    return 2 * ((p + 1) // 3) + 1 + i_delay + w_delay


def v_formula(name: str, p: int, m: int, costs: Mapping[str, float] | None, w_delay: int) -> Formula:
    """The formula of a V block family: peak :func:`v_peak` on every device (exact for
    ``m >= v_peak_exact_from(p, w_delay)``, ``2 floor((p+1)/3) + 1 + w_delay``, an upper bound
    below); makespan at least
    ``m(tF+tI+tW) + (p-1)tF/2`` (a lower bound for any V schedule: the last device's first pass
    waits for ``p-1`` chunk forwards, then has all its work ahead) and at most the block's span with
    each chunk pass lasting half the dearest of ``tF, tI, tW`` (the block's own start times are a
    valid timing of the same order), printed in ``conditions``. The peak counts every activation as held until its ``W``; when the
    costs free a share at ``I`` (``freed_by_I`` > 0, as presets do) some devices peak lower, so
    it is then an upper bound (the largest per-device peak still reaches it).

    Example:
        >>> f = v_formula("v-min", 4, 12, {"F": 1, "I": 1, "W": 1}, 0)
        >>> f.makespan, f.peak_activations, f.makespan_kind, f.peak_kind
        (37.5, (2.0, 2.0, 2.0, 2.0), 'lower bound', 'exact')
        >>> f.conditions.split("; ")[1]
        'makespan a lower bound, at most 42 (the unsqueezed block)'
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    slot = max(c["F"], c["I"], c["W"]) / 2
    span = block_span(v_block(p, w_delay), m) * Fraction(slot)
    held_to_w = freed_by_I_of(costs) == 0
    # stage 0's life in intervals (docs/building-blocks.md): below it a device may fall short
    exact_from = v_peak_exact_from(p, w_delay)
    return make_formula(
        name,
        busy,
        busy + Fraction(p - 1, 2) * c["F"],
        [v_peak(p, m, w_delay)] * p,
        LOWER,
        EXACT if m >= exact_from and held_to_w else UPPER,
        f"peaks exact for m >= {exact_from} (else upper bounds){'' if held_to_w else ', upper bounds when I frees part'}; "
        f"makespan a lower bound, at most {float(span):g} (the unsqueezed block)",
        "Qi et al. NeurIPS'24 (arXiv 2405.15362) building blocks; this block and its bounds derived here",
    )


def v_min_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """V-Min: peak ``min(m, floor((p+4)/3))`` per device (exact for
    ``m >= 2 floor((p+1)/3) + 1``, :func:`v_peak_exact_from`; an upper bound below).

    Example:
        >>> # p = 8: peak floor(12/3) = 4, exact from 2 floor(9/3) + 1 = 7 (m = 6: an upper bound)
        >>> v_min_formula(8, 24).peak_activations[0], v_min_formula(8, 7).peak_kind, v_min_formula(8, 6).peak_kind
        (4.0, 'exact', 'upper bound')
    """
    return v_formula("v-min", p, m, costs, 0)


register(
    Family(
        "v-min",
        v_min,
        "V-Min: V placement, building block at about a third of 1F1B's activations (Qi et al. 2024)",
        formula=v_min_formula,
        aliases=("vmin",),
    )
)
