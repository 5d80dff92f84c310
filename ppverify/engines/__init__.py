"""Engines turn a schedule into a :class:`~ppverify.timeline.Timeline` under explicit semantics.

* ``slot``: the idealized table (integer ticks, communication charged per column when asked);
* ``async``: event-driven, transfers take the communication model's time, no contention;
* ``contention``: as async, transfers sharing a link or NIC queue behind each other;
* ``torch``: PyTorch pipelining's unit-step simulator (:mod:`.torch_steps`).
"""

from __future__ import annotations

from typing import Any

from ..comm import NO_COMM, CommModel
from ..costs import CostModel
from ..errors import ParameterError
from ..schedule import Schedule
from ..timeline import Timeline

SEMANTICS: tuple[str, ...] = ("slot", "async", "contention", "torch")


def default_costs(schedule: Schedule) -> CostModel:
    """Unit costs: every op one slot per device share (:meth:`CostModel.unit`).

    Example:
        >>> from ppverify.schedules import build
        >>> default_costs(build("gpipe", p=2, m=1)).duration["B"]
        (1.0, 1.0)
    """
    return CostModel.unit(schedule.placement)


def run(
    schedule: Schedule,
    costs: CostModel | None = None,
    comm: CommModel | None = None,
    semantics: str = "async",
    **options: Any,
) -> Timeline:
    """Run a schedule under one semantics and return its timeline.

    ``costs`` defaults to :func:`default_costs`; ``comm`` to no communication.

    Example:
        >>> from ppverify.schedules import build
        >>> run(build("1f1b", p=4, m=4), semantics="slot").makespan
        14.0
    """
    costs = costs or default_costs(schedule)
    comm = comm or NO_COMM
    if semantics == "slot":
        from .table import slot_timeline

        return slot_timeline(schedule, costs, comm, **options)
    if semantics == "async":
        from .simulate import simulate_async

        return simulate_async(schedule, costs, comm, **options)
    if semantics == "contention":
        from .contention import simulate_contention

        return simulate_contention(schedule, costs, comm, **options)
    if semantics == "torch":
        from .torch_steps import torch_timeline

        return torch_timeline(schedule, costs, **options)
    raise ParameterError("semantics", semantics, f"expected one of {', '.join(SEMANTICS)}")
