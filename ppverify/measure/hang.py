"""A measured run stopped by its timeout, and whether it was stuck or only slow.

``--timeout`` bounds a schedule's whole run (:mod:`.workers`), so a run that is still moving when
the allowance ends is stopped too. The parent watches every rank's status (the action it is in);
how long ago the last rank changed action tells the two apart: a deadlock leaves every rank where
it is, a run that is only slow was changing action a moment before. Each gets its own message,
so a slow run is not reported as a hang. A rank still in PyTorch's schedule loader (:data:`LOADING`)
is never stuck either: the loader only computes (:mod:`.load_size`), however long it takes.
"""

from __future__ import annotations

#: a run whose ranks changed action within this long before the stop (at most half the timeout)
#: was still running, not stuck
MOVING_S = 1.0
#: a worker's status while PyTorch's ``_load_csv`` reads and lowers the schedule (:mod:`.runtime`)
LOADING = "loading the schedule file"


class MeasureTimeout(Exception):
    """The workers did not finish within the timeout: a hang (a negative verdict, not bad input),
    or, when a rank changed action less than ``min(1 s, timeout / 2)`` before the stop (``idle``,
    seconds; None: not watched), a run still going when its allowance ended.

    ``blocked[rank]`` is the action (or phase) each rank was in when it was stopped.

    Example:
        >>> str(MeasureTimeout(2.0, {0: "0F1", 1: "1B0"}))
        'hang: no progress within 2 s; rank 0 blocked in 0F1; rank 1 blocked in 1B0'
        >>> MeasureTimeout(2.0, {0: "0F1"}, idle=1.5).still_running
        False
        >>> str(MeasureTimeout(5.0, {0: LOADING, 1: "barrier before step 0"}, idle=4.0))
        "not finished within 5 s (--timeout bounds the whole run), though still running: rank 0 still in PyTorch's schedule loader (_load_csv), whose lowering takes time that grows with the square of each rank's actions; rank 1 in barrier before step 0; raise --timeout or lower -m"
        >>> str(MeasureTimeout(0.05, {0: "0B1", 1: "barrier after the last step"}, idle=0.003))
        'not finished within 0.05 s (--timeout bounds the whole run), though still running: the last change of action 3 ms before the stop; rank 0 in 0B1; rank 1 in barrier after the last step; raise --timeout'
    """

    def __init__(self, timeout: float, blocked: dict[int, str], idle: float | None = None) -> None:
        self.timeout, self.blocked, self.idle = timeout, dict(blocked), idle
        loading = sorted(r for r, a in blocked.items() if a == LOADING)
        self.still_running = bool(loading) or (idle is not None and idle < min(MOVING_S, timeout / 2))
        if loading:  # computing, not waiting: however long since its last change of action
            parts = [
                f"rank {r} still in PyTorch's schedule loader (_load_csv), whose lowering takes time that grows "
                "with the square of each rank's actions"
                if a == LOADING
                else f"rank {r} in {a}"
                for r, a in sorted(blocked.items())
            ]
            text = (
                f"not finished within {timeout:g} s (--timeout bounds the whole run), though still running: "
                + "; ".join(parts)
                + "; raise --timeout or lower -m"
            )
        elif self.still_running:
            parts = [f"rank {r} in {a}" for r, a in sorted(blocked.items())]
            ago = f"{idle * 1e3:.0f} ms" if idle >= 1e-3 else "under 1 ms"  # type: ignore[operator]
            text = (
                f"not finished within {timeout:g} s (--timeout bounds the whole run), though still running: the last "
                f"change of action {ago} before the stop; " + "; ".join(parts) + "; raise --timeout"
            )
        else:
            parts = [f"rank {r} blocked in {a}" for r, a in sorted(blocked.items())]
            text = f"hang: no progress within {timeout:g} s; " + "; ".join(parts)
        super().__init__(text)


def _demo_moving(rank: int, world_size: int, moving: bool) -> None:
    """A worker for tests of the verdict (:func:`~ppverify.measure.workers.run_workers`): it enters
    phase 0, then runs for a minute, changing action every 10 ms when ``moving`` (a slow run), else
    never (a stuck one).

    Example:
        >>> from ppverify.measure.workers import run_workers
        >>> run_workers(2, _demo_moving, True, timeout=0.5)  # doctest: +SKIP
        Traceback (most recent call last):
        ...
        ppverify.measure.hang.MeasureTimeout: not finished within 0.5 s (--timeout bounds the whole run), though ...
    """
    import time

    from .status import set_status

    set_status("op 0", phase=0)
    for k in range(6000):
        time.sleep(0.01)
        if moving:
            set_status(f"op {k + 1}")


__all__ = ["LOADING", "MOVING_S", "MeasureTimeout"]
