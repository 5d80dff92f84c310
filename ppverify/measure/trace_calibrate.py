"""``ppverify calibrate --from-trace DIR``: a system preset fitted to a profiler trace.

The fit steps of the trace (:func:`~ppverify.io.trace_step.recorded_step`, rebuilt by
:mod:`.trace_import`) give what ``calibrate`` measures with its own runs:

* **op costs** per stage and kind: the median duration over the fit steps (written as
  ``--costs``-style comments and returned; a system preset has no op costs);
* **link**: one-way times of the point-to-point transfers whose RECV was posted before the SEND
  (SEND post to the completion of the receive work), against the bytes of the recorded shapes:
  the bandwidth by the least-squares line of :func:`~ppverify.measure.fit.fit_link` (one message
  size: none measurable);
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

:func:`held_out` predicts other steps (of this trace or another schedule's) from the preset and
the fitted costs, as ``measure --system`` predicts a run: the benchmark of the fit.
"""

from __future__ import annotations

import datetime
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from .calibration import Calibration
from .record import Event
from .trace_import import fitted_costs, import_step
from .trace_sizes import recorded_bytes

#: bandwidth written when the trace holds one message size (the line has no slope: latency only)
LATENCY_ONLY_BPS = 1e15


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


#: a fit step whose makespan lies more than this many robust deviations (1.4826 x the median
#: absolute deviation) from the fit steps' median is left out of the fit
OUTLIER_MADS = 3.0


def typical_steps(makespans: Sequence[float], k: float = OUTLIER_MADS) -> list[bool]:
    """Which steps to fit: those whose makespan lies within ``k`` robust standard deviations
    (1.4826 x the median absolute deviation, at least 1 % of the median: steps that close are
    one machine's noise) of the median; every step when fewer than 3, or when more than half
    would go.

    Example:
        >>> typical_steps([100.0, 101.0, 99.0, 100.5, 140.0])
        [True, True, True, True, False]
        >>> typical_steps([100.0, 140.0])
        [True, True]
    """
    if len(makespans) < 3:
        return [True] * len(makespans)
    med = statistics.median(makespans)
    mad = max(1.4826 * statistics.median(abs(x - med) for x in makespans), 0.01 * med)
    keep = [abs(x - med) <= k * mad for x in makespans]
    return keep if 2 * sum(keep) > len(keep) else [True] * len(makespans)


def link_samples(
    events: Sequence[Sequence[Event]],
    arrivals: dict[tuple[str, int, int], tuple[float, float]],
    model_bytes: Sequence[float] = (),
) -> list[tuple[float, float]]:
    """``(bytes, one-way s)`` of each transfer whose RECV was posted before its SEND: SEND post to
    the receive's completion. ``arrivals[(direction, receiving stage, mb)] = (end ns, bytes)``;
    a transfer whose recorded bytes are 0 (a trace without ``record_shapes``) takes its
    boundary's bytes from ``model_bytes`` (``model_bytes[b]``: between stages b and b + 1, an
    activation forward and its gradient backward) when given.

    Example:
        >>> ev = [[Event("SEND_F", 0, 0, 5000, 5000)], [Event("RECV_F", 1, 0, 1000, 1000)]]
        >>> link_samples(ev, {("F", 1, 0): (65000.0, 128.0)})
        [(128.0, 6e-05)]
        >>> link_samples(ev, {("F", 1, 0): (65000.0, 0.0)}, model_bytes=(4096.0,))
        [(4096.0, 6e-05)]
    """
    send: dict[tuple[str, int, int], int] = {}
    post: dict[tuple[str, int, int], int] = {}
    for evs in events:
        for e in evs:
            if e.kind == "SEND_F":
                send[("F", e.stage + 1, e.mb)] = e.start_ns
            elif e.kind == "SEND_B":
                send[("B", e.stage - 1, e.mb)] = e.start_ns
            elif e.kind in ("RECV_F", "RECV_B"):
                post[(e.kind[-1], e.stage, e.mb)] = e.start_ns
    out = []
    for key, (end, nbytes) in sorted(arrivals.items()):
        if key in send and key in post and post[key] <= send[key] < end:
            boundary = key[1] - 1 if key[0] == "F" else key[1]
            if not nbytes and 0 <= boundary < len(model_bytes):
                nbytes = float(model_bytes[boundary])
            out.append((float(nbytes), (end - send[key]) / 1e9))
    return out


