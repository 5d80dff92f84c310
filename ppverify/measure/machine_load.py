"""How busy the machine was while something was measured: the CPU time of every process, read
from Linux's ``/proc/stat`` before and after.

Sleeping ops time the runtime's own per-action work and the wake-ups of its processes, and both
stretch when other processes hold the cores: on a 2-core machine other jobs at ``nice 19`` raise a
rank's gap between two ops from about 80 us to 300-700 us and a hand-over's wake-up from about
250 us to 0.7-2.4 ms (``docs/calibrate.md``, "held out"). A calibration or a measurement is
only comparable with another taken at the same load, so ``calibrate`` and the benchmarks state
it: :func:`cpu_ticks` before, :func:`cpu_share` after. Elsewhere than Linux both are None.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: /proc/stat's first line: user, nice, system, idle, iowait, irq, softirq, steal (ticks)
PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuShare:
    """The machine's CPUs over an interval: ``busy`` (the fraction of all CPU time spent running
    any process, ours included), ``niced`` (the fraction spent in processes of positive nice: other
    jobs at low priority, never ours) and the CPU ``seconds`` covered (wall time x CPUs).

    Example:
        >>> s = CpuShare(busy=0.9, niced=0.6, seconds=10.0)
        >>> s.describe()
        '90 % of the CPUs busy, 60 % by niced processes (other jobs)'
        >>> s.quiet
        False
    """

    busy: float
    niced: float
    seconds: float

    #: niced share above which a machine is not quiet (other jobs hold a tenth of the CPUs)
    QUIET_NICED = 0.10

    @property
    def quiet(self) -> bool:
        """Whether other (niced) jobs held less than :attr:`QUIET_NICED` of the CPUs."""
        return self.niced < self.QUIET_NICED

    #: busy share above which a calibration's CPUs were not its own: its workers sleep most
    #: of the time, 15-17 % of this 2-core machine's CPUs on a quiet machine (docs/calibrate.md)
    CROWDED_BUSY = 0.50

    @property
    def crowded(self) -> bool:
        """Whether more than half the CPUs were busy while the niced share stayed low: other jobs at
        normal priority, which :attr:`quiet` (niced jobs only) does not see.

        Example:
            >>> CpuShare(busy=0.87, niced=0.0, seconds=10.0).crowded, CpuShare(0.17, 0.0, 10.0).crowded
            (True, False)
        """
        return self.quiet and self.busy > self.CROWDED_BUSY

    def describe(self) -> str:
        """One phrase: ``'B % of the CPUs busy, N % by niced processes (other jobs)'``."""
        return f"{self.busy * 100:.0f} % of the CPUs busy, {self.niced * 100:.0f} % by niced processes (other jobs)"


def cpu_ticks(stat: Path = PROC_STAT) -> tuple[int, ...] | None:
    """The machine's cumulative CPU ticks (``/proc/stat``'s ``cpu`` line: user, nice, system,
    idle, iowait, irq, softirq, steal), or None where there is no such file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     f = Path(d) / "stat"
        ...     _ = f.write_text("cpu  100 50 20 800 5 1 2 0 0 0\\ncpu0 1 2 3 4\\n")
        ...     cpu_ticks(f)
        (100, 50, 20, 800, 5, 1, 2, 0)
    """
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu":
        return None
    try:
        values = tuple(int(x) for x in first[1:9])
    except ValueError:
        return None
    return values + (0,) * (8 - len(values))


def cpu_share(before: tuple[int, ...] | None, after: tuple[int, ...] | None) -> CpuShare | None:
    """The :class:`CpuShare` between two :func:`cpu_ticks` readings (None when either is None or
    no tick passed). ``seconds`` assumes Linux's 100 ticks per second.

    Example:
        >>> # 40 user + 100 nice + 60 system ticks busy, 200 idle: half busy, a quarter niced
        >>> cpu_share((100, 50, 20, 800, 5, 1, 2, 0), (140, 150, 80, 1000, 5, 1, 2, 0))
        CpuShare(busy=0.5, niced=0.25, seconds=4.0)
    """
    if before is None or after is None:
        return None
    d = [b - a for a, b in zip(before, after)]
    total = sum(d)
    if total <= 0:
        return None
    nice, idle, iowait = d[1], d[3], d[4]
    busy = total - idle - iowait
    return CpuShare(round(busy / total, 6), round(nice / total, 6), round(total / 100.0, 6))


def wait_quiet(timeout_s: float, window_s: float = 5.0, stat: Path = PROC_STAT) -> CpuShare | None:
    """Wait until a ``window_s`` interval passes in which other jobs held less than
    :attr:`CpuShare.QUIET_NICED` of the CPUs, for at most ``timeout_s`` seconds; the last window's
    :class:`CpuShare` (quiet or not: check :func:`idle_enough`), None where there is no
    ``/proc/stat``. For benchmarks that should measure a quiet machine. Nothing is measured while
    it waits, so every busy tick is another job's, niced or not: jobs at normal priority count too.

    Example:
        >>> wait_quiet(0.0, 0.01, Path("/nonexistent")) is None
        True
    """
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        before = cpu_ticks(stat)
        if before is None:
            return None
        time.sleep(window_s)
        share = cpu_share(before, cpu_ticks(stat))
        if share is None or idle_enough(share) or time.monotonic() >= deadline:
            return share


def idle_enough(share: CpuShare) -> bool:
    """Whether a window in which nothing was measured was quiet: other jobs, niced or not, held
    less than :attr:`CpuShare.QUIET_NICED` of the CPUs (the niced share alone misses jobs at normal
    priority, as other engineers' runs on a shared machine are).

    Example:
        >>> idle_enough(CpuShare(0.99, 0.0, 10.0)), idle_enough(CpuShare(0.05, 0.0, 10.0))
        (False, True)
    """
    return share.quiet and share.busy < CpuShare.QUIET_NICED


__all__ = ["CpuShare", "cpu_share", "cpu_ticks", "idle_enough", "wait_quiet"]


def add_wait_quiet_argument(parser: Any, when: str = "before measuring") -> None:
    """``--wait-quiet S`` on an argparse parser (the benchmark scripts' and ``calibrate``'s):
    ``when``, wait up to S seconds for a quiet window (:func:`wait_quiet`).

    Example:
        >>> import argparse
        >>> ap = argparse.ArgumentParser(); add_wait_quiet_argument(ap)
        >>> ap.parse_args(["--wait-quiet", "30"]).wait_quiet
        30.0
    """
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="S",
        help=f"{when}, wait up to S seconds for 5 s in which other jobs (niced or not) hold < 10 %% of the CPUs",
    )
