"""What ``ppverify measure`` prints: a measured run next to its predictions, as one dict (``--json``)
or as text. The command parses, calls :func:`~ppverify.measure.measure` and prints these."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..core.errors import PPVerifyError
from ..core.memory_cap import MemoryCap
from ..core.schedule import Schedule
from ..core.timeline_text import fmt_time, gantt
from ..views.run_report import error_text, prediction_error, timeline_report
from .calibrate import predict_on, prediction_method
from .options import delay_text
from .result import MeasureResult


def calibrated_prediction(schedule: Schedule, result: MeasureResult, system: Any) -> float | None:
    """The makespan the calibrated model predicts for the measured schedule and costs (None where it
    cannot time it): one-pipe schedules with a preset's hand-over terms walk PyTorch's runtime action
    by action, the others run ``async`` with the preset's runtime overhead folded in.

    Example:
        >>> res = measure(build("gpipe", p=2, m=4), {"F": 0.01, "B": 0.02})  # doctest: +SKIP
        >>> calibrated_prediction(res.schedule, res, "examples/systems/calibrated-2core.yaml")  # doctest: +SKIP
        0.2049...
    """
    if result.link_delay and hasattr(system, "link_delay_s"):  # the delay the run emulated
        system = replace(system, link_delay_s=result.link_delay)
    try:
        return predict_on(schedule, result.costs, system)
    except PPVerifyError:
        return None


def measure_report(
    schedule: Schedule, result: MeasureResult, system: Any = None, system_name: str | None = None
) -> dict[str, Any]:
    """Everything ``measure --json`` prints: the measured timeline's metrics, the run's summary, the
    uncalibrated prediction and, with a ``system``, the calibrated one and its error.

    Example:
        >>> from ppverify.measure import measure  # doctest: +SKIP
        >>> r = measure_report(s, measure(s, costs), None)  # doctest: +SKIP
        >>> sorted(k for k in r if k.startswith("makespan"))  # doctest: +SKIP
        ['makespan', 'makespan_measured', 'makespan_predicted']
    """
    from ..io.torch_rules import message_order_problem

    rep = timeline_report(result.timeline)
    rep.update(result.summary())
    crossed = message_order_problem(schedule)  # a compute_comms file's SEND/RECV order: why gradients went wrong
    if crossed is not None:
        rep["message_order"] = crossed
    rep["predicted"] = result.predicted.metrics() if result.predicted is not None else None
    if system is not None:
        calibrated = calibrated_prediction(schedule, result, system)
        rep["system"] = system_name
        rep["makespan_predicted_calibrated"] = calibrated
        rep["error_calibrated"] = prediction_error(calibrated, result.makespan) if calibrated else None
    return rep


def measure_text(
    schedule: Schedule,
    result: MeasureResult,
    rep: dict[str, Any],
    warmup: int,
    width: int | None = 100,
    system: Any = None,
) -> str:
    """The text ``measure`` prints: the run, a text Gantt chart (``width`` columns; None: no chart),
    the measured makespan next to the predictions, the bubble ratio, step times and the gradient
    check. ``rep`` is :func:`measure_report` of the same run.

    Example:
        >>> print(measure_text(s, res, measure_report(s, res), warmup=1))  # doctest: +SKIP
        schedule      1f1b p=2 m=4 ...
    """
    tl, pred = result.timeline, result.predicted
    runner = (
        "PyTorch _PipelineScheduleRuntime"
        if result.runner == "torch-runtime"
        else "ppverify two-pipe runner (point-to-point + replica all-reduce)"
    )
    steps = result.makespans
    lines = [
        f"schedule      {schedule.describe()}",
        f"runner        {runner}; {_count(schedule.p, 'process', 'processes')}, gloo; compute {result.compute}; "
        f"{_count(len(steps), 'step', 'steps')} after {warmup} warm-up"
        + ("; workers at real-time priority (SCHED_FIFO)" if rep.get("realtime") else ""),
        f"costs         {result.costs.label} (s per device share)"
        if result.costs_from == "given"
        else f"costs         {result.costs.label}: {stage_durations(result.costs, schedule.ops(), '; ')} (per stage)"
        if result.costs_from == "file"
        else f"costs         measured in this run: {stage_durations(result.costs, schedule.ops(), '; ')} "
        "(median per stage, the prediction's: real compute takes the time it takes)",
    ]
    if result.link_delay:
        lines.append(
            f"link          emulated delay {delay_text(result.link_delay)} per cross-rank transfer "
            "(every prediction adds it)"
        )
    if width is not None:
        lines += ["", gantt(tl, width)]
    lines.append("")
    ms = tl.makespan
    line = f"makespan      measured {fmt_time(ms, 's')} (median step; {fmt_time(min(steps), 's')} .. {fmt_time(max(steps), 's')})"
    if pred is not None:  # the first error printed states the sign's convention
        line += (
            f"   predicted {fmt_time(pred.makespan, 's')} (async)   {error_text(prediction_error(pred.makespan, ms))}"
        )
    lines.append(line)
    calibrated = rep.get("makespan_predicted_calibrated")
    if calibrated is not None:
        lines.append(
            f"calibrated    predicted {fmt_time(calibrated, 's')} ({prediction_method(schedule, system)}, "
            f"--system {rep['system']})   {error_text(prediction_error(calibrated, ms), labelled=pred is None)}"
            + ("" if has_runtime(system) else _NO_RUNTIME)
        )
    bubble = f"bubble ratio  measured {tl.bubble_ratio:.4f}"
    lines.append(bubble + (f"   predicted {pred.bubble_ratio:.4f}" if pred is not None else ""))
    lines.append(
        f"step time     {', '.join(fmt_time(t, 's') for t in result.step_times)} (first rank's start to last rank's end)"
    )
    lines += memory_lines(result)
    if rep.get("memory_cap_line"):  # measure --memory-cap: the measured peaks against it
        lines.append(f"memory cap    {rep['memory_cap_line']}")
    if rep.get("message_order"):
        lines.append(f"messages      {rep['message_order']}")
    lines.append(f"gradients     {result.grad_check.message}")
    return "\n".join(lines)


#: the calibrated line of a preset that calibrates nothing of this machine (a cluster's, say)
_NO_RUNTIME = "\n              (the preset has no runtime: section: its links only, no runtime overhead; `ppverify calibrate` writes one)"


def has_runtime(system: Any) -> bool:
    """Whether a system preset describes a pipeline runtime (a ``runtime:`` section with overheads
    or hand-over terms, as ``ppverify calibrate`` writes), not only links.

    Example:
        >>> from ppverify.systems.system import load_system
        >>> has_runtime(load_system("dgx-a100")), has_runtime(load_system("examples/systems/calibrated-2core.yaml"))
        (False, True)
    """
    return bool(
        getattr(system, "action_overhead_s", 0)
        or getattr(system, "transfer_overhead_s", 0)
        or getattr(system, "two_pipe_overhead_s", None)
        or getattr(system, "handover_s", None)
    )


def stage_durations(costs: Any, ops: Iterable[Any], sep: str = ", ") -> str:
    """Each kind's per-stage durations in ms, for the kinds of ``ops`` (a fit gives I and W from
    B too, which a schedule of B alone never ran).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> from ppverify.measure import seconds_costs
        >>> stage_durations(seconds_costs(s, {"F": 0.01, "B": 0.02}), s.ops())
        'F=10/10 ms, B=20/20 ms'
        >>> stage_durations(seconds_costs(s, {"F": 1.1, "B": 2.25}), s.ops())
        'F=1100/1100 ms, B=2250/2250 ms'
    """
    from ..core.ops import KINDS

    def ms(x: float) -> str:  # three digits, but a second or more in whole ms (not 1.1e+03)
        return f"{x * 1e3:.3g}" if x * 1e3 < 999.5 else f"{x * 1e3:.0f}"

    ran = {op.kind for op in ops}
    return sep.join(f"{k}={'/'.join(ms(x) for x in costs.duration[k])} ms" for k in KINDS if k in ran)


def _count(n: int, one: str, many: str) -> str:
    """``n`` and its noun, singular for 1 (``1 step``, ``3 steps``)."""
    return f"{n} {one if n == 1 else many}"


def _bytes(values: Any) -> str:
    return ", ".join(f"{int(v):,}" for v in values) + " B"


def memory_lines(result: MeasureResult) -> list[str]:
    """The measured per-device activation peaks next to the predicted ones, in bytes, and how the
    prediction's abstract unit converts (``[]`` when nothing was recorded).

    Example:
        >>> memory_lines(measure(build("1f1b", p=2, m=4)))  # doctest: +SKIP
        ['peak memory   measured 1,600, 800 B   predicted 1,600, 800 B   equal (to the byte)', ...]
    """
    mm = result.memory
    if mm is None:
        return []
    line = f"peak memory   measured {_bytes(mm.peaks)}"
    if mm.predicted is not None:
        verdict = "equal (to the byte)" if mm.matches else "DIFFERENT"
        line += f"   predicted {_bytes(mm.predicted)}   {verdict}"
    sched = result.schedule
    how = f"              saved tensors of each stage's block, {mm.stage_bytes:,} B per stage and microbatch"
    if mm.predicted is not None:
        # one activation of a device share is S/p stages' worth of one microbatch; the count is read
        # off the predicted bytes, which take this run's memory model, not the costs' (a file's freed_by_I)
        per = mm.stage_bytes * sched.num_stages / sched.p
        how += f"; predicted = {', '.join(f'{x / per:g}' for x in mm.predicted)} activations x {per:,.0f} B"
        freed = sorted({f for f in result.costs.freed_by_I if f > 0})
        if freed:
            how += (
                f" (the costs' freed_by_I {'/'.join(f'{f:g}' for f in freed)} is not this run's: PyTorch's I keeps "
                "every saved tensor for the W, freed_by_I 0)"
            )
    return [line, how]


def measured_cap_check(result: MeasureResult, cap: MemoryCap) -> dict[str, Any] | None:
    """The measured per-device peaks (bytes of saved activations) held against ``cap``, counted in
    activations of the run's own model: one activation is a device's share of its stages for one
    microbatch, ``stage_bytes * stages / p`` bytes. The report's fields, named as ``simulate``
    names them (``memory_cap``, ``over_memory_cap``, ``memory_cap_line``), plus
    ``memory_cap_bytes``; None when the run recorded no memory.

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.memory_cap import parse_memory_cap
        >>> from ppverify.core.placement import linear
        >>> from ppverify.measure.memory import MeasuredMemory
        >>> class Run:  # a measured 1F1B, p = 2: device 0 saved two activations of 800 B, device 1 one
        ...     memory = MeasuredMemory((), (), (), (1600, 800), None, 800)
        ...     schedule = type("S", (), {"num_stages": 2, "p": 2})()
        >>> cap = parse_memory_cap("1", CostModel.abstract(linear(2)), linear(2))
        >>> r = measured_cap_check(Run(), cap)
        >>> r["over_memory_cap"], r["memory_cap_bytes"], r["memory_cap_line"]
        ([0], 800.0, "cap 1 activation: device 0 over it (peak 2); measured, the cap being 800 B of this run's model")
    """
    from ..core.memory_cap import cap_check

    mm = result.memory
    if mm is None:
        return None
    per = mm.stage_bytes * result.schedule.num_stages / result.schedule.p  # bytes of one activation
    # measured bytes over a float's bytes per activation: a ratio, not an exact count
    check = cap_check([pk / per for pk in mm.peaks], replace(cap, value=cap.activations, unit="activations"), 1e-9)
    in_bytes = None if cap.activations is None else cap.activations * per
    line = check["line"] + (
        ": no cap to hold the measured peaks to"
        if in_bytes is None
        else f"; measured, the cap being {in_bytes:,.0f} B of this run's model"
    )
    return {
        "memory_cap": check["cap"],
        "memory_cap_bytes": in_bytes,
        "over_memory_cap": check["over"],
        "memory_cap_line": line,
    }


def measure_cap(text: str | None, schedule: Schedule) -> MemoryCap | None:
    """``measure --memory-cap``: read once, in activations (``N``) or stage activations
    (``NMF``) of the measured run's own model, before any process starts; a size is refused (the
    run's small model saves bytes of its own, not those of a preset's model). None without a cap.

    Example:
        >>> from ppverify.schedules import build
        >>> measure_cap("2", build("1f1b", p=2, m=4)).describe()
        'cap 2 activations'
        >>> measure_cap("1GiB", build("1f1b", p=2, m=4))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=1GiB: measure runs a small model of its own, whose saved bytes are not a real model's: give the cap in activations (N) or stage activations (NMF)
        >>> measure_cap("-1", build("1f1b", p=2, m=4))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=-1: must be > 0: activations (e.g. 2) or stage activations (2MF)
    """
    from ..core.costs import CostModel
    from ..core.errors import ParameterError
    from ..core.memory_cap import read_memory_cap, resolve_memory_cap

    # the reader's errors offer only what measure takes (a size is refused below)
    spec = read_memory_cap(text, forms="activations (e.g. 2) or stage activations (2MF)")
    if spec is None:
        return None
    if spec.kind == "bytes":
        raise ParameterError(
            spec.option,
            spec.text,
            "measure runs a small model of its own, whose saved bytes are not a real model's: give the cap in "
            "activations (N) or stage activations (NMF)",
        )
    return resolve_memory_cap(spec, CostModel.abstract(schedule.placement), schedule.placement)