def _arrivals(step: Any) -> dict[tuple[str, int, int], tuple[float, float]]:
    import re

    pat = re.compile(r"(\d+)RECV_([FB])(\d+)$")
    out: dict[tuple[str, int, int], tuple[float, float]] = {}
    for trs in step.transfers:
        for t in trs:
            m = pat.match(t.action)
            if m:
                out[(m.group(2), int(m.group(1)), int(m.group(3)))] = (t.span.end * 1000.0, t.span.nbytes)
    return out


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
    from .fit import RuntimeFit, fit_link, fit_runtime, op_ratio, predict
    from .handover import async_terms, fit_by_ranks
    from .handover import handover_samples as samples_of
    from .preset_file import machine_name

    first = recorded_step(traces, None, clock)
    steps = tuple(fit_steps) if fit_steps else first.steps
    twice = sorted({n for n in steps if steps.count(n) > 1})
    if twice:  # it was fitted twice, weighing that step double
        raise ParameterError(
            "fit-steps", ",".join(map(str, steps)), f"ProfilerStep {twice[0]} is named twice; name each step once"
        )
    unknown = [n for n in steps if n not in first.steps]
    if unknown:
        raise ParameterError(
            "fit-steps",
            ",".join(map(str, unknown)),
            f"not recorded; the traces hold {steps_held(traces, first.steps)}",
        )
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
    costs = fitted_costs(pooled_events, sched.placement, imported[0].timeline.costs.boundary_bytes)
    makespans = [imp.timeline.makespan for imp in imported]
    recorded = any(b > 0 for imp in imported for b in imp.timeline.costs.boundary_bytes)
    fallback = tuple(float(x) for x in model_bytes[1]) if model_bytes else ()
    bytes_from = "recorded shapes" if recorded else (model_bytes[0] if model_bytes else "none")
    if not recorded and len(fallback) == max(sched.num_stages - 1, 0):
        costs = replace(costs, boundary_bytes=fallback)  # the predictions' transfers carry them too
    # a receive recorded without shapes (only its SEND's were) takes its boundary's recorded bytes
    sizes = fallback if not recorded else costs.boundary_bytes
    samples = [s for imp in imported for s in link_samples(imp.events, _arrivals(imp.step), sizes)]
    if samples:
        by_size: dict[float, list[float]] = {}
        for b, t in samples:
            by_size.setdefault(b, []).append(t)
        latency, bandwidth = fit_link([(b, statistics.median(ts)) for b, ts in sorted(by_size.items())])
    else:
        latency, bandwidth = 0.0, float("inf")
    if bandwidth == float("inf"):
        bandwidth = LATENCY_ONLY_BPS
    runs = [(sched, costs, ms) for ms in makespans]
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
    else:
        fit = fit_runtime(runs, FixedDelay(latency), ratio=op_ratio(ops))
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
        {"breakdown": ops, "residual_two_pipe": fit.residual_two_pipe},
        fit.two_pipe,
        ho,
        tuple(ho_by.items()),
    )
    return TraceFit(cal, costs, sched, steps, tuple(zip(steps, makespans)), tuple(samples), bytes_from, dropped)


def trace_preset_text(fit: TraceFit, name: str, source: str) -> str:
    """The preset of a :class:`TraceFit`: :func:`~ppverify.measure.preset_file.preset_text`'s
    schema, with comments saying it was fitted to a trace (which, which steps, the op costs).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> traces = read_traces([traces_dir])
        >>> fit = calibrate_from_trace(traces)
        >>> print(trace_preset_text(fit, "mine", "prof/"))  # doctest: +ELLIPSIS
        # Written by `ppverify calibrate --from-trace prof/` on ...
        # Trace: recorded p=2 m=4, fit steps ProfilerStep 1, 2 (makespans 163.06 ms, 177.54 ms).
        ...
        source: ppverify calibrate --from-trace (measured)
        ...
    """
    from .preset_file import preset_text

    body = preset_text(fit.calibration, name)
    body = body[body.index("description:") :]
    c = fit.costs
    cal = fit.calibration
    costs = "; ".join(f"{k}=" + "/".join(f"{x * 1e3:.4g}" for x in c.duration[k]) for k in ("F", "B", "I", "W"))
    lines = [
        f"# Written by `ppverify calibrate --from-trace {source}` on {cal.date}, machine: {cal.machine}.",
        f"# Trace: {fit.schedule.describe()}, fit steps ProfilerStep {', '.join(map(str, fit.fit_steps))} "
        f"(makespans {', '.join(f'{ms * 1e3:.2f} ms' for _, ms in fit.runs)})"
        + (f"; left out as outliers: ProfilerStep {', '.join(map(str, fit.dropped))}." if fit.dropped else "."),
        f"# Op costs (median per stage and kind over the fit steps, ms per stage): {costs}.",
        _link_line(fit),
        (
            f"# Runtime overhead and latency read off the events: {cal.action_overhead_s * 1e6:.0f} us per action,"
            f" {cal.transfer_overhead_s * 1e6:.0f} us per SEND/RECV, latency {cal.latency_s * 1e6:.0f} us"
            f" (the async makespans' rms relative residual {fit.residual * 100:.2f} %)."
            if cal.handover is not None
            else f"# Runtime overhead fitted as `ppverify calibrate` fits it (rms relative residual {fit.residual * 100:.2f} %)."
        ),
    ]
    return (
        "\n".join(lines)
        + "\n"
        + body.replace("source: ppverify calibrate (measured)", "source: ppverify calibrate --from-trace (measured)")
    )


