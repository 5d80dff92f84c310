"""``ppverify calibrate --from-trace DIR``: a system preset fitted to a profiler trace, and the
prediction of the steps held out of the fit.

The pieces, each its own module (their names are importable from here too):

* :mod:`.trace_steps`: which steps are fitted (``--fit-steps``; by default all but a held-out
  tail, with at least :data:`~ppverify.measure.trace_steps.MIN_OUTLIER_STEPS` to fit) and which
  are left out as outliers (:func:`typical_steps`);
* :mod:`.trace_fit`: the fit itself (:func:`calibrate_from_trace`, :class:`TraceFit`): op costs,
  link, hand-over terms and runtime overhead, read off the fit steps' events;
* :mod:`.trace_link`: the link's samples and its latency and bandwidth;
* :mod:`.trace_preset`: the preset's text (:func:`trace_preset_text`) and its system.

Here: :func:`held_out` predicts other steps (of this trace or another schedule's) from the
preset and the fitted costs, as ``measure --system`` predicts a run: the benchmark of the fit;
:func:`from_trace` is what the command does, and :func:`trace_notes` what it says beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..core.errors import ParameterError
from ..core.schedule import Schedule
from .trace_fit import TraceFit, calibrate_from_trace, check_ran
from .trace_import import import_step
from .trace_link import LATENCY_ONLY_BPS, link_samples
from .trace_preset import preset_system, trace_preset_text
from .trace_sizes import recorded_bytes
from .trace_steps import OUTLIER_MADS, default_fit_steps, parse_fit_steps, step_notes, typical_steps


def held_out(
    fit: TraceFit,
    system: Any,
    traces: Sequence[Any],
    steps: Sequence[int] | None = None,
    schedule: Schedule | None = None,
    clock: str = "auto",
    semantics: str | None = None,
) -> list[tuple[int, float, float]]:
    """``(step, measured makespan, predicted)`` of ``steps`` of ``traces`` (default: every step
    not in the fit when no ``schedule`` is given, else all), predicted (``semantics``: as
    :func:`~ppverify.measure.calibrate.predict_on` picks, or ``async`` / ``runtime``) from ``system`` (the
    preset written) and the fit's op costs, as ``measure --system`` predicts a run.

    Example:
        >>> import shutil
        >>> import tempfile
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> traces = read_traces([traces_dir])
        >>> fit = calibrate_from_trace(traces, fit_steps=[1])
        >>> preset = Path(tempfile.mkdtemp()) / "mine.yaml"
        >>> _ = preset.write_text(trace_preset_text(fit, "mine", traces_dir))
        >>> [(n, round(ms, 3), round(pr, 3)) for n, ms, pr in held_out(fit, str(preset), traces)]
        [(2, 0.178, 0.161)]
        >>> shutil.rmtree(preset.parent)
    """
    from ..io.trace_step import recorded_step
    from .calibrate import predict_on

    sched_for_costs = schedule
    if steps is None:
        first = recorded_step(traces, None, clock)
        steps = (
            [n for n in first.steps if n not in fit.fit_steps + fit.dropped] if schedule is None else list(first.steps)
        )
    out = []
    for n in steps:
        imp = import_step(traces, recorded_step(traces, n, clock), sched_for_costs)
        target = sched_for_costs if sched_for_costs is not None else imp.schedule
        costs = fit.costs if target.num_stages == fit.costs.num_stages else None
        if costs is None:
            raise ParameterError(
                "schedule",
                target.describe(),
                f"has {target.num_stages} stages; the fit's costs describe {fit.costs.num_stages}",
            )
        out.append((n, imp.timeline.makespan, predict_on(target, costs, system, semantics)))
    return out


def from_trace(
    inputs: Sequence[str],
    schedule_name: str | None,
    fit_steps_text: str | None,
    name: str,
    sizes: Any = None,
) -> tuple[TraceFit, str, list[tuple[int, float, float]]]:
    """What ``calibrate --from-trace`` does: read the traces, fit the ``fit_steps_text`` steps
    (``"1,2"``; default :func:`~ppverify.measure.trace_steps.default_fit_steps`: all but a held-out
    tail, at least 3 fitted) of the schedule named (a family, built
    at the trace's p and m, or a file; None: read from the trace), write the preset's text and
    predict the held-out steps: ``(fit, preset text, [(step, measured, predicted)])``. ``sizes``
    (:class:`TransferSizes`) gives the bytes of transfers the trace recorded without shapes.

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> fit, text, rows = from_trace([traces_dir], None, "1", "mine")
        >>> fit.fit_steps, [(n, round(ms, 3)) for n, ms, _ in rows]
        ((1,), [(2, 0.178)])
        >>> text.splitlines()[1]
        '# Trace: recorded p=2 m=4, fit steps ProfilerStep 1 (makespans 163.06 ms); not checked for outliers (fewer than 3 fit steps).'
    """
    from ..io import load_schedule, looks_like_file
    from ..io.profiler_trace import read_traces
    from ..io.trace_step import recorded_step
    from ..schedules import build
    from .trace_import import recorded_size

    traces = read_traces(inputs)
    schedule = None
    if schedule_name:
        p, m = recorded_size(traces)
        schedule = load_schedule(schedule_name) if looks_like_file(schedule_name) else build(schedule_name, p=p, m=m)
    steps = recorded_step(traces).steps
    fit_steps = parse_fit_steps(fit_steps_text, steps)
    model_bytes = None
    if sizes is not None and sizes.given and not recorded_bytes(traces):
        stages = (
            schedule.num_stages
            if schedule is not None
            else import_step(traces, recorded_step(traces)).schedule.num_stages
        )
        model_bytes = sizes.boundary_bytes(stages)
    fit = calibrate_from_trace(traces, schedule, fit_steps, model_bytes=model_bytes)
    text = trace_preset_text(fit, name, " ".join(inputs))
    rest = [n for n in steps if n not in fit.fit_steps + fit.dropped]  # a step left out is no held-out step
    rows = held_out(fit, preset_system(text, name), traces, rest, schedule) if rest else []
    return replace(fit, posts=all_posts(traces, schedule)), text, rows


def trace_notes(fit: TraceFit, rows: Sequence[Any], given: bool, sizes: Any = None) -> list[str]:
    """What ``calibrate --from-trace`` says on standard error beside its fit (``rows``: the
    held-out steps' predictions; ``given``: whether ``--fit-steps`` chose the fit steps): sizes
    given (``sizes``, :class:`~ppverify.measure.trace_sizes.TransferSizes`) that recorded shapes
    overrode, and :func:`~ppverify.measure.trace_steps.step_notes` (too few steps for the outlier
    check or for a held-out one).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> fit, _, rows = from_trace([traces_dir], None, None, "mine")  # 2 steps recorded: both fitted
        >>> for note in trace_notes(fit, rows, given=False):
        ...     print(note)
        the traces hold 2 ProfilerSteps, too few for outlier rejection (it needs 3 fit steps): no fit step was checked for a burst of other work; record more steps (measure --profile DIR --steps N)
        the traces hold 2 ProfilerSteps, all fitted (outlier rejection needs 3): none is left for a held-out check of the preset; record 4 or more (measure --profile DIR --steps N)
    """
    notes = []
    if sizes is not None and sizes.given and fit.bytes_from == "recorded shapes":  # not a silent no-op
        option = "--boundary-bytes" if sizes.each is not None else "--model"
        notes.append(
            f"{option}: the traces record their transfers' shapes, which size the link (recorded shapes win); "
            f"{option} sized nothing"
        )
    checked = len(fit.fit_steps) + len(fit.dropped)
    return notes + step_notes(len(fit.recorded_steps), checked, len(rows), given)


def all_posts(traces: Sequence[Any], schedule: Schedule | None = None, clock: str = "auto") -> Any:
    """:func:`~ppverify.measure.trace_posts.post_times` over every recorded step of ``traces``.

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> traces = read_traces([traces_dir])
        >>> all_posts(traces).describe()
        'median 365 us, 90th percentile 3786 us; blocked 5.2-7.2 ms per step'
    """
    from ..io.trace_step import recorded_step
    from .trace_posts import post_times

    out = []
    for n in recorded_step(traces, None, clock).steps:
        imp = import_step(traces, recorded_step(traces, n, clock), schedule)
        out.append((n, imp.timeline.makespan, imp.events))
    return post_times(out)


__all__ = [
    "LATENCY_ONLY_BPS",
    "OUTLIER_MADS",
    "TraceFit",
    "all_posts",
    "calibrate_from_trace",
    "check_ran",
    "default_fit_steps",
    "from_trace",
    "held_out",
    "link_samples",
    "preset_system",
    "trace_notes",
    "trace_preset_text",
    "typical_steps",
]
