"""The fit of ``ppverify calibrate --from-trace DIR``: a calibration fitted to a profiler trace.

The fit steps of the trace (:func:`~ppverify.io.trace_step.recorded_step`, rebuilt by
:mod:`.trace_import`) give what ``calibrate`` measures with its own runs:

* **op costs** per stage and kind: the median duration over the fit steps (written as
  ``--costs``-style comments and returned; a system preset has no op costs);
* **link**: one-way times of the point-to-point transfers whose RECV was posted before the SEND
  (SEND post to the completion of the receive work), against the bytes of the recorded shapes:
  the bandwidth by a least-squares line (:mod:`.trace_link`; one message size: none measurable);
* **hand-over terms** (one pipe) from the steps' events (:mod:`.handover`): the gap between a
  rank's ops when the input was there, the cost of each SEND/RECV post, the delay from a SEND post
  to the waiting consumer's start (early receivers) and from a RECV post to the start (late
  ones), each op's overshoot; where no consumer waited on a SEND posted after its RECV (device-side
  NCCL kernels of both ends start together) the link's one-way time is that delay;
* **runtime overhead and link latency** (one pipe) read off those terms
  (:func:`~ppverify.measure.handover.async_terms`), never fitted against the makespans: a few
  steps of one schedule cannot tell a per-action cost from a per-hand-over one: against a link
  latency read off the receive completions (3-12 ms, each holding waits of the consumer's own)
  such a fit left 0 us per action and per SEND/RECV for several stages per rank. Two-pipe
  traces (ppverify's own runner) fit their action overhead as ``calibrate`` does
  (:func:`~ppverify.measure.fit.fit_runtime`, against each fit step's makespan).

The fit steps are checked for outliers first (:func:`~ppverify.measure.trace_steps.typical_steps`).
:func:`~ppverify.measure.trace_calibrate.held_out` predicts other steps (of this trace or another
schedule's) from the preset and the fitted costs, as ``measure --system`` predicts a run: the
benchmark of the fit.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from .calibration import Calibration
from .record import Event
from .trace_import import fitted_costs, import_step, overlapped_ops
from .trace_link import arrivals, fit_trace_link, link_samples
from .trace_steps import check_fit_steps, typical_steps


@dataclass(frozen=True, eq=False)
class TraceFit:
    """A calibration from a trace: the :class:`~ppverify.measure.calibration.Calibration` (what
    the preset holds), the ``costs`` fitted over the fit steps, the ``schedule`` that ran, the
    ``fit_steps`` and each fit step's measured makespan (``runs``), and the link samples.

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> traces = read_traces([traces_dir])
        >>> fit = calibrate_from_trace(traces)
        >>> fit.fit_steps, fit.dropped, fit.bytes_from
        ((1, 2), (), 'recorded shapes')
    """

    calibration: Calibration
    costs: CostModel
    schedule: Schedule
    fit_steps: tuple[int, ...]
    runs: tuple[tuple[int, float], ...]
    link_samples: tuple[tuple[float, float], ...]
    #: where the link samples' bytes come from: ``recorded shapes``, or the model's sizes
    #: (``model_bytes`` of :func:`calibrate_from_trace`: its description), or ``none``
    bytes_from: str = "recorded shapes"
    #: fit steps left out as outliers (:func:`typical_steps`)
    dropped: tuple[int, ...] = ()
    #: the SEND/RECV posts' lengths over every recorded step (:mod:`.trace_posts`; None: not known)
    posts: Any = None
    #: every step the traces recorded (the fit steps, those left out and the others)
    recorded_steps: tuple[int, ...] = ()

    @property
    def residual(self) -> float:
        """The rms relative residual of the fit that times this trace's schedule: for a two-pipe
        trace its runner's fit (the one-pipe figure is over no runs then).

        Example:
            >>> from pathlib import Path
            >>> import ppverify
            >>> from ppverify.io.profiler_trace import read_traces
            >>> d = Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4"
            >>> fit = calibrate_from_trace(read_traces([str(d)]))
            >>> fit.residual == fit.calibration.residual  # one pipe: the one-pipe fit's
            True
        """
        two = self.calibration.extra.get("residual_two_pipe")
        if self.schedule.placement.num_pipes > 1 and two is not None:
            return float(two)
        return float(self.calibration.residual)


def check_ran(schedule: Schedule, recorded: Schedule, step: int) -> None:
    """Refuse a ``--schedule`` that is not the order the traces ran: the fit predicts the given
    schedule's order and trades its terms against the recorded makespans, so another order (GPipe
    named for a 1F1B trace) wrote a preset of 55 ms per SEND/RECV, 351 % off its own steps.

    Example:
        >>> from ppverify.schedules import build
        >>> check_ran(build("1f1b", p=2, m=2), build("1f1b", p=2, m=2), 1)
        >>> check_ran(build("gpipe", p=2, m=2), build("1f1b", p=2, m=2), 1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedule=gpipe p=2 m=2: is not what ProfilerStep#1 ran: rank 1: op order differs at position 1: ran 1B0, the schedule has 1F1 (2 of 4 positions differ); a fit needs the schedule the trace ran (leave --schedule out for a one-pipe trace; import-trace --schedule lists every difference)
    """
    from .trace_import import schedule_differences

    diffs = schedule_differences(schedule, recorded)
    if diffs:
        raise ParameterError(
            "schedule",
            schedule.describe(),
            f"is not what ProfilerStep#{step} ran: {diffs[0]}; a fit needs the schedule the trace ran "
            "(leave --schedule out for a one-pipe trace; import-trace --schedule lists every difference)",
        )


def calibrate_from_trace(
    traces: Sequence[Any],
    schedule: Schedule | None = None,
    fit_steps: Sequence[int] | None = None,
    clock: str = "auto",
    model_bytes: tuple[str, Sequence[float]] | None = None,
) -> TraceFit:
    """Fit a calibration to ``fit_steps`` of a job's traces (default: every recorded step); see
    the module docstring. ``model_bytes``: ``(description, bytes per stage boundary)``, the
    sizes of transfers the trace recorded without bytes (no ``record_shapes``).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> traces = read_traces([traces_dir])
        >>> fit = calibrate_from_trace(traces, fit_steps=[1, 2])
        >>> fit.calibration.action_overhead_s > 0, sorted({b for b, _ in fit.link_samples})
        (True, [128.0])
        >>> [(n, round(ms, 3)) for n, ms in fit.runs]
        [(1, 0.163), (2, 0.178)]
    """
    from ..core.comm import FixedDelay
    from ..io.trace_step import recorded_step, steps_held
    from .breakdown import breakdown
    from .fit import RuntimeFit, fit_runtime, op_ratio, predict
    from .handover import async_terms, fit_by_ranks
    from .handover import handover_samples as samples_of
    from .preset_file import machine_name

    first = recorded_step(traces, None, clock)
    steps = tuple(fit_steps) if fit_steps else first.steps
    check_fit_steps(steps, first.steps, steps_held(traces, first.steps))
    imported = [import_step(traces, recorded_step(traces, n, clock), schedule) for n in steps]
    if schedule is not None:
        for n, imp in zip(steps, imported):
            check_ran(schedule, imp.schedule, n)
    # a step far off the others (a burst of other work on the machine) is no sample of the runtime
    keep = typical_steps([imp.timeline.makespan for imp in imported])
    dropped = tuple(n for n, k in zip(steps, keep) if not k)
    steps = tuple(n for n, k in zip(steps, keep) if k)
    imported = [imp for imp, k in zip(imported, keep) if k]
    sched = schedule if schedule is not None else imported[0].schedule
    pooled_events: list[list[Event]] = [[] for _ in range(sched.p)]
    for imp in imported:
        for r, evs in enumerate(imp.events):
            pooled_events[r].extend(evs)
    cells = {k: v for imp in imported for k, v in overlapped_ops(imp.step).items()}
    costs = fitted_costs(pooled_events, sched.placement, imported[0].timeline.costs.boundary_bytes, cells)
    makespans = [imp.timeline.makespan for imp in imported]
    recorded = any(b > 0 for imp in imported for b in imp.timeline.costs.boundary_bytes)
    fallback = tuple(float(x) for x in model_bytes[1]) if model_bytes else ()
    bytes_from = "recorded shapes" if recorded else (model_bytes[0] if model_bytes else "none")
    if not recorded and len(fallback) == max(sched.num_stages - 1, 0):
        costs = replace(costs, boundary_bytes=fallback)  # the predictions' transfers carry them too
    # a receive recorded without shapes (only its SEND's were) takes its boundary's recorded bytes
    sizes = fallback if not recorded else costs.boundary_bytes
    samples = [s for imp in imported for s in link_samples(imp.events, arrivals(imp.step), sizes)]
    latency, bandwidth = fit_trace_link(samples)
    pipe_runs = [(sched, costs, ms) for ms in makespans]
    one_pipe = sched.placement.num_pipes == 1
    # the op-by-op terms against the pooled costs (each step's own fit would make its overshoot 0)
    ops = breakdown([replace(imp.timeline, costs=costs) for imp in imported]) if one_pipe else None
    ho: Any = None
    ho_by: dict[int, Any] = {}
    if one_pipe:
        # every term read off the events (no trade between terms against a few makespans)
        per_step = [(sched.p, samples_of(sched, costs, imp.events, 0)) for imp in imported]
        ho, ho_by = fit_by_ranks(per_step)
        device = imported[0].step.side == "device"
        if device and samples and not any(d["wake"] for _, d in per_step):
            # no consumer woke on a SEND posted after its RECV (device-side: both NCCL kernels
            # start together): the link's one-way time is the wake, not 0 (a 1 ms link fitted 0)
            ho = replace(ho, wake=latency)
            ho_by = {k: replace(h, wake=latency) for k, h in ho_by.items()}
        action, transfer, latency = async_terms(ho)
        folded = predict(sched, costs, FixedDelay(latency), action, transfer)
        rms = float(np.sqrt(np.mean([((folded - ms) / ms) ** 2 for ms in makespans])))
        fit = RuntimeFit((action, transfer), None, rms, latency=latency)
        if device:
            # the hand-over terms model gloo's rendezvous on the host (a late RECV costs a round
            # trip); a device-side trace times NCCL kernels, and with them written the runtime
            # semantics added the latency twice (158 ms predicted 160): the preset predicts with
            # async, as its residual was computed
            ho, ho_by = None, {}
    else:
        fit = fit_runtime(pipe_runs, FixedDelay(latency), ratio=op_ratio(ops))
    cal = Calibration(
        fit.one_pipe[0],
        fit.one_pipe[1],
        latency,
        bandwidth,
        (),
        tuple((f"{sched.describe()} ProfilerStep#{n}", ms) for n, ms in zip(steps, makespans)),
        fit.residual,
        machine_name(),
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        {"breakdown": ops, "residual_two_pipe": fit.residual_two_pipe, "terms_from_events": one_pipe},
        fit.two_pipe,
        ho,
        tuple(ho_by.items()),
    )
    runs = tuple(zip(steps, makespans))
    return TraceFit(cal, costs, sched, steps, runs, tuple(samples), bytes_from, dropped, None, first.steps)


__all__ = ["TraceFit", "calibrate_from_trace", "check_ran"]
