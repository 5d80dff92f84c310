"""V-Half (Qi, Wan, Amar, Lin, "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, arXiv
2405.15362): the V placement at about half of 1F1B's activation memory, built from the V building
block with each ``W`` held ``ceil((p-2)/6)`` intervals longer than V-Min's.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.closed_form import Formula
from ..core.schedule import Schedule
from .blocks import repeat, v_block
from .registry import Family, register
from .v_min import v_formula


def v_half_delay(p: int) -> int:
    """Intervals each ``W`` waits beyond V-Min's: ``ceil((p-2)/6)``, which brings the peak
    ``floor((p+4)/3) + ceil((p-2)/6)`` to about ``(p+2)/2``.

    Example:
        >>> [v_half_delay(p) for p in (2, 4, 8, 16)]
        [0, 1, 1, 3]
    """
    return max(0, -(-(p - 2) // 6))


def v_half(p: int, m: int) -> Schedule:
    """V-Half on ``p`` devices (``S = 2p``).

    Example:
        >>> v_half(4, 8).family, len(v_half(4, 8).programs[0])
        ('v-half', 48)
    """
    return repeat(v_block(p, v_half_delay(p), "v-half"), m, "v-half", {"p": p, "m": m})


def v_half_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """V-Half: peak ``min(m, floor((p+4)/3) + ceil((p-2)/6))`` per device (exact for ``m >= 2p``).

    Example:
        >>> v_half_formula(8, 24).peak_activations[0]
        5.0
    """
    return v_formula("v-half", p, m, costs, v_half_delay(p))


register(
    Family(
        "v-half",
        v_half,
        "V-Half: V placement, building block at about half of 1F1B's activations (Qi et al. 2024)",
        formula=v_half_formula,
        aliases=("vhalf",),
    )
)
