"""The engines ppverify knows, one entry each, in the order the CLI lists them.

:func:`ppverify.engines.run`, the ``--semantics`` choices and help of ``simulate`` and ``plot``
and the engine levels of ``compare`` all read :data:`ENGINES`; adding a semantics is writing its
engine (a function ``(schedule, costs, comm, **options) -> Timeline``, in its own module) and one
:class:`Engine` entry below.

Each entry's ``run`` imports its engine when first called, so that importing the registry (every
CLI start) loads none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from ..core.timeline import Timeline

#: an engine: ``(schedule, costs, comm, **options) -> Timeline``
RunFunction = Callable[..., Timeline]


@dataclass(frozen=True)
class Engine:
    """One semantics: its name, its engine, a one-line help, and whether ``compare`` shows it as
    an abstraction level (it times ops in the cost model's seconds with the communication model:
    ``plot`` draws those too).

    Example:
        >>> e = ENGINES["async"]
        >>> e.name, e.help, e.compare_level
        ('async', 'event-driven, no contention', True)
    """

    name: str
    run: RunFunction
    help: str
    compare_level: bool = False
    #: what the level means in ``compare``'s legend and ``--json`` (compare levels only)
    level_help: str = ""
    #: the engine models the runtime's per-action time itself: it takes the ops' own costs, before
    #: a system preset's ``runtime`` overhead is folded into them (:mod:`ppverify.core.overhead`)
    own_overhead: bool = False
    #: the engine counts unit steps, not the cost model's time (``plot`` does not draw it)
    unit_steps: bool = False


def _slot(schedule: Schedule, costs: CostModel, comm: CommModel, **options: Any) -> Timeline:
    from .table import slot_timeline

    return slot_timeline(schedule, costs, comm, **options)


def _async(schedule: Schedule, costs: CostModel, comm: CommModel, **options: Any) -> Timeline:
    from .simulate import simulate_async

    return simulate_async(schedule, costs, comm, **options)


def _contention(schedule: Schedule, costs: CostModel, comm: CommModel, **options: Any) -> Timeline:
    from .contention import simulate_contention

    return simulate_contention(schedule, costs, comm, **options)


def _runtime(schedule: Schedule, costs: CostModel, comm: CommModel, **options: Any) -> Timeline:
    from .runtime import runtime_timeline

    return runtime_timeline(schedule, costs, comm, **options)


def _torch(schedule: Schedule, costs: CostModel, comm: CommModel, **options: Any) -> Timeline:
    from .torch_steps import torch_timeline

    return torch_timeline(schedule, costs, **options)  # unit steps: no communication model


#: the built-in engines, in the order the CLI lists them
ENGINES: Mapping[str, Engine] = {
    e.name: e
    for e in (
        Engine(
            "slot",
            _slot,
            "idealized table, communication charged per column",
            compare_level=True,
            level_help="slot table: synchronous columns, communication charged per column",
        ),
        Engine(
            "async",
            _async,
            "event-driven, no contention",
            compare_level=True,
            level_help="event-driven simulation: transfer = latency + bytes/bandwidth, no contention",
        ),
        Engine(
            "contention",
            _contention,
            "event-driven, FIFO queues on links and NICs",
            compare_level=True,
            level_help="event-driven simulation: transfers queue on shared links and NICs",
        ),
        Engine(
            "torch",
            _torch,
            "PyTorch's unit-step simulator (_simulate_comms_compute): every action one step, zero latency",
            unit_steps=True,
        ),
        Engine(
            "runtime",
            _runtime,
            "PyTorch's pipeline runtime on gloo, action by action: the hand-over model of a calibrated "
            "system preset (runtime.handover, from ppverify calibrate); one-pipe schedules",
            own_overhead=True,
        ),
    )
}


def engine(name: str) -> Engine:
    """The registered engine called ``name``; a :class:`~ppverify.core.errors.ParameterError` naming
    the known ones otherwise.

    Example:
        >>> engine("torch").compare_level
        False
        >>> engine("fast")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter semantics=fast: expected one of slot, async, contention, torch, runtime
    """
    found = ENGINES.get(name)
    if found is None:
        raise ParameterError("semantics", name, f"expected one of {', '.join(ENGINES)}")
    return found


def names(levels_only: bool = False, timed: bool = False) -> tuple[str, ...]:
    """Names of the registered engines in order; with ``levels_only``, those ``compare`` shows as
    abstraction levels; with ``timed``, those timing ops in the cost model's time (what ``plot``
    draws: every engine but the unit-step ones).

    Example:
        >>> names(), names(levels_only=True)
        (('slot', 'async', 'contention', 'torch', 'runtime'), ('slot', 'async', 'contention'))
        >>> names(timed=True)
        ('slot', 'async', 'contention', 'runtime')
    """
    return tuple(n for n, e in ENGINES.items() if (e.compare_level or not levels_only) and not (timed and e.unit_steps))


def help_text(default: str | None = None, levels_only: bool = False, timed: bool = False) -> str:
    """``--semantics`` help listing the engines of :func:`names`: ``name: help; ...`` (``default``
    marked).

    Example:
        >>> help_text("async").split("; ")[1]
        'async: event-driven, no contention (default)'
        >>> help_text(levels_only=True).count(";")
        2
    """
    return "; ".join(
        f"{n}: {ENGINES[n].help}" + (" (default)" if n == default else "") for n in names(levels_only, timed)
    )


__all__ = ["ENGINES", "Engine", "RunFunction", "engine", "help_text", "names"]
