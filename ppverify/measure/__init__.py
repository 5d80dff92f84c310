"""The measured level: run a schedule for real, check its gradients, time it.

:func:`measure` starts p worker processes on this machine (``torch.distributed``, gloo, a file
store), builds one small block per stage of the schedule's placement, runs the schedule's actions
in PyTorch's own ``_PipelineScheduleRuntime`` (two-pipe schedules on ppverify's small
point-to-point runner, :mod:`.twopipe`), checks every parameter gradient against a plain
single-process forward/backward (:mod:`.gradcheck`), and records every op's start and end on one
clock into ppverify's :class:`~ppverify.core.timeline.Timeline` (``semantics="measured"``), next to the
``async`` engine's prediction for the same costs. :func:`measure_many` runs several schedules
with one set of processes per p.

Costs are seconds per device share, exactly as ``simulate`` reads them; under
``compute="sleep"`` each op sleeps its cost. Modules: :mod:`.workers` (processes, hang
detection), :mod:`.stages` (the model), :mod:`.runtime` (PyTorch's runtime), :mod:`.twopipe`,
:mod:`.record` (events -> Timeline), :mod:`.gradcheck`, :mod:`.jobs` (what travels to workers), :mod:`.dispatch` (the workers' entry point),
:mod:`.prepare` (each schedule's job and the checks before any worker starts), :mod:`.result` (what a run returns),
:mod:`.memrecord` (the tensors autograd saves, recorded in the workers) and :mod:`.memory` (measured
activation memory against the predicted peaks, in bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from ..core.timeline import Timeline
from .dispatch import run_jobs
from .gradcheck import GradCheck
from .memory import MeasuredMemory
from .prepare import check_format, check_profile_dir, check_run_fits, job_for
from .record import Event, to_timeline
from .result import DEFAULT_COSTS, MeasureResult, assemble_result, measured_costs, seconds_costs
from .stages import COMPUTE_MODES
from .workers import MeasureTimeout, WorkerError, max_workers, run_workers


def _predict(schedule: Schedule, costs: CostModel, link_delay: float = 0.0) -> Timeline | None:
    from ..core.comm import NO_COMM, FixedDelay
    from ..core.errors import PPVerifyError
    from ..engines import run

    try:
        return run(schedule, costs, FixedDelay(link_delay) if link_delay > 0 else NO_COMM, semantics="async")
    except PPVerifyError:
        return None


def measure_many(
    items: Sequence[Schedule | tuple[Schedule, CostModel | dict[str, float] | None]],
    *,
    compute: str = "sleep",
    steps: int = 3,
    warmup: int = 1,
    timeout: float = 60.0,
    record: bool = True,
    seed: int = 0,
    format: str | None = None,
    profile: str | None = None,
    link_delay: float = 0.0,
    realtime: bool = False,
) -> list[MeasureResult]:
    """:func:`measure` for several schedules (each alone or with its costs), with one set of
    worker processes per distinct p; results in the order given. ``timeout`` bounds each
    schedule's run (all its steps); ``realtime``: the workers at real-time priority
    (:func:`~ppverify.measure.workers.run_workers`).

    Example:
        >>> from ppverify.schedules import build
        >>> rs = measure_many([build("gpipe", p=2, m=4), build("zbv", p=2, m=4)])  # doctest: +SKIP
        >>> [r.grad_check.ok for r in rs]  # doctest: +SKIP
        [True, True]
    """
    from .options import check_link_delay, check_run_options
    from .realtime import check_realtime
    from .worker_side import refuse_main_reimport
    from .workers import check_world_size, prestart, require_torch

    refuse_main_reimport()  # a script's unguarded top-level call, re-run in a starting worker
    if compute not in COMPUTE_MODES:
        raise ParameterError("compute", compute, f"expected one of {', '.join(COMPUTE_MODES)}")
    check_run_options(steps, warmup, timeout, seed)
    check_link_delay(link_delay)
    require_torch()
    for item in items:
        check_world_size((item[0] if isinstance(item, tuple) else item).p)
        check_realtime(realtime, (item[0] if isinstance(item, tuple) else item).p, compute)
    prepared = []
    given = []  # real compute without costs: the prediction takes the measured op costs
    for item in items:
        sched, costs = item if isinstance(item, tuple) else (item, None)
        c = seconds_costs(sched, costs)
        given.append(compute == "sleep" or costs is not None)
        prepared.append(
            (sched, c, job_for(sched, c, compute, steps, warmup, record, seed, format, profile, link_delay))
        )
    if profile is not None:
        from .profile import quiet_profiler_logs

        quiet_profiler_logs()  # before the fork server starts: its workers inherit it
    # every input checked: the workers' torch import runs while the predictions are made here
    prestart()
    # a run without given costs is predicted after it, from its measured ops
    predicted = [_predict(s, c, link_delay) if g else None for (s, c, _), g in zip(prepared, given)]
    if compute == "sleep":
        for (sched, _, _), pred in zip(prepared, predicted):
            check_run_fits(sched.describe(), pred.makespan if pred is not None else None, steps, warmup, timeout)
    if profile is not None:  # made after every check: a refused run leaves no empty folder behind
        check_profile_dir(profile, len(items), prepared[0][0].p)
    out: list[MeasureResult | None] = [None] * len(prepared)
    for p in sorted({s.p for s, _, _ in prepared}):
        idx = [i for i, (s, _, _) in enumerate(prepared) if s.p == p]
        per_rank = run_workers(p, run_jobs, [prepared[i][2] for i in idx], timeout, realtime=realtime)
        for k, i in enumerate(idx):
            sched, c, job = prepared[i]
            ranks = [per_rank[r][k] for r in range(p)]
            if given[i]:
                out[i] = assemble_result(job, c, compute, ranks, predicted[i])
            else:
                c = measured_costs(sched, c, ranks)
                out[i] = replace(
                    assemble_result(job, c, compute, ranks, _predict(sched, c, link_delay)), costs_from="measured"
                )
    return [r for r in out if r is not None]


def measure(
    schedule: Schedule,
    costs: CostModel | dict[str, float] | None = None,
    *,
    compute: str = "sleep",
    steps: int = 3,
    warmup: int = 1,
    timeout: float = 60.0,
    record: bool = True,
    seed: int = 0,
    format: str | None = None,
    profile: str | None = None,
    link_delay: float = 0.0,
    realtime: bool = False,
) -> MeasureResult:
    """Run ``schedule`` on ``schedule.p`` worker processes: ``warmup`` unmeasured steps, then
    ``steps`` measured ones; check the gradients; return the :class:`MeasureResult`.

    ``costs``: seconds per device share (a ``CostModel``, a dict like ``{"F": 0.01, "B": 0.02}``,
    or :data:`DEFAULT_COSTS`); under ``compute="sleep"`` each op sleeps its cost, under ``"real"``
    the blocks are wider and the costs only serve the prediction. ``record=False`` skips event
    recording (to measure its overhead; step times remain). ``format`` is the CSV flavour handed
    to PyTorch's runtime (``compute_only`` or ``compute_comms``); None (the default): ``compute_only``,
    or, for a schedule that holds SEND/RECV actions (a ``compute_comms`` file), the file as
    written. A flavour that would not be used is refused (:func:`check_format`). ``profile``: a directory where
    every rank writes a ``torch.profiler`` trace of the measured steps (:mod:`.profile`).
    ``link_delay``: seconds every cross-rank input arrives after its SEND's post at the earliest,
    an emulated slow link (:mod:`.link_delay`; the prediction adds it to every transfer).
    ``realtime``: the workers run at the lowest real-time priority (``SCHED_FIFO``; root or
    ``CAP_SYS_NICE``), so that other jobs on the machine do not delay their wake-ups. Raises
    :class:`~ppverify.measure.workers.MeasureTimeout` on a hang (no worker left behind).

    Example:
        >>> from ppverify.schedules import build
        >>> r = measure(build("1f1b", p=2, m=4), {"F": 0.01, "B": 0.02})  # doctest: +SKIP
        >>> r.grad_check.ok, len(r.timelines), r.predicted.makespan  # doctest: +SKIP
        (True, 3, 0.15)
    """
    return measure_many(
        [(schedule, costs)],
        compute=compute,
        steps=steps,
        warmup=warmup,
        timeout=timeout,
        record=record,
        seed=seed,
        format=format,
        profile=profile,
        link_delay=link_delay,
        realtime=realtime,
    )[0]


def build(family: str, p: int, m: int, **params: Any) -> Schedule:
    """Shortcut for :func:`ppverify.schedules.build` (handy with :func:`measure`).

    Example:
        >>> build("1f1b", p=2, m=4).describe()
        '1f1b p=2 m=4'
    """
    from ..schedules import build as _build

    return _build(family, p, m, **params)


__all__ = [
    "DEFAULT_COSTS",
    "Event",
    "GradCheck",
    "MeasureResult",
    "MeasureTimeout",
    "MeasuredMemory",
    "WorkerError",
    "build",
    "check_format",
    "check_run_fits",
    "max_workers",
    "measure",
    "measure_many",
    "measured_costs",
    "run_workers",
    "seconds_costs",
    "to_timeline",
]
