"""What the parent sends to the workers (a :class:`Job` per schedule) and what each rank sends
back (a :class:`RankResult`). The worker entry point that runs them is
:func:`ppverify.measure.dispatch.run_jobs` (a module of its own: it imports the runners, which
import these values, so keeping it here would make an import cycle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.schedule import Schedule
from .record import Event
from .stages import ModelSpec


@dataclass(frozen=True)
class Job:
    """One schedule to run: the schedule, its CSV cells for PyTorch's runtime (``rows``; empty
    for a two-pipe schedule, which runs on :mod:`.twopipe`), the CSV flavour, the sleep per op
    ``durations[kind][stage]`` in seconds, the model sizes, warm-up and measured steps, whether
    to record events, and whether this rank should compute the single-process reference.

    Example:
        >>> from ppverify.schedules import build
        >>> j = Job(build("1f1b", p=2, m=2), [["0F0"]], "compute_only", {"F": (0.0, 0.0)}, ModelSpec(4, 8, 2))
        >>> j.steps, j.warmup, j.two_pipe
        (3, 1, False)
    """

    schedule: Schedule
    rows: list[list[str]]
    format: str
    durations: dict[str, tuple[float, ...]]
    spec: ModelSpec
    steps: int = 3
    warmup: int = 1
    record: bool = True
    #: ``measure --profile DIR``: each rank writes a ``torch.profiler`` trace there (:mod:`.profile`)
    profile: str | None = None
    #: ``measure --link-delay S``: seconds every cross-rank input waits after its SEND's post at
    #: the least (:mod:`.link_delay`); 0: the link as it is
    link_delay: float = 0.0

    @property
    def two_pipe(self) -> bool:
        """True when microbatches use two pipes (Chimera, DualPipe): no PyTorch runtime for it."""
        return self.schedule.placement.num_pipes > 1


@dataclass(frozen=True)
class RankResult:
    """What one rank returns for one job: per measured step its events and its begin/end times
    (CLOCK_MONOTONIC ns), the gradients of its stage replicas after the last step
    (``grads[(pipe, stage)][param name]``, numpy arrays), and, from rank 0, the reference
    gradients of the single-process run (``reference[stage][param name]``)."""

    events: list[list[Event]]
    begins: list[int]
    ends: list[int]
    grads: dict[tuple[int, int], dict[str, Any]]
    reference: dict[int, dict[str, Any]] | None = None
    info: dict[str, Any] = field(default_factory=dict)
