"""The Schedule value: a placement, the pipe of each microbatch, and one program per device."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ParameterError
from .ops import Action, Op, compute_ops
from .placement import Placement


@dataclass(frozen=True, eq=False)
class Schedule:
    """Placement + one program (ordered actions) per device; ``None`` entries are idle slots.

    ``pipe_of_mb[mb]`` says which pipe microbatch ``mb`` flows through (all 0 for one pipe).
    ``family``/``params`` record how it was made (for display and JSON).

    Example:
        >>> from ppverify.core.placement import linear
        >>> s = Schedule(linear(1), 1, ((Op("F", 0, 0), Op("B", 0, 0)),), (0,))
        >>> s.p, s.num_stages, s.num_ops, s.device_of(Op("B", 0, 0))
        (1, 1, 2, 0)
    """

    placement: Placement
    m: int
    programs: tuple[tuple[Action, ...], ...]
    pipe_of_mb: tuple[int, ...]
    family: str = "custom"
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.m < 1:
            raise ParameterError("m", self.m, "must be >= 1")
        if len(self.programs) != self.placement.p:
            raise ParameterError("programs", len(self.programs), f"need one program per device (p={self.placement.p})")
        if len(self.pipe_of_mb) != self.m:
            raise ParameterError("pipe_of_mb", len(self.pipe_of_mb), f"need one pipe per microbatch (m={self.m})")
        for mb, pipe in enumerate(self.pipe_of_mb):
            if not 0 <= pipe < self.placement.num_pipes:
                raise ParameterError(
                    "pipe_of_mb", f"mb {mb} -> {pipe}", f"pipe must be in 0..{self.placement.num_pipes - 1}"
                )

    @property
    def p(self) -> int:
        """Number of devices."""
        return self.placement.p

    @property
    def num_stages(self) -> int:
        """Stages of one pipe (``S``)."""
        return self.placement.num_stages

    def device_of(self, op: Op) -> int:
        """Device that must run ``op`` (its stage on its microbatch's pipe)."""
        return self.placement.maps[self.pipe_of_mb[op.mb]][op.stage]

    def ops(self, device: int | None = None) -> Iterator[Op]:
        """Compute ops in program order, of one device or of all devices in device order."""
        progs = self.programs if device is None else (self.programs[device],)
        for prog in progs:
            yield from compute_ops(prog)

    @property
    def num_ops(self) -> int:
        """Number of compute ops in all programs."""
        return sum(1 for _ in self.ops())

    @property
    def has_split_backward(self) -> bool:
        """True when any backward is split into I and W."""
        return any(op.kind in ("I", "W") for op in self.ops())

    def describe(self) -> str:
        """One-line description: family and parameters.

        Example:
            >>> from ppverify.schedules import build
            >>> build("1f1b", p=4, m=8).describe()
            '1f1b p=4 m=8'
        """
        extra = " ".join(f"{k}={v}" for k, v in self.params.items() if k not in ("p", "m"))
        return f"{self.family} p={self.p} m={self.m}" + (f" {extra}" if extra else "")

    def with_programs(self, programs: tuple[tuple[Action, ...], ...]) -> Schedule:
        """Same schedule with other programs (used by transformations and mutation tests)."""
        return Schedule(self.placement, self.m, programs, self.pipe_of_mb, self.family, dict(self.params))


def carrier(placement: Placement, m: int, pipe_of_mb: tuple[int, ...] | None = None) -> Schedule:
    """A schedule of no ops on ``placement`` with ``m`` microbatches: what presets are resolved on
    when only the placement and sizes matter (a unit, a search's costs), not an order.

    Example:
        >>> from ppverify.core.placement import linear
        >>> s = carrier(linear(2), 3)
        >>> s.programs, s.pipe_of_mb, s.num_ops
        (((), ()), (0, 0, 0), 0)
    """
    return Schedule(placement, m, tuple(() for _ in range(placement.p)), pipe_of_mb or (0,) * m)
