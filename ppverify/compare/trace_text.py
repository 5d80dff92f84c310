"""The report of a trace checked by :func:`~ppverify.compare.trace_check.check_trace`: its JSON
fields (:func:`trace_report`) and its text (:func:`trace_text`), as ``ppverify import-trace`` prints
them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.schedule import Schedule
    from .trace_check import TraceCheck


def trace_report(tc: TraceCheck, system_name: str | None = None) -> dict[str, Any]:
    """Everything ``import-trace --json`` prints.

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.schedules import build
        >>> from ppverify.compare.trace_check import check_trace
        >>> tc = check_trace([traces_dir], build("1f1b", p=2, m=4))
        >>> rep = trace_report(tc)
        >>> rep["valid"], rep["step"], rep["steps"], rep["side"], rep["clock"], rep["differences"]
        (True, 1, [1, 2], 'host', 'shared', [])
        >>> rep["recorded_schedule"][1]
        ['1F0', '1B0', '1F1', '1B1', '1F2', '1B2', '1F3', '1B3']
    """
    from ..views.run_report import prediction_error, timeline_report
    from .trace_check import prediction_errors

    rec = tc.imported.step
    tl = tc.timeline
    rep = timeline_report(tl)
    pred = tc.predicted
    rep.update(
        {
            "step": rec.step,
            "steps": list(rec.steps),
            "side": rec.side,
            "clock": rec.clock,
            "clock_offsets_us": list(rec.offsets),
            "recorded_schedule": [[str(o) for o in tc.imported.schedule.ops(r)] for r in range(tc.imported.schedule.p)],
            "valid": tc.report.valid,
            "verified": verified_what(tc.checked),
            "verify": tc.report.to_dict(),
            "schedule": tc.given.describe() if tc.given is not None else None,
            "differences": list(tc.differences),
            "costs": {k: list(v) for k, v in tl.costs.duration.items()},
            "makespan_measured": tl.makespan,
            "makespan_predicted": pred.makespan if pred is not None else None,
            "no_prediction": tc.unpredicted or None,
            "errors": prediction_errors(tl, pred) if pred is not None else None,
            "step_makespans": {str(n): ms for n, ms in tc.step_makespans},
            "step_errors": {str(n): prediction_error(pred.makespan, ms) for n, ms in tc.step_makespans}
            if pred is not None
            else None,
        }
    )
    if system_name is not None:
        rep["system"] = system_name
        rep["makespan_predicted_calibrated"] = tc.calibrated
        rep["error_calibrated"] = prediction_error(tc.calibrated, tl.makespan) if tc.calibrated else None
    return rep


def _microbatches_ran(recorded: Schedule, given: bool = True) -> str:
    """Where the recorded step ran fewer microbatches than the schedule it is read with has, how
    many ran (the recorded schedule carries the given schedule's ``m``).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=4)
        >>> _microbatches_ran(s)
        ''
        >>> print(_microbatches_ran(s.with_programs(tuple(p[:2] for p in s.programs))))
         (the schedule's; microbatches 0..1 ran)
    """
    mbs = {o.mb for r in range(recorded.p) for o in recorded.ops(r)}
    if not mbs or len(mbs) == recorded.m:
        return ""
    if not given:  # the count is the highest microbatch a compute or SEND/RECV range names
        ran = f"0..{max(mbs)}" if mbs == set(range(max(mbs) + 1)) else f"{len(mbs)} of them"
        return f" (the step's ranges name microbatches up to {recorded.m - 1}; compute ops ran for {ran})"
    return (
        f" (the schedule's; microbatches {min(mbs)}..{max(mbs)} ran)"
        if mbs == set(range(min(mbs), max(mbs) + 1))
        else f" (the schedule's; {len(mbs)} microbatches ran)"
    )


def verified_what(checked: str) -> str:
    """What the verdict on a recorded step covers, for its line (``checked``: :attr:`TraceCheck.checked`).

    Example:
        >>> verified_what("comms+markers")
        "the recorded order with its SEND/RECV and markers, every property of verify under PyTorch's rules"
        >>> verified_what("")
        'the recorded compute order; no PP: SEND/RECV or marker ranges, so message order and gradient reduction not checked'
    """
    if checked == "comms+markers":
        return "the recorded order with its SEND/RECV and markers, every property of verify under PyTorch's rules"
    if checked == "comms":
        return (
            "the recorded order with its SEND/RECV, under PyTorch's rules; no PP: marker ranges, so gradient "
            "reduction not checked"
        )
    if checked == "two-pipe":  # ppverify's own runner, not PyTorch's: its rules do not apply
        return "the recorded compute order; two pipes, so PyTorch's message-order and reduction rules not checked"
    if checked == "markers":
        return (
            "the recorded order with its markers, every property of verify under PyTorch's rules; no SEND/RECV ranges"
        )
    return (
        "the recorded compute order; no PP: SEND/RECV or marker ranges, so message order and gradient "
        "reduction not checked"
    )


def trace_text(tc: TraceCheck, rep: dict[str, Any], width: int | None = 100) -> str:
    """The text ``import-trace`` prints: the step read and how, a Gantt chart (``width``
    columns; None: none), the verdict on the recorded order, the differences from the schedule,
    and measured against predicted (step, kinds, ranks, steps).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.schedules import build
        >>> from ppverify.compare.trace_check import check_trace
        >>> tc = check_trace([traces_dir], build("1f1b", p=2, m=4))
        >>> print(trace_text(tc, trace_report(tc), width=None))  # doctest: +ELLIPSIS
        trace         2 ranks, ProfilerStep#1 (of 1, 2), host-side ranges, one host's shared clock
        recorded      16 ops, 2 stages, m=4
        verify        VALID (the recorded order with its SEND/RECV and markers, every property of verify under PyTorch's rules)
        schedule      1f1b p=2 m=4: same op order on every rank
        makespan      measured 163.062 ms   predicted ...
    """
    from ..core.timeline_text import fmt_time, gantt
    from ..views.run_report import error_percent, error_text

    rec = tc.imported.step
    tl, pred = tc.timeline, tc.predicted
    steps = ", ".join(map(str, rec.steps))
    # without ProfilerStep ranges a step is the actions' n-th occurrence (io.trace_step)
    which = (
        f"ProfilerStep#{rec.step} (of {steps})"
        if rec.profiler_steps
        else f"step {rec.step} (of {steps}: no ProfilerStep ranges, the actions' occurrences)"
    )
    n_stages = tc.imported.schedule.num_stages
    lines = [
        f"trace         {tc.imported.schedule.p} rank{'s' if tc.imported.schedule.p != 1 else ''}, {which}, {rec.side}-side ranges, "
        + ("one host's shared clock" if rec.clock == "shared" else "clocks aligned on the collective before the step"),
        f"recorded      {tc.imported.schedule.num_ops} ops, {n_stages} stage{'s' if n_stages != 1 else ''}, m={tc.imported.schedule.m}"
        + _microbatches_ran(tc.imported.schedule, tc.given is not None),
    ]
    if width is not None:
        lines += ["", gantt(tl, width), ""]
    first = tc.report.to_text().splitlines()[0]
    lines.append(f"verify        {'VALID' if tc.report.valid else 'INVALID'} ({verified_what(tc.checked)})")
    if not tc.report.valid:
        lines += ["  " + x for x in tc.report.to_text().splitlines()[1:]]
    elif first and not first.startswith("VALID"):
        lines.append("  " + first)
    if tc.given is not None:
        if tc.differences:
            lines.append(f"schedule      {tc.given.describe()}: {len(tc.differences)} difference(s)")
            lines += ["  " + d for d in tc.differences]
        else:
            lines.append(f"schedule      {tc.given.describe()}: same op order on every rank")
    ms = tl.makespan
    line = f"makespan      measured {fmt_time(ms, 's')}"
    said = False  # the sign's convention is stated with the first error printed
    if tc.unpredicted:
        line += f"   no prediction: {tc.unpredicted}"
    elif pred is not None:
        fitted = "costs fitted from the trace" if tc.fitted else "costs given"
        line += f"   predicted {fmt_time(pred.makespan, 's')} (async, {fitted})   {error_text(rep['errors']['step'])}"
        said = True
    lines.append(line)
    if rep.get("makespan_predicted_calibrated"):
        cal = rep["makespan_predicted_calibrated"]
        lines.append(
            f"calibrated    predicted {fmt_time(cal, 's')} (--system {rep['system']})   "
            + error_text(rep["error_calibrated"], labelled=not said)
        )
        said = True
    err = rep.get("errors")  # set with a prediction, so after the makespan line's stated convention
    if err:
        lines.append(
            "error by kind " + "  ".join(f"{k} {error_percent(v)}" for k, v in err["kind"].items() if v is not None)
        )
        lines.append(
            "error by rank " + "  ".join(f"{r}: {error_percent(v)}" for r, v in err["rank"].items() if v is not None)
        )
    if rep.get("step_errors"):
        # each step's makespan and the error of the prediction against it
        errs = {n: "-" if e is None else error_percent(e) for n, e in rep["step_errors"].items()}
        lines.append(
            "steps         "
            + "  ".join(f"#{n} {fmt_time(m, 's')} ({errs[n]})" for n, m in rep["step_makespans"].items())
        )
    from ..measure.summary import stage_durations

    lines.append(f"costs         {stage_durations(tl.costs, tl.ops)} (per stage)")
    return "\n".join(lines)
