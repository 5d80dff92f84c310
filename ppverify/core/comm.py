"""Communication models: the time a point-to-point transfer takes between two devices.

Anything with ``transfer_time(src, dst, nbytes) -> float`` is a communication model; systems from
presets (:mod:`ppverify.systems.system`) are one, :class:`FixedDelay` (``--comm-delay c``) is the abstract
one, and :data:`NO_COMM` is the idealized zero-cost network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from .errors import ParameterError


def _seconds(value: object) -> float | None:
    """``value`` as a float when it is a finite number >= 0 (a time), else ``None``.

    Example:
        >>> _seconds(0.5), _seconds(-1), _seconds(float("nan")), _seconds("x")
        (0.5, None, None, None)
    """
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x >= 0 else None


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

    def __post_init__(self) -> None:
        # a negative delay would let a consumer start before its input was made (a makespan below
        # the one with no communication at all); NaN or inf time nothing
        if isinstance(self.delay, bool) or _seconds(self.delay) is None:
            raise ParameterError("comm-delay", self.delay, "must be a finite number >= 0")

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        """``delay`` between distinct devices, 0 on the same device."""
        return 0.0 if src == dst else self.delay


NO_COMM = FixedDelay(0.0)


def transfer_time(comm: CommModel, src: int, dst: int, nbytes: float) -> float:
    """``comm.transfer_time(src, dst, nbytes)`` as a float, checked: any communication model's
    transfer time must be a finite number >= 0 (a negative one lets a consumer start before its
    input exists, NaN or inf times nothing), else a :class:`~ppverify.core.errors.ParameterError`.
    Every engine, the verifier's timing claims and the optimizer read transfer times through it.

    Example:
        >>> transfer_time(FixedDelay(0.5), 0, 1, 1e6)
        0.5
        >>> class Back:
        ...     def transfer_time(self, src, dst, nbytes): return -1.0
        >>> transfer_time(Back(), 0, 1, 8.0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter comm=Back: transfer times must be finite and >= 0, got -1.0 from device 0 to 1 (8 bytes)
    """
    t = comm.transfer_time(src, dst, nbytes)
    x = _seconds(t)
    if x is None:
        raise ParameterError(
            "comm",
            type(comm).__name__,
            f"transfer times must be finite and >= 0, got {t!r} from device {src} to {dst} ({nbytes:g} bytes)",
        )
    return x


#: when the weight-gradient all-reduce between stage replicas starts: as soon as a stage's last
#: backward ends, after the whole pipeline flush, or never (the engines and the JSON files share it)
SYNC_MODES: tuple[str, ...] = ("eager", "after-flush", "none")
