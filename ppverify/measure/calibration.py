"""What ``ppverify calibrate`` runs and what it found: the ping-pong sizes, the sleeps and
schedules of the overhead runs, and :class:`Calibration` (:mod:`.calibrate` measures it,
:mod:`.fit` fits it, :mod:`.preset_file` writes it as a system preset)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: message sizes of the ping-pong, bytes (float32 tensors)
PINGPONG_SIZES: tuple[int, ...] = (4, 1024, 16384, 262144, 1048576, 4194304)
#: the sleeps of the overhead runs, seconds per device share
CALIBRATION_COSTS = {"F": 0.005, "B": 0.01}
#: (family, p, m, params) run to fit the overhead: different ratios of SEND/RECV to compute actions
#: on the critical path (W ops have none, middle stages of linear pipes two, V handovers are local),
#: and two-pipe schedules for ppverify's own runner
OVERHEAD_SCHEDULES: tuple[tuple[str, int, int, dict], ...] = (
    ("1f1b", 2, 4, {}),
    ("1f1b", 4, 8, {}),
    ("interleaved-1f1b", 2, 8, {"v": 2}),
    ("zbv", 4, 8, {}),
    ("1f1b-split", 3, 6, {}),
    ("gpipe", 3, 4, {}),
    ("interleaved-1f1b", 4, 8, {"v": 2}),
    ("zb-h1", 2, 8, {}),
    ("chimera", 2, 4, {}),
    ("chimera", 4, 8, {}),
    ("dualpipe", 4, 8, {}),
)
#: the subset ``calibrate(quick=True)`` runs
QUICK_SCHEDULES: tuple[tuple[str, int, int, dict], ...] = (
    ("1f1b", 2, 4, {}),
    ("interleaved-1f1b", 2, 8, {"v": 2}),
    ("zbv", 4, 8, {}),
    ("gpipe", 3, 4, {}),
    ("chimera", 2, 4, {}),
    ("chimera", 4, 4, {}),
)


@dataclass(frozen=True)
class Calibration:
    """What ``ppverify calibrate`` measured: overheads and link (seconds, bytes/s), the raw samples
    (``pingpong``: ``(bytes, one-way s)``; ``runs``: ``(schedule, measured makespan s)``), the fit's
    rms relative residual, and where.

    Example:
        >>> c = Calibration(1e-3, 2e-4, 5e-5, 1e9)
        >>> round(c.predict_transfer(1e6), 6)
        0.00105
    """

    action_overhead_s: float
    transfer_overhead_s: float
    latency_s: float
    bandwidth_Bps: float
    pingpong: tuple[tuple[int, float], ...] = ()
    runs: tuple[tuple[str, float], ...] = ()
    residual: float = 0.0
    machine: str = ""
    date: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``(action s, transfer s)`` of ppverify's two-pipe runner; None: as the one-pipe figures
    two_pipe_overhead_s: tuple[float, float] | None = None
    #: PyTorch's runtime action by action (:class:`~ppverify.engines.runtime.Handover`), None: not measured
    handover: Any = None
    #: ``(ranks, Handover)``: the same terms measured with each number of worker processes
    handover_by_ranks: tuple[tuple[int, Any], ...] = ()

    def predict_transfer(self, nbytes: float) -> float:
        """One-way time of a message under the fitted line."""
        return self.latency_s + nbytes / self.bandwidth_Bps


__all__ = ["CALIBRATION_COSTS", "OVERHEAD_SCHEDULES", "PINGPONG_SIZES", "QUICK_SCHEDULES", "Calibration"]
