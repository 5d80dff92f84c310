"""What a measured run returns: :class:`MeasureResult`, the seconds cost model of a run
(:func:`seconds_costs`), and the assembly of the workers' per-rank results into one result (one
:class:`~ppverify.core.timeline.Timeline` per measured step, the gradient verdict, the measured
memory), with the prediction's op costs taken from the run itself when none were given
(:func:`measured_costs`).
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
from .gradcheck import TOLERANCE, GradCheck, check
from .jobs import Job, RankResult
from .memory import MeasuredMemory, measured_memory
from .record import Event, step_start, to_timeline

#: costs used when none are given: seconds per device share
DEFAULT_COSTS = {"F": 0.01, "B": 0.02}


@dataclass(frozen=True, eq=False)
class MeasureResult:
    """A measured run: ``timelines`` (one per measured step), ``timeline`` (the step with the
    median makespan; of an even number of steps, the lower of the two middle ones), ``step_times`` (per step: first rank's start to last rank's end, seconds,
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


def assemble_result(
    job: Job, costs: CostModel, compute: str, per_rank: Sequence[RankResult], predicted: Timeline | None
) -> MeasureResult:
    """One :class:`MeasureResult` from every rank's :class:`~ppverify.measure.jobs.RankResult` of
    ``job``: a timeline per measured step (on the first rank's start of it), the median step's
    timeline and memory, and the gradient verdict against rank 0's reference.

    Example:
        >>> r = assemble_result(job, costs, "sleep", per_rank, None)  # doctest: +SKIP
        >>> len(r.timelines) == job.steps  # doctest: +SKIP
        True
    """
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
