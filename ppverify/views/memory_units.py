"""Memory amounts in the unit ``--memory-cap`` counts, as ``verify`` prints them: bytes as they
are, else activations of one microbatch on a device's whole share of layers
(:func:`~ppverify.core.memory_unit.exact_unit`). A cost model whose stages hold other
activations than ``1/v`` (``"activation": [2, 1]`` on a linear pipeline of p = 2: one activation
is 2 of its units) would otherwise print its raw units labelled activations, next to a cap in
activations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from ..core.memory_cap import MemoryCap, cap_check
from ..core.memory_unit import in_activations, printed_unit
from ..core.timeline import Timeline


def cap_check_in_activations(peaks: Sequence[float], cap: MemoryCap, unit: Fraction) -> dict[str, Any]:
    """:func:`~ppverify.core.memory_cap.cap_check` with the line's peaks in ``unit`` (the cap's
    own words already count activations); the devices over the cap are decided on the raw
    ``peaks`` against the raw cap, as ``verify`` decides them.

    Example:
        >>> import dataclasses
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.memory_cap import parse_memory_cap
        >>> pl = linear(2)
        >>> costs = dataclasses.replace(CostModel.abstract(pl), activation=(2.0, 1.0))
        >>> cap = parse_memory_cap("3", costs, pl)  # 3 activations = 6 units
        >>> cap_check_in_activations([4.0, 1.0], cap, Fraction(2))["line"]
        'cap 3 activations: every device within it (highest peak 2)'
    """
    raw = cap_check(peaks, cap)
    if unit == 1 or cap.value is None or cap.unit == "bytes":
        return raw
    shown = cap_check(in_activations(peaks, unit), dataclasses.replace(cap, value=cap.activations))
    if shown["over"] != raw["over"]:  # a division rounded a peak onto the cap: the raw verdict, said in raw units
        return raw
    return dict(raw, line=shown["line"])


def timeline_cap_check(timeline: Timeline, cap: MemoryCap) -> dict[str, Any]:
    """:func:`cap_check_in_activations` of ``timeline``'s activation peaks, in its cost model's unit.

    Example:
        >>> import dataclasses
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> from ppverify.core.memory_cap import parse_memory_cap
        >>> s = build("1f1b", p=2, m=2)
        >>> timeline_cap_check(run(s), parse_memory_cap("1", CostModel.abstract(s.placement), s.placement))["line"]
        'cap 1 activation: device 0 over it (peak 2)'
    """
    unit = printed_unit(timeline.costs, timeline.schedule.placement)
    return cap_check_in_activations(timeline.peak_memory().tolist(), cap, unit)
