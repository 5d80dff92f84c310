"""Communication models: the time a point-to-point transfer takes between two devices.

Anything with ``transfer_time(src, dst, nbytes) -> float`` is a communication model; systems from
presets (:mod:`ppverify.systems.system`) are one, :class:`FixedDelay` (``--comm-delay c``) is the abstract
one, and :data:`NO_COMM` is the idealized zero-cost network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class CommModel(Protocol):
    """Protocol of communication models."""

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        """Seconds (or abstract units) to move ``nbytes`` from device ``src`` to ``dst``."""
        ...


@dataclass(frozen=True)
class FixedDelay:
    """Every cross-device transfer takes ``delay``, whatever its size; same-device is free.

    Example:
        >>> FixedDelay(0.5).transfer_time(0, 1, 1e6), FixedDelay(0.5).transfer_time(1, 1, 1e6)
        (0.5, 0.0)
    """

    delay: float = 0.0

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        """``delay`` between distinct devices, 0 on the same device."""
        return 0.0 if src == dst else self.delay


NO_COMM = FixedDelay(0.0)

#: when the weight-gradient all-reduce between stage replicas starts: as soon as a stage's last
#: backward ends, after the whole pipeline flush, or never (the engines and the JSON files share it)
SYNC_MODES: tuple[str, ...] = ("eager", "after-flush", "none")
