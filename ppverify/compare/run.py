"""Run a comparison: every schedule entry in every configuration at every level, with progress."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import replace

import pandas as pd

from ..core.memory_cap import CapSpec
from .config import DEFAULT_SCHEDULES, LEVELS, Config, ScheduleEntry
from .evaluate import PointResult, evaluate_point
from .table import to_frame


def run_comparison(
    configs: Iterable[Config],
    entries: tuple[ScheduleEntry, ...] = DEFAULT_SCHEDULES,
    levels: tuple[str, ...] = LEVELS,
    time_limit: float = 1.0,
    max_optimum_ops: int = 256,
    progress: bool = False,
    verify: bool = False,
    on_point: Callable[[PointResult], None] | None = None,
    memory_cap: CapSpec | None = None,
    measured_trace: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """Evaluate ``entries`` x ``configs`` at ``levels``; one row per (schedule, configuration, level).

    The CP-SAT optimum is solved once per configuration and placement (schedules that share a
    placement share it); ``time_limit`` bounds each solve. With ``verify`` every schedule is also
    proven valid by the Z3 verifier (once per schedule; the ``verified`` column). ``on_point``
    receives every point result (with its levels' timelines) as it is computed. Each optimum is
    capped at its schedule's own peak unless ``memory_cap`` (``--memory-cap`` as read, a :class:`~ppverify.core.memory_cap.CapSpec`) says otherwise. ``measured_trace``:
    the measured level is read from these profiler traces instead of run
    (:func:`~ppverify.compare.measured.fill_from_trace`).

    Example:
        >>> from ppverify.compare.config import abstract_configs
        >>> df = run_comparison(abstract_configs({"F": 1, "B": 2}, (0.0,), (4,), (4,)),
        ...                     (ScheduleEntry("gpipe", "gpipe"),), ("slot",))
        >>> df[["schedule", "level", "makespan"]].values.tolist()
        [['gpipe', 'slot', 21.0]]
    """
    configs = list(configs)
    points: list[PointResult] = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=len(configs) * len(entries),
            desc="compare",
            unit="point",
            file=sys.stderr,
            dynamic_ncols=True,
            leave=False,
        )
    verdicts: dict = {}  # the schedule depends on (entry, p, m) only: verify it once
    for cfg in configs:
        cache: dict = {}
        for entry in entries:
            if bar is not None:
                bar.set_postfix_str(f"{cfg.label} {entry.label}", refresh=False)
            key = (entry, cfg.p, cfg.m)
            pt = evaluate_point(
                entry, cfg, levels, time_limit, cache, max_optimum_ops, verify and key not in verdicts, memory_cap
            )
            if verify:
                verdicts.setdefault(key, pt.verified)
                pt = replace(pt, verified=verdicts[key])
            points.append(pt)
            if on_point is not None and "measured" not in levels:
                on_point(pt)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    if "measured" in levels:  # real runs, batched: one set of worker processes per p
        from .measured import fill_measured

        points = fill_measured(points, trace=measured_trace)
        if on_point is not None:
            for pt in points:
                on_point(pt)
    return to_frame(points)


def error_exit(rows: pd.DataFrame, command: str) -> int:
    """The exit status of a run whose rows are ``rows`` (``compare``, ``sweep``): 1 when a row has
    status ``error`` (a schedule that deadlocks, a file that breaks a rule), with one line on
    stderr saying how many, else 0. The table or summary is printed first: the rows that did
    compute are not lost, but a script sees the failure.

    Example:
        >>> import contextlib, io
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     error_exit(pd.DataFrame({"status": ["ok", "error", "not applicable"]}), "ppverify compare")
        1
        >>> print(err.getvalue(), end="")
        ppverify compare: 1 of 3 rows failed (status error; the notes say why)
        >>> error_exit(pd.DataFrame({"status": ["ok", "not applicable"]}), "ppverify compare")
        0
    """
    failed = int((rows["status"] == "error").sum()) if "status" in rows else 0
    if not failed:
        return 0
    print(f"{command}: {failed} of {len(rows)} rows failed (status error; the notes say why)", file=sys.stderr)
    return 1


__all__ = ["error_exit", "run_comparison"]
