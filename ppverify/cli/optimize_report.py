"""Memory amounts of ``optimize --json`` and ``gap`` (text and JSON) in the unit every command
prints: bytes as they are, else activations of one microbatch on a device's whole share
(:func:`~ppverify.core.memory_cap.printed_unit`), the unit ``memory_unit`` names and the cap's
label counts. The solver keeps the cost model's raw unit inside; where devices hold unequal
shares (map ``0,1,1``, ``--costs``: stages of ``p/S = 2/3`` each) one activation is the largest
device's ``4/3`` raw units, so a raw peak of 2 is 1.5 activations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: the JSON keys of ``optimize`` and ``gap`` that hold one memory amount, or a list of them
MEMORY_KEYS: tuple[str, ...] = ("memory_cap", "memory_cap_value", "optimum_peak", "family_peak_memory", "peak_memory")


def memory_shown(problem: Any) -> Callable[[float], float]:
    """One amount of ``problem``'s cost model (raw unit) as it is shown.

    Example:
        >>> from ppverify.optimize import Problem
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import Placement
        >>> pl = Placement(2, ((0, 1, 1),))
        >>> shown = memory_shown(Problem(pl, 2, CostModel.abstract(pl)))
        >>> shown(4 / 3), shown(2.0)  # one activation is device 1's 2 x 2/3 = 4/3 units
        (1.0, 1.5)
    """
    from ..core.memory_unit import printed_unit
    from ..views.memory_units import in_activations

    one = printed_unit(problem.costs, problem.placement)
    return lambda x: in_activations([x], one)[0]


def shown_json(out: dict[str, Any], problem: Any) -> dict[str, Any]:
    """``out`` with its memory amounts (:data:`MEMORY_KEYS`, numbers or lists of numbers) in the
    shown unit; text (a cap's spelling), ``None`` and other keys as they are.

    Example:
        >>> from ppverify.optimize import Problem
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import Placement
        >>> pl = Placement(2, ((0, 1, 1),))
        >>> shown_json({"memory_cap": 2.0, "peak_memory": [4 / 3, 2.0], "value": 11.0}, Problem(pl, 2, CostModel.abstract(pl)))
        {'memory_cap': 1.5, 'peak_memory': [1.0, 1.5], 'value': 11.0}
    """
    shown = memory_shown(problem)
    res = dict(out)
    for k in MEMORY_KEYS:
        v = res.get(k)
        if isinstance(v, list):
            res[k] = [shown(x) for x in v]
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            res[k] = shown(v)
    return res


__all__ = ["MEMORY_KEYS", "memory_shown", "shown_json"]
