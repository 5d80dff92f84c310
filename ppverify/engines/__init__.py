"""Engines turn a schedule into a :class:`~ppverify.core.timeline.Timeline` under explicit semantics.

* ``slot``: the idealized table (integer ticks, communication charged per column when asked);
* ``async``: event-driven, transfers take the communication model's time, no contention;
* ``contention``: as async, transfers sharing a link or NIC queue behind each other;
* ``torch``: PyTorch pipelining's unit-step simulator (:mod:`.torch_steps`).

:mod:`.registry` lists them; :func:`run` dispatches through it.
"""

from __future__ import annotations

from typing import Any

from ..core.comm import NO_COMM, CommModel
from ..core.costs import CostModel
from ..core.schedule import Schedule
from ..core.timeline import Timeline
from .registry import ENGINES, engine

#: the built-in semantics, in order (:data:`.registry.ENGINES` is where they are registered)
SEMANTICS: tuple[str, ...] = tuple(ENGINES)


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

    ``costs`` defaults to :func:`default_costs`; ``comm`` to no communication. ``semantics`` names
    an engine of :data:`.registry.ENGINES`; ``options`` go to that engine.

    Example:
        >>> from ppverify.schedules import build
        >>> run(build("1f1b", p=4, m=4), semantics="slot").makespan
        14.0
    """
    eng = engine(semantics)  # before the defaults: an unknown name fails first
    return eng.run(schedule, costs or default_costs(schedule), comm or NO_COMM, **options)


#: public helpers of the engine modules, importable from the package (loaded on first use so
#: that ``import ppverify.engines`` stays cheap for a command that only lists the semantics)
_PUBLIC = {
    "format_table": "table",
    "format_schedule_table": "table",
    "table_grid_of": "table",
    "timeline_table": "table",
    "simulate_steps": "torch_steps",
    "torch_step_count": "torch_steps",
    "memory_report": "simulate",
}


def __getattr__(name: str) -> Any:
    """Load a public helper of an engine module on first access (``from ppverify.engines import format_table``).

    Example:
        >>> from ppverify.engines import torch_step_count
        >>> from ppverify.schedules import build
        >>> torch_step_count(build("gpipe", p=2, m=2)) > 0
        True
    """
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