def _link_line(fit: TraceFit) -> str:
    """The preset's comment on the link: how many transfers were timed, their sizes and where the
    bytes came from, and what they measure.

    Example:
        >>> from ppverify.measure.calibration import Calibration
        >>> from ppverify.schedules import build
        >>> fit = TraceFit(Calibration(0, 0, 1e-5, 1e15), None, build("1f1b", p=2, m=2), (1,), (), ((0.0, 1e-5),), "none")
        >>> _link_line(fit)
        '# Link: 1 transfers whose RECV was posted before the SEND (SEND post to receive completion), sizes not recorded (no record_shapes: --model or --boundary-bytes size them): latency only (bandwidth not measurable).'
    """
    sizes = sorted({b for b, _ in fit.link_samples})
    timed = "whose RECV was posted before the SEND (SEND post to receive completion)"
    handover = fit.calibration.handover is not None
    if not sizes:
        what = (
            "bandwidth not measurable; latency from the hand-overs' events (below)"
            if handover
            else "latency and bandwidth not measurable"
        )
        return f"# Link: no transfer {timed}: {what}."
    if sizes == [0.0]:
        head = "sizes not recorded (no record_shapes: --model or --boundary-bytes size them): "
    else:
        head = f"sizes {', '.join(f'{b:g} B' for b in sizes)} (bytes from {fit.bytes_from}); "
        head += "" if len(sizes) > 1 else "one size: "
    if len(sizes) > 1:
        what = (
            "bandwidth by least squares; latency from the hand-overs' events (below)"
            if handover
            else "latency and bandwidth by least squares"
        )
    elif handover:
        what = "bandwidth not measurable; latency from the hand-overs' events (below)"
    else:
        what = "latency only (bandwidth not measurable)"
    return f"# Link: {len(fit.link_samples)} transfers {timed}, {head}{what}."


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


def preset_system(text: str, name: str = "from-trace") -> Any:
    """The :class:`~ppverify.systems.system.System` of a preset's text (read through a temporary file,
    as ``--system FILE`` reads it).

    Example:
        >>> from ppverify.measure.calibration import Calibration
        >>> from ppverify.measure.preset_file import preset_text
        >>> preset_system(preset_text(Calibration(1e-3, 2e-4, 5e-5, 1e9))).action_overhead_s
        0.001
    """
    import tempfile
    from pathlib import Path

    from ..systems.system import load_system

    with tempfile.TemporaryDirectory(prefix="ppverify-preset-") as d:
        path = Path(d) / f"{name}.yaml"
        path.write_text(text)
        return load_system(str(path))


def from_trace(
    inputs: Sequence[str],
    schedule_name: str | None,
    fit_steps_text: str | None,
    name: str,
    sizes: Any = None,
) -> tuple[TraceFit, str, list[tuple[int, float, float]]]:
    """What ``calibrate --from-trace`` does: read the traces, fit the ``fit_steps_text`` steps
    (``"1,2"``; default the first half of the recorded steps) of the schedule named (a family, built
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
        '# Trace: recorded p=2 m=4, fit steps ProfilerStep 1 (makespans 163.06 ms).'
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
    try:
        fit_steps = (
            [int(x) for x in fit_steps_text.split(",")] if fit_steps_text else list(steps[: max(1, len(steps) // 2)])
        )
    except ValueError:
        raise ParameterError(
            "fit-steps", fit_steps_text, "expected step numbers separated by commas, e.g. 1,2,3"
        ) from None
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
