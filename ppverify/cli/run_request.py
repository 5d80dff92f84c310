"""The typed request of a command that runs one schedule (``simulate``, ``verify``, ``show``):
the options they share read once, at the command's boundary, into a frozen :class:`RunRequest`
(where the schedule comes from, the preset settings with ``--costs`` as ``(kind, cost)`` pairs,
the ``--memory-cap`` :class:`~ppverify.core.memory_cap.CapSpec`, the collectives). Everything
after the boundary takes the request's values and never parses option text again.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

from ..core.memory_cap import CapSpec, read_memory_cap
from ..core.schedule import Schedule
from ..systems.preset_models import PresetSettings, resolve_presets, settings_from
from .common import ScheduleSource, parsed_costs, schedule_source
from .file_settings import FileOverrides, Timing, file_timing, print_notes


@dataclass(frozen=True)
class RunRequest:
    """One run of one schedule, as typed values: ``source`` (family or file, ``p``, ``m``, family
    parameters), ``settings`` (presets, or abstract costs as pairs and the fixed delay),
    ``memory_cap`` (``None``: not given), ``sync`` (``None``: a saved file's or the default) and
    ``dp_allreduce``.

    Example:
        >>> r = RunRequest(ScheduleSource("1f1b", 2, 4), PresetSettings(costs=(("F", 1.0), ("B", 2.0))))
        >>> r.costs, r.memory_cap
        ((('F', 1.0), ('B', 2.0)), None)
    """

    source: ScheduleSource
    settings: PresetSettings
    memory_cap: CapSpec | None = None
    sync: str | None = None
    dp_allreduce: int | None = None

    @property
    def costs(self) -> tuple[tuple[str, float], ...] | None:
        """``--costs`` as ``(kind, cost)`` pairs, ``None`` when not given."""
        costs = self.settings.costs
        assert not isinstance(costs, str), "a request holds the costs read, never their text"
        return costs or None


def run_request(args: argparse.Namespace) -> RunRequest:
    """Read the shared options of ``args`` once: ``--costs`` (refused here, before any build),
    then ``--memory-cap``; ``args`` is left as parsed.

    Example:
        >>> ns = argparse.Namespace(schedule="1f1b", p=2, m=4, costs="F=1,B=2", memory_cap="2", sync=None)
        >>> r = run_request(ns)
        >>> r.source.name, r.costs, r.memory_cap.kind, r.settings.comm_delay, ns.costs
        ('1f1b', (('F', 1.0), ('B', 2.0)), 'activations', None, 'F=1,B=2')
    """
    settings = replace(settings_from(vars(args)), costs=parsed_costs(args))
    cap = read_memory_cap(getattr(args, "memory_cap", None))
    sync, dp = getattr(args, "sync", None), getattr(args, "dp_allreduce", None)
    return RunRequest(schedule_source(args), settings, cap, sync, dp)


def request_timing(request: RunRequest, schedule: Schedule) -> Timing:
    """The cost and communication models and collectives for ``schedule``: the request's
    settings resolved (:func:`~ppverify.systems.preset_models.resolve_presets`), then a saved
    file's own timing where the request leaves it open (:func:`~.file_settings.file_timing`).

    Example:
        >>> from ppverify.schedules import build
        >>> r = RunRequest(ScheduleSource("gpipe", 2, 2), PresetSettings(costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.5))
        >>> t = request_timing(r, build("gpipe", p=2, m=2))
        >>> t.ctx.costs.duration["B"], t.ctx.comm.transfer_time(0, 1, 0), t.sync
        ((2.0, 2.0), 0.5, 'eager')
    """
    ctx = resolve_presets(request.settings, schedule)
    s = request.settings
    given = FileOverrides(bool(s.costs), s.comm_delay is not None, request.sync, request.dp_allreduce)
    timing = file_timing(request.source.name or "", given, schedule, ctx)
    print_notes(timing.notes)
    return timing


def check_timed_options(args: argparse.Namespace) -> None:
    """Refuse timing options beside a semantics that counts unit steps (``torch``: every action
    one step, zero latency): they would change nothing, and a preset made its step count read
    as seconds (``makespan 33.0000 s`` for 33 steps).

    Example:
        >>> check_timed_options(argparse.Namespace(semantics="async", costs="F=1", comm_delay=None))
        >>> check_timed_options(argparse.Namespace(semantics="torch", costs=None, comm_delay=1.0))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter comm-delay=1.0: the torch semantics counts unit steps (every action one step, zero latency), which --comm-delay does not change: leave it out, or pick a timed semantics
    """
    from ..core.errors import ParameterError
    from ..engines import registry

    if not registry.engine(args.semantics).unit_steps:
        return
    for option in ("costs", "comm_delay", "system", "model"):
        value = getattr(args, option, None)
        if value is not None:
            flag = option.replace("_", "-")
            raise ParameterError(
                flag,
                value,
                f"the {args.semantics} semantics counts unit steps (every action one step, zero latency), which "
                f"--{flag} does not change: leave it out, or pick a timed semantics",
            )
