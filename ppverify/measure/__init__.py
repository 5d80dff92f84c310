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
:mod:`.memrecord` (the tensors autograd saves, recorded in the workers) and :mod:`.memory` (measured
activation memory against the predicted peaks, in bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from ..core.timeline import Timeline, TimelineInfo
from .dispatch import run_jobs
from .gradcheck import TOLERANCE, GradCheck, check
from .jobs import Job, RankResult
from .memory import MeasuredMemory, measured_memory
from .record import Event, step_start, to_timeline
from .stages import COMPUTE_MODES, ModelSpec
from .workers import MeasureTimeout, WorkerError, max_workers, run_workers

#: costs used when none are given: seconds per device share
DEFAULT_COSTS = {"F": 0.01, "B": 0.02}


@dataclass(frozen=True, eq=False)
class MeasureResult:
    """A measured run: ``timelines`` (one per measured step), ``timeline`` (the step with the
    median makespan), ``step_times`` (per step: first rank's start to last rank's end, seconds,
    including the runtime's end-of-step work), ``grad_check``, and ``predicted`` (the ``async``
    engine's timeline for the same costs, or None when it cannot time the schedule), and
    ``memory`` (the median step's activation memory measured in the run, against the predicted
    peaks in the same bytes; :mod:`.memory`).

    Example:
        >>> r = measure(build("1f1b", p=2, m=4))  # doctest: +SKIP
        >>> r.grad_check.ok, r.timeline.semantics  # doctest: +SKIP
        (True, 'measured')
    """

    schedule: Schedule
    costs: CostModel
    compute: str
    timelines: list[Timeline]
    timeline: Timeline
    step_times: list[float]
    grad_check: GradCheck
    predicted: Timeline | None = None
    runner: str = "torch-runtime"
    #: per measured step: its start (ns) and each rank's recorded events, RECV posts included
    #: (:mod:`.handover` reads them); empty without recording
    events: tuple[tuple[int, list[list[Event]]], ...] = ()
    #: the median step's saved activations, measured (:mod:`.memory`); None without recording
    memory: MeasuredMemory | None = None
    #: every measured step's saved activations, in step order
    memories: tuple[MeasuredMemory, ...] = ()
    #: the emulated link delay the run used (seconds; :mod:`.link_delay`), 0 for the link as it is
    link_delay: float = 0.0
    #: what the prediction's op costs are: ``"given"`` (the costs, as slept under ``--compute
    #: sleep``) or ``"measured"`` (real compute without costs: each stage's median op of each
    #: kind in this run, so the prediction times the schedule and the runtime, not a guess) or
    #: ``"file"`` (``measure FILE.json`` without ``--costs``: the file's own costs, slept;
    #: :func:`~ppverify.measure.options.file_costs`)
    costs_from: str = "given"

    @property
    def makespan(self) -> float:
        """Makespan of the median step (its start, the first rank out of the barrier, to the last op's end; seconds)."""
        return self.timeline.makespan

    @property
    def makespans(self) -> list[float]:
        """Makespan of every measured step."""
        return [tl.makespan for tl in self.timelines]

    def summary(self) -> dict[str, Any]:
        """The headline figures as a plain dict (what ``measure --json`` adds to the metrics).

        Example:
            >>> r = measure(build("1f1b", p=2, m=4))  # doctest: +SKIP
            >>> sorted(r.summary())  # doctest: +SKIP
            ['compute', 'costs_from', 'error', 'grad_check', 'link_delay', 'makespan_measured', 'makespan_predicted', 'makespans', 'memory', 'runner', 'step_times', 'steps']
        """
        from ..views.run_report import prediction_error

        pred = self.predicted.makespan if self.predicted is not None else None
        return {
            "runner": self.runner,
            "compute": self.compute,
            "steps": len(self.timelines),
            "makespan_measured": self.makespan,
            "makespans": self.makespans,
            "step_times": list(self.step_times),
            "makespan_predicted": pred,
            "error": prediction_error(pred, self.makespan) if pred is not None else None,
            "grad_check": self.grad_check.to_dict(),
            "memory": self.memory.to_dict() if self.memory is not None else None,
            "link_delay": self.link_delay,
            "costs_from": self.costs_from,
        }


def seconds_costs(schedule: Schedule, costs: CostModel | dict[str, float] | None) -> CostModel:
    """The cost model of a measured run, in seconds: a ``CostModel`` as given (abstract units are
    read as seconds), a ``{"F": .., "B": ..}`` dict per device share (F left out: :data:`DEFAULT_COSTS`'s
    F; B = 2F, I = W = B/2 as for every cost model), or :data:`DEFAULT_COSTS`.

    Example:
        >>> from ppverify.schedules import build
        >>> c = seconds_costs(build("interleaved-1f1b", p=2, m=2), {"F": 0.01, "B": 0.02})
        >>> c.time_unit, c.duration["F"]
        ('s', (0.005, 0.005, 0.005, 0.005))
        >>> seconds_costs(build("1f1b", p=2, m=2), {"B": 0.004}).label  # F left out: the default 10 ms
        'F=0.01,B=0.004,I=0.002,W=0.002'
    """
    if costs is None:
        costs = dict(DEFAULT_COSTS)
    if isinstance(costs, dict):  # a missing F is the default's 10 ms, not the abstract default's 1 (second)
        costs = CostModel.abstract(schedule.placement, **{"F": DEFAULT_COSTS["F"], **costs})
    if costs.num_stages != schedule.num_stages:
        raise ParameterError(
            "costs",
            costs.label or "custom",
            f"describe {costs.num_stages} stages; the schedule has {schedule.num_stages}",
        )
    return costs if costs.time_unit == "s" else replace(costs, time_unit="s")


def _job(
    schedule: Schedule,
    costs: CostModel,
    compute: str,
    steps: int,
    warmup: int,
    record: bool,
    seed: int,
    format: str | None,
    profile: str | None = None,
    link_delay: float = 0.0,
) -> Job:
    from ..core.ops import Comm, format_action
    from ..io.torch_csv import COMPUTE_COMMS, COMPUTE_ONLY, FLAVOURS, to_rows
    from ..io.torch_rules import check_runnable

    if format is not None and format not in FLAVOURS:
        raise ParameterError("format", format, f"expected one of {', '.join(FLAVOURS)}")
    if steps < 1:
        raise ParameterError("steps", steps, "must be >= 1")
    if warmup < 0:
        raise ParameterError("warmup", warmup, "must be >= 0")
    lowered = any(isinstance(a, Comm) for prog in schedule.programs for a in prog)
    check_format(schedule, format, lowered)
    check_runnable(schedule)  # before any worker: PyTorch's own failure would be an autograd error
    rows: list[list[str]] = []
    if schedule.placement.num_pipes > 1:
        format = COMPUTE_ONLY  # no CSV: the two-pipe runner runs the programs themselves
    elif lowered:
        # an already lowered schedule (a compute_comms file) runs exactly as written
        format = COMPUTE_COMMS
        rows = [[format_action(a) for a in prog if a is not None] for prog in schedule.programs]
    else:
        format = format or COMPUTE_ONLY
        rows = to_rows(schedule, format)
    # real compute takes the time it takes: the costs then only serve the prediction
    durations = {k: tuple(float(x) if compute == "sleep" else 0.0 for x in v) for k, v in costs.duration.items()}
    spec = ModelSpec.for_compute(compute, seed)
    return Job(schedule, rows, format, durations, spec, steps, warmup, record, profile, link_delay)


def _result(
    job: Job, costs: CostModel, compute: str, per_rank: Sequence[RankResult], predicted: Timeline | None
) -> MeasureResult:
    grads: dict = {}
    for rr in per_rank:
        grads.update(rr.grads)
    reference = per_rank[0].reference
    verdict = check(grads, reference or {}, TOLERANCE)
    runner = "two-pipe" if job.two_pipe else "torch-runtime"
    info = TimelineInfo(compute=compute, runner=runner, clock="CLOCK_MONOTONIC", format=job.format)
    timelines, step_times, raw, memories = [], [], [], []
    for k in range(job.steps):
        begins = [rr.begins[k] for rr in per_rank]
        t0 = step_start(begins)
        step_times.append((max(rr.ends[k] for rr in per_rank) - t0) * 1e-9)
        events = [rr.events[k] for rr in per_rank]
        timelines.append(to_timeline(job.schedule, costs, events, t0, replace(info, step=k)))
        if job.record:
            raw.append((t0, events))
            saved = [rr.info.get("memory", [[]] * job.steps)[k] for rr in per_rank]
            memories.append(measured_memory(saved, t0, job.spec, predicted))
    order = np.argsort([tl.makespan if job.record else st for tl, st in zip(timelines, step_times)], kind="stable")
    k_median = int(order[(len(order) - 1) // 2])
    median = timelines[k_median]
    return MeasureResult(
        job.schedule,
        costs,
        compute,
        timelines,
        median,
        step_times,
        verdict,
        predicted,
        runner,
        tuple(raw),
        memories[k_median] if memories else None,
        tuple(memories),
        job.link_delay,
    )


def measured_costs(schedule: Schedule, costs: CostModel, per_rank: Sequence[RankResult]) -> CostModel:
    """``costs`` with each stage's op durations replaced by the medians measured over every
    step of ``per_rank`` (real compute takes the time it takes; memory and bytes are kept).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=1, m=2)
        >>> ev = [[Event("F", 0, 0, 0, 10**7), Event("B", 0, 0, 10**7, 3 * 10**7)]]
        >>> rr = RankResult([ev[0]], [0], [3 * 10**7], {})
        >>> measured_costs(s, seconds_costs(s, None), [rr]).duration["B"]
        (0.02,)
    """
    from .trace_import import fitted_costs

    pooled = [[e for step in rr.events for e in step] for rr in per_rank]
    fitted = fitted_costs(pooled, schedule.placement)
    return replace(costs, duration=fitted.duration)


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
    from .workers import check_world_size, prestart, require_torch

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
        prepared.append((sched, c, _job(sched, c, compute, steps, warmup, record, seed, format, profile, link_delay)))
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
        _check_profile_dir(profile, len(items), prepared[0][0].p)
    out: list[MeasureResult | None] = [None] * len(prepared)
    for p in sorted({s.p for s, _, _ in prepared}):
        idx = [i for i, (s, _, _) in enumerate(prepared) if s.p == p]
        per_rank = run_workers(p, run_jobs, [prepared[i][2] for i in idx], timeout, realtime=realtime)
        for k, i in enumerate(idx):
            sched, c, job = prepared[i]
            ranks = [per_rank[r][k] for r in range(p)]
            if given[i]:
                out[i] = _result(job, c, compute, ranks, predicted[i])
            else:
                c = measured_costs(sched, c, ranks)
                out[i] = replace(_result(job, c, compute, ranks, _predict(sched, c, link_delay)), costs_from="measured")
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


def check_run_fits(
    name: str,
    step_s: float | None,
    steps: int,
    warmup: int,
    timeout: float,
    advice: str = "raise --timeout or lower the costs",
) -> None:
    """Refuse a sleeping run whose predicted steps (``warmup + steps`` of ``step_s`` seconds each)
    outlast ``timeout``: the watchdog, which allows each schedule's whole run ``timeout`` seconds,
    would stop it and report a hang, a negative verdict on a schedule that only sleeps long.
    ``advice`` ends the message (``calibrate``'s runs sleep fixed costs: only the timeout can move).

    Example:
        >>> check_run_fits("1f1b p=2 m=2", 4.5, 1, 1, 60.0)
        >>> check_run_fits("1f1b p=2 m=2", 4.5, 1, 1, 5.0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter timeout=5: 1f1b p=2 m=2's 2 steps (1 warm-up) sleep about 9 s by the prediction (4.5 s a step), longer than the timeout, after which a run counts as hung: raise --timeout or lower the costs
    """
    if step_s is None or not step_s * (steps + warmup) > timeout:
        return
    raise ParameterError(
        "timeout",
        f"{timeout:g}",
        f"{name}'s {steps + warmup} steps ({warmup} warm-up) sleep about {step_s * (steps + warmup):.3g} s by the "
        f"prediction ({step_s:.3g} s a step), longer than the timeout, after which a run counts as hung: " + advice,
    )


def check_format(schedule: Schedule, format: str | None, lowered: bool) -> None:
    """Refuse a CSV flavour the run would not use: two-pipe schedules run on ppverify's own
    runner, which reads no CSV, and a lowered schedule (its programs hold SEND/RECV: a
    ``compute_comms`` file) runs as written, never re-lowered by PyTorch. None: no flavour given.

    Example:
        >>> from ppverify.schedules import build
        >>> check_format(build("1f1b", p=2, m=2), "compute_comms", False)
        >>> check_format(build("chimera", p=2, m=2), "compute_comms", False)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter format=compute_comms: chimera p=2 m=2 runs on ppverify's two-pipe runner, which reads no CSV (PyTorch's runtime cannot run two pipes): leave --format out
    """
    if format is None:
        return
    if schedule.placement.num_pipes > 1:
        raise ParameterError(
            "format",
            format,
            f"{schedule.describe()} runs on ppverify's two-pipe runner, which reads no CSV (PyTorch's runtime "
            "cannot run two pipes): leave --format out",
        )
    if lowered and format != "compute_comms":
        raise ParameterError(
            "format",
            format,
            f"{schedule.describe()} already holds its SEND/RECV actions (a compute_comms file), which PyTorch's "
            "runtime runs as written: leave --format out, or give compute_comms",
        )


def _check_profile_dir(directory: str, schedules: int, p: int) -> None:
    # refused before any worker starts: one schedule per trace directory, and a directory to write into
    import re
    from pathlib import Path

    if schedules != 1:
        raise ParameterError("profile", directory, f"records one schedule per directory; {schedules} were given")
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise ParameterError("profile", directory, "is a file; expected a directory for the per-rank traces")
    # this run overwrites rank0..rank<p-1>; a higher rank's trace of an earlier, wider run would stay
    # and mix two jobs in one directory, which import-trace and calibrate --from-trace then refuse
    stale = sorted(
        (int(mt.group(1)), f.name)
        for f in (path.iterdir() if path.is_dir() else ())
        if (mt := re.fullmatch(r"rank(\d+)\.pt\.trace\.json", f.name)) and int(mt.group(1)) >= p
    )
    if stale:
        raise ParameterError(
            "profile",
            directory,
            f"holds {stale[0][1]}, a trace of an earlier run with more ranks than this one's {p}: its traces would "
            "mix with this run's; give an empty directory or remove it",
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError("profile", directory, f"cannot create the directory ({exc.strerror})") from None


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
    "check_run_fits",
    "max_workers",
    "measure",
    "measure_many",
    "run_workers",
    "seconds_costs",
    "to_timeline",
]
