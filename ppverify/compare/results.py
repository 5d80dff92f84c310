"""What a comparison computes: one level's numbers for one schedule in one configuration
(:class:`LevelResult`) and every level's for one schedule entry (:class:`PointResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .config import Config, ScheduleEntry

#: columns of the result frame, in order (also the CSV/Parquet layout)
COLUMNS: tuple[str, ...] = (
    "config",
    "p",
    "m",
    "system",
    "model",
    "schedule",
    "family",
    "params",
    "level",
    "semantics",
    "status",
    "makespan",
    "time_unit",
    "bubble_ratio",
    "peak_activation",
    "peak_activations",
    "memory_unit",
    "lower_bound",
    "exact",
    "rank",
    "rank_change",
    "gap_to_bound",
    "optimum_peak",
    "verified",
    "note",
    "seconds",
    "memory_cap",
    "oom_devices",
)
#: the columns :func:`add_ranks` derives from the others (what a sweep or a stored CSV recomputes)
DERIVED: tuple[str, ...] = ("rank", "rank_change", "gap_to_bound", "optimum_peak")


@dataclass(frozen=True)
class LevelResult:
    """The numbers one abstraction level gives for one schedule in one configuration.

    ``status`` is ``ok`` (a number), ``optimal``/``feasible`` (CP-SAT), ``unavailable`` (module
    missing), ``not applicable`` (outside the family's rules or regime) or ``error``; ``note``
    says why. ``lower_bound`` is CP-SAT's proven bound and ``memory_cap`` the per-device cap the
    optimum was solved under, in the printed unit (activations of the largest device's share, or bytes) (optimum level only; ``None``: unlimited).
    ``oom_devices`` are the devices whose peak (weights, gradients, optimizer state and
    activations) is over the system's memory: ``()`` when it fits, ``None`` when no capacity is
    known (abstract costs) or nothing ran.
    """

    level: str
    status: str
    makespan: float | None = None
    bubble_ratio: float | None = None
    peak_activations: tuple[float, ...] | None = None
    lower_bound: float | None = None
    exact: bool | None = None
    note: str = ""
    seconds: float = 0.0
    memory_cap: float | None = None
    oom_devices: tuple[int, ...] | None = None
    #: the Timeline behind the numbers (engine and optimum levels), kept for ``ppverify report``
    timeline: Any = field(default=None, compare=False, repr=False)

    @property
    def has_value(self) -> bool:
        """True when the level produced a makespan."""
        return self.makespan is not None

    @property
    def fits_memory(self) -> bool | None:
        """False when some device is out of memory, ``None`` when no capacity is known."""
        return None if self.oom_devices is None else not self.oom_devices


@dataclass(frozen=True)
class PointResult:
    """Every level's result for one schedule entry in one configuration, with the units used."""

    entry: ScheduleEntry
    config: Config
    results: tuple[LevelResult, ...]
    time_unit: str = "units"
    memory_unit: str = "activations"
    #: the Z3 verifier's verdict on the schedule: "valid", "INVALID: ...", "" when not checked
    verified: str = ""

    def level(self, name: str) -> LevelResult | None:
        """The result of one level, if it was evaluated."""
        return next((r for r in self.results if r.level == name), None)


__all__ = ["LevelResult", "PointResult"]
