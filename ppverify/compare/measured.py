"""The ``measured`` level of ``ppverify compare --measured``: each schedule run for real in
PyTorch's pipeline runtime (:mod:`ppverify.measure`), ops sleeping their durations.

Per point the ops sleep the configuration's durations: seconds as they are for presets, abstract
units scaled by :data:`UNIT_S` (and the measured makespan and timeline scaled back,
:func:`in_units`), so the measured column and its Gantt chart are in the configuration's unit,
next to the predictions. The makespan is the median of the measured
steps; a gradient mismatch makes the point an ``error``. Worker processes are started once per p
for the whole comparison (:func:`fill_measured` runs after the other levels), and only for
``p <= MAX_P`` (this machine's worker processes; other points are ``not applicable``). The ops
sleep their own durations (a system preset's runtime overhead, folded into the predicted ones, is
what the runtime adds by itself). The measured level sees the runtime's real overhead and the
loopback's real transfers; of the configuration's links it honours a fixed delay per transfer
(``--comm-delay``, scaled as the costs are, or a preset's ``runtime.link_delay_us``), which the
runs emulate (``measure --link-delay``), and not the others (latency and bandwidth): a rank change
against ``contention`` is what the models miss. Its peaks
are the activations the run's autograd saved (``ppverify.measure.memory``), each stage's measured
bytes counted as the configuration's activation of that stage, so they read in the table's unit.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..core.costs import CostModel, in_seconds
from ..core.errors import PPVerifyError
from ..core.schedule import Schedule
from ..core.timeline import Timeline, Transfers
from .config import Config
from .resolve import build_entry, resolve
from .results import LevelResult, PointResult

MEASURED = "measured"
#: largest p measured (worker processes on this machine)
MAX_P = 4
#: seconds slept per abstract unit
UNIT_S = 0.01
PENDING = "pending"


def placeholder(config: Config) -> LevelResult:
    """The measured level's result before :func:`fill_measured` runs (or for good, when p > MAX_P).

    Example:
        >>> placeholder(Config(8, 8, costs=(("F", 1.0),))).status
        'not applicable'
    """
    if config.p > MAX_P:
        return LevelResult(
            MEASURED, "not applicable", note=f"measured only for p <= {MAX_P} (worker processes on this machine)"
        )
    return LevelResult(MEASURED, PENDING, note="not measured yet")


def in_units(timeline: Timeline, costs: CostModel, scale: float) -> Timeline:
    """A timeline measured in seconds with every abstract unit slept as ``scale`` seconds, read
    back in the configuration's units (``costs``, abstract): times divided by ``scale``, so the
    measured Gantt sits next to the predicted ones instead of being dropped.

    Example:
        >>> from ppverify.engines import run
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> units = CostModel.abstract(s.placement, F=1, B=2)
        >>> slept = replace(units, duration={k: tuple(0.01 * x for x in v) for k, v in units.duration.items()}, time_unit="s")
        >>> tl = in_units(run(s, slept, semantics="async"), units, 0.01)
        >>> tl.time_unit, round(tl.makespan, 9), tl.makespan == run(s, units, semantics="async").makespan
        ('units', 9.0, True)
    """
    tr = timeline.transfers
    transfers = Transfers(
        tr.kind,
        tr.src_dev,
        tr.dst_dev,
        tr.src_op,
        tr.dst_op,
        [x / scale for x in tr.start],
        [x / scale for x in tr.end],
        tr.nbytes,
    )
    return replace(
        timeline,
        costs=costs,
        start=np.asarray(timeline.start, dtype=float) / scale,
        end=np.asarray(timeline.end, dtype=float) / scale,
        transfers=transfers,
    )


def fill_measured(
    points: Sequence[PointResult],
    steps: int = 3,
    warmup: int = 1,
    timeout: float = 120.0,
    unit_s: float = UNIT_S,
    trace: Sequence[str] | None = None,
) -> list[PointResult]:
    """The points with their pending measured results replaced by measurements (one
    :func:`~ppverify.measure.measure_many` call: one set of processes per p).

    Example:
        >>> from ppverify.compare.config import ScheduleEntry
        >>> from ppverify.compare.evaluate import evaluate_point
        >>> cfg = Config(2, 2, costs=(("F", 1.0), ("B", 2.0)))
        >>> pts = fill_measured([evaluate_point(ScheduleEntry("gpipe", "gpipe"), cfg, ("async", "measured"))])  # doctest: +SKIP
        >>> pts[0].level("measured").makespan > pts[0].level("async").makespan  # doctest: +SKIP
        True
    """
    if trace is not None:
        return fill_from_trace(points, trace, unit_s)
    todo: list[tuple[int, float, str]] = []  # (index, scale, error before any run) of each pending point
    runnable: list[tuple[int, Schedule, CostModel, float]] = []  # (index, schedule, slept costs, link delay)
    costs_of: dict[int, CostModel] = {}
    for i, pt in enumerate(points):
        r = pt.level(MEASURED)
        if r is None or r.status != PENDING:
            continue
        try:
            schedule = build_entry(pt.entry, pt.config.p, pt.config.m)
            resolved = resolve(pt.config, schedule)
            costs = resolved.costs
        except PPVerifyError as exc:
            todo.append((i, 1.0, str(exc)))
            continue
        costs_of[i] = costs
        scale = unit_s if pt.config.abstract else 1.0
        own = resolved.own_costs or costs  # the runtime adds its overhead by itself
        sleep = in_seconds(own, scale)
        # a fixed delay per transfer (--comm-delay, a preset's link_delay_us) is emulated in the run
        delay = float(pt.config.comm_delay or 0.0) * scale if pt.config.abstract else resolved.link_delay
        todo.append((i, scale, ""))
        runnable.append((i, schedule, sleep, delay))
    out = list(points)
    results: list = []
    failure, failure_status = "", "error"
    if runnable:
        from ..io.torch_interop import TorchUnavailableError
        from ..measure import measure_many

        try:
            # one set of worker processes per (p, link delay): the delay is the run's, not the op's
            for delay in sorted({t[3] for t in runnable}):
                group = [t for t in runnable if t[3] == delay]
                got = measure_many(
                    [(t[1], t[2]) for t in group], steps=steps, warmup=warmup, timeout=timeout, link_delay=delay
                )
                results += list(zip(group, got))
        except TorchUnavailableError:  # PyTorch is the optional torch extra
            failure, failure_status = "unavailable: needs PyTorch: pip install 'ppverify[torch]'", "unavailable"
        except Exception as exc:  # a failed run is the level's error cell, not the comparison's end
            failure = f"{type(exc).__name__}: {exc}"
    by_index = {t[0]: r for t, r in results}
    for i, scale, err in todo:
        if err or failure:
            status = failure_status if failure else "error"
            res = LevelResult(MEASURED, status, note=err or failure)
        else:
            m = by_index[i]
            spans = m.makespans
            note = f"median of {len(spans)} steps, {min(spans) / scale:.4g}-{max(spans) / scale:.4g}; sleep mode" + (
                f", 1 unit = {unit_s * 1e3:g} ms" if scale != 1.0 else ""
            )
            if m.grad_check.ok:
                # the measured saved activations, each stage's bytes counted as the config's activation
                units = costs_of[i]
                peaks = m.memory.peaks_in(units.activation) if m.memory is not None else None
                res = LevelResult(
                    MEASURED,
                    "ok",
                    statistics.median(spans) / scale,
                    peak_activations=peaks,
                    exact=True,
                    note=note,
                    # abstract costs: the measured step read back in units, next to the predictions
                    timeline=m.timeline if scale == 1.0 or m.timeline is None else in_units(m.timeline, units, scale),
                )
            else:
                res = LevelResult(MEASURED, "error", note=m.grad_check.message)
        pt = out[i]
        out[i] = replace(pt, results=tuple(res if r.level == MEASURED else r for r in pt.results))
    return out


def fill_from_trace(points: Sequence[PointResult], trace: Sequence[str], unit_s: float = UNIT_S) -> list[PointResult]:
    """The points with their pending measured results read from a profiler trace
    (``compare --measured-trace DIR``): a point whose schedule is the one the trace ran (same p,
    the same op order on every rank; :func:`~ppverify.measure.trace_import.schedule_differences`)
    gets the recorded step's makespan (the median step, :mod:`ppverify.io.trace_step`; abstract
    configurations in units of ``unit_s`` seconds), every other point ``not applicable``.

    Example:
        >>> from ppverify.compare.config import ScheduleEntry
        >>> from ppverify.compare.evaluate import evaluate_point
        >>> cfg = Config(2, 4, costs=(("F", 1.0), ("B", 2.0)))
        >>> pt = evaluate_point(ScheduleEntry("1f1b", "1f1b"), cfg, ("async", "measured"))
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> res = fill_from_trace([pt], [traces_dir])[0].level("measured")
        >>> res.status, round(res.makespan, 1)  # 0.163 s in units of 10 ms
        ('ok', 16.3)
        >>> gp = evaluate_point(ScheduleEntry("gpipe", "gpipe"), cfg, ("async", "measured"))
        >>> fill_from_trace([gp], [traces_dir])[0].level("measured").status
        'not applicable'
    """
    from ..io.profiler_trace import read_traces
    from ..io.trace_step import recorded_step
    from ..measure.trace_import import import_step, schedule_differences

    traces = read_traces(trace)  # bad traces are bad input: one line, exit 2
    rec = recorded_step(traces)
    out = list(points)
    for i, pt in enumerate(points):
        r = pt.level(MEASURED)
        if r is None or r.status not in (PENDING, "not applicable"):
            continue
        why, imported = "", None
        try:
            schedule = build_entry(pt.entry, pt.config.p, pt.config.m)
            if schedule.p != len(traces):
                why = f"{schedule.describe()} has p={schedule.p}, the trace {len(traces)} ranks"
            else:
                imported = import_step(traces, rec, schedule)
                diffs = schedule_differences(schedule, imported.schedule)
                why = f"{schedule.describe()}, {diffs[0]}" if diffs else ""
        except PPVerifyError as exc:
            why = str(exc)
        # "profiler trace ..." marks the level as read from the trace (its legend, its semantics),
        # and the note says why this point is not the schedule that ran (before: only that it is not)
        res = LevelResult(
            MEASURED, "not applicable", note=f"profiler trace {', '.join(trace)}: not the schedule it ran ({why})"
        )
        if imported is not None and not why:
            scale = unit_s if pt.config.abstract else 1.0
            tl = imported.timeline
            note = (
                f"profiler trace, ProfilerStep#{rec.step} (median of {len(rec.steps)}), {rec.side}-side, {rec.clock} clock"
                + (f", 1 unit = {unit_s * 1e3:g} ms" if scale != 1.0 else "")
            )
            # abstract costs: the traced step read back in units (1 unit = unit_s), so its Gantt is
            # drawn on the predictions' time axis rather than dropped
            units = resolve(pt.config, schedule).costs if scale != 1.0 else None
            res = LevelResult(
                MEASURED,
                "ok",
                tl.makespan / scale,
                exact=True,
                note=note,
                timeline=tl if units is None else in_units(tl, units, scale),
            )
        out[i] = replace(pt, results=tuple(res if x.level == MEASURED else x for x in pt.results))
    return out


__all__ = ["MAX_P", "MEASURED", "UNIT_S", "fill_from_trace", "fill_measured", "in_units", "placeholder"]
