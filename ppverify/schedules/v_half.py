"""V-Half (Qi, Wan, Amar, Lin, "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, arXiv
2405.15362): the V placement at about half of 1F1B's activation memory, built as the paper builds
its schedules: a building block, repeated, squeezed, its cool-down reordered.

The block is V-Min's (:func:`ppverify.schedules.blocks.v_block`) with the input-gradient chain
started :func:`v_half_delay` intervals later: every stage's activations live that many intervals
longer, which brings the peak to ``floor((p+2)/2)``, the paper's V-Half memory. Squeezing
(:func:`~ppverify.schedules.squeeze.squeeze`) lets each device fill its warm-up with the forwards
that memory allows, and the cool-down runs input gradients before weight gradients; each interval
of delay then takes one unit off the step at ``F = I = W`` (derivation and checks in
docs/building-blocks.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, UPPER, Formula, exact_costs, freed_by_I_of, make_formula
from ..core.schedule import Schedule
from .blocks import v_block
from .registry import Family, check_int, register
from .squeeze import squeeze


def v_half_delay(p: int) -> int:
    """Intervals V-Half's input-gradient chain starts later than V-Min's:
    ``floor((p+2)/2) - floor((p+4)/3)``, which brings the peak from V-Min's ``floor((p+4)/3)`` to
    ``floor((p+2)/2)``.

    Example:
        >>> [v_half_delay(p) for p in (2, 3, 4, 8, 16)]
        [0, 0, 1, 1, 3]
    """
    return (p + 2) // 2 - (p + 4) // 3


def v_half(p: int, m: int) -> Schedule:
    """V-Half on ``p`` devices (``S = 2p``): the delayed V block, squeezed, input gradients first
    in the cool-down.

    Example:
        >>> v_half(4, 8).family, len(v_half(4, 8).programs[0])
        ('v-half', 48)
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    return squeeze(v_block(p, 0, "v-half", v_half_delay(p)), m, family="v-half", defer_w=True)


def v_half_fill(p: int) -> Fraction:
    """The step beyond the busy time ``3m`` at ``F = I = W = 1`` (a chunk pass lasting 1/2):
    ``3 floor((2p-2)/3) - 1/2 - v_half_delay(p)``, and never less than the fill ``(p-1)/2`` every V
    schedule pays (p <= 2).

    Example:
        >>> [float(v_half_fill(p)) for p in (1, 2, 4, 8, 16)]
        [0.0, 0.5, 4.5, 10.5, 26.5]
    """
    return max(Fraction(p - 1, 2), 3 * ((2 * p - 2) // 3) - Fraction(1, 2) - v_half_delay(p))


def v_half_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """V-Half: peak ``min(m, floor((p+2)/2))`` per device (exact for ``m >= p``; below, the
    step's peak still, some devices less); makespan
    ``t (3m + v_half_fill(p))`` when ``tF = tI = tW = t`` and ``m >= p`` (exact), otherwise the
    lower bound every V schedule meets, ``m(tF+tI+tW) + (p-1)tF/2``. The peak counts every
    activation as held until its ``W``: with ``freed_by_I`` > 0 in the costs (presets) some
    devices peak lower, so it is then an upper bound (the largest per-device peak still reaches it).

    Example:
        >>> f = v_half_formula(8, 24)
        >>> f.makespan, f.peak_activations[0], f.makespan_kind
        (82.5, 5.0, 'exact')
        >>> v_half_formula(8, 24, {"F": 1, "I": 2, "W": 1}).makespan_kind
        'lower bound'
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    equal = c["F"] == c["I"] == c["W"]
    exact = equal and m >= p
    makespan = c["F"] * (3 * m + v_half_fill(p)) if exact else busy + Fraction(p - 1, 2) * c["F"]
    held_to_w = freed_by_I_of(costs) == 0
    return make_formula(
        "v-half",
        busy,
        makespan,
        [min(m, (p + 2) // 2)] * p,
        EXACT if exact else LOWER,
        EXACT if m >= p and held_to_w else UPPER,
        "peaks exact for m >= p (else upper bounds, the largest reached)"
        + ("" if held_to_w else "; upper bounds when I frees part (the largest reached)")
        + "; makespan exact for tF = tI = tW and m >= p (checked against the async engine), else a lower bound",
        "Qi et al. NeurIPS'24 (arXiv 2405.15362) V-Half; this block, its squeeze and the closed forms derived here",
    )


register(
    Family(
        "v-half",
        v_half,
        "V-Half: V placement, building block at about half of 1F1B's activations (Qi et al. 2024)",
        formula=v_half_formula,
        aliases=("vhalf",),
    )
)
