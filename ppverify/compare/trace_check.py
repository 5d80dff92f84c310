"""A profiler trace checked against the schedule it was meant to run, and against the predictions
(``ppverify import-trace``).

:func:`check_trace` reads the traces (:mod:`ppverify.io.profiler_trace`), picks and aligns a step
(:mod:`ppverify.io.trace_step`), rebuilds it as a measured timeline
(:mod:`ppverify.measure.trace_import`), verifies the recorded order as a schedule with every
property of ``verify`` (:func:`ppverify.verify.verify`; with the step's SEND/RECV and marker
ranges, as a ``compute_comms`` CSV under PyTorch's rules: :func:`recorded_program`), lists every difference from the schedule
given (op order, missing ops, extra ops) and predicts the same schedule with the ``async`` engine
on costs fitted from the trace (median per stage and kind) or given, with, for a ``system``
preset, the calibrated prediction ``measure --system`` makes. Errors are relative to the
prediction: per op kind (total time of that kind's ops), per rank (its last op's end) and per
recorded step (makespan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.costs import KINDS, CostModel
from ..core.schedule import Schedule
from ..core.timeline import Timeline


@dataclass(frozen=True, eq=False)
class TraceCheck:
    """What :func:`check_trace` found: the ``imported`` step, the verifier's ``report`` on the
    recorded order, ``differences`` from the ``given`` schedule, the ``predicted`` timeline (async,
    same costs), the ``calibrated`` makespan (with a system), and each recorded step's measured
    makespan (``step_makespans``: ``(N, seconds)``).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.schedules import build
        >>> tc = check_trace([traces_dir], build("1f1b", p=2, m=4))
        >>> tc.report.valid, tc.differences, tc.fitted
        (True, (), True)
    """

    imported: Any
    report: Any
    differences: tuple[str, ...]
    given: Schedule | None
    predicted: Timeline | None
    calibrated: float | None = None
    step_makespans: tuple[tuple[int, float], ...] = field(default_factory=tuple)
    #: True when the costs were fitted from the trace, False when given
    fitted: bool = True
    #: why there is no prediction to set beside the measurement ("" when there is one): stages of
    #: the schedule that never ran (fitted costs have none for them: a cost of 0 would make one
    #: up), or a schedule of more microbatches than the step ran (another step's time)
    unpredicted: str = ""
    #: what the verdict covers beyond the compute order (:func:`verified_what`): "comms" and/or
    #: "markers" (the step's SEND/RECV and marker ranges, under PyTorch's rules), "two-pipe"
    #: (ppverify's own runner: none), "" none recorded
    checked: str = ""

    @property
    def timeline(self) -> Timeline:
        """The measured timeline of the step."""
        return self.imported.timeline


def prediction_errors(measured: Timeline, predicted: Timeline) -> dict[str, Any]:
    """Relative errors of a prediction against a measured timeline
    (:func:`~ppverify.views.run_report.prediction_error`, ``(predicted - measured) / measured``;
    ``None`` where nothing was measured): ``step`` (makespan), ``kind`` (total duration of each op
    kind the prediction has; each op of an overlapped F&B cell counts the whole cell on both
    sides, as the engines time it and the import reads it), ``rank`` (end of each rank's last op).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> s = build("gpipe", p=2, m=1)
        >>> # measured at twice the predicted costs: every time doubles, so (x - 2x) / 2x = -0.5
        >>> e = prediction_errors(run(s, CostModel.abstract(s.placement, F=2, B=4)), run(s, CostModel.abstract(s.placement, F=1, B=2)))
        >>> e["step"], e["kind"], e["rank"]
        (-0.5, {'F': -0.5, 'B': -0.5}, {'0': -0.5, '1': -0.5})
    """
    from ..views.run_report import prediction_error

    def total(tl: Timeline, kind: str) -> float:
        return float(sum(e - s for op, s, e in zip(tl.ops, tl.start, tl.end) if op.kind == kind))

    def ends(tl: Timeline) -> dict[int, float]:
        out: dict[int, float] = {}
        for d, e in zip(tl.device, tl.end):
            out[int(d)] = max(out.get(int(d), 0.0), float(e))
        return out

    kinds = {}
    for k in KINDS:
        pk = total(predicted, k)
        if pk:
            kinds[k] = prediction_error(pk, total(measured, k))
    me, pe = ends(measured), ends(predicted)
    return {
        "step": prediction_error(predicted.makespan, measured.makespan),
        "kind": kinds,
        "rank": {str(r): prediction_error(pe[r], me.get(r, 0.0)) for r in sorted(pe)},
    }


def _unpredicted(recorded: Schedule, target: Schedule, fitted: bool) -> str:
    """Why no prediction is set beside the recorded step ("" when one is): a stage of ``target``
    that never ran (with costs ``fitted`` from the trace it has none), or microbatches ``target``
    has that the step did not run.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=4)
        >>> _unpredicted(s, s, True)
        ''
        >>> _unpredicted(s.with_programs(tuple(p[:2] for p in s.programs)), s, True)
        'the step ran microbatches 0..1; the schedule has m=4 (give -m 2, or the schedule that ran)'
        >>> _unpredicted(s, build("1f1b", p=2, m=2), False)  # four ran, read as a schedule of two
        'the step ran microbatches 0..3; the schedule has m=2 (give -m 4, or the schedule that ran)'
    """
    ran = {o.stage for r in range(recorded.p) for o in recorded.ops(r)}
    missing = [s for s in range(target.num_stages) if s not in ran]
    if fitted and missing:
        return (
            f"stage{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of the schedule never ran in the "
            "trace, so no cost was fitted for them (give --costs, or the schedule that ran)"
        )
    from ..io import looks_like_file

    mbs = {o.mb for r in range(recorded.p) for o in recorded.ops(r)}
    if mbs and mbs == set(range(max(mbs) + 1)) and max(mbs) + 1 != target.m:  # fewer or more: another step's time
        if target is recorded:  # no schedule given: the SEND/RECV ranges name microbatches no op ran
            return (
                f"the step ran compute ops of microbatches 0..{max(mbs)}, its SEND/RECV ranges name 0..{target.m - 1} "
                "(see verify)"
            )
        # -m reshapes a family; a file is read at its own count
        fix = "give " if looks_like_file(target.family) else f"give -m {max(mbs) + 1}, or "
        return f"the step ran microbatches 0..{max(mbs)}; the schedule has m={target.m} ({fix}the schedule that ran)"
    return ""


def _other_ops(recorded: Schedule, target: Schedule) -> str:
    """Why a step that ran other stages or ops than ``target`` gets no error against its
    prediction ("" when it ran the same ops, in any order): it is another schedule's time.

    Example:
        >>> from ppverify.schedules import build
        >>> _other_ops(build("1f1b", p=2, m=4), build("gpipe", p=2, m=4))
        ''
        >>> _other_ops(build("zbv", p=2, m=4), build("1f1b", p=2, m=4))
        'the trace ran 4 stages, the schedule has 2 (another schedule: give the one that ran)'
        >>> _other_ops(build("zb-h1", p=2, m=4), build("1f1b", p=2, m=4))
        'the trace ran other ops than the schedule (16 not in it, 8 of it missing: another schedule; give the one that ran)'
    """
    if recorded.num_stages != target.num_stages:
        return (
            f"the trace ran {recorded.num_stages} stages, the schedule has {target.num_stages} (another schedule: "
            "give the one that ran)"
        )
    ran = {str(o) for r in range(recorded.p) for o in recorded.ops(r)}
    meant = {str(o) for r in range(target.p) for o in target.ops(r)}
    if ran == meant:
        return ""
    return (
        f"the trace ran other ops than the schedule ({len(ran - meant)} not in it, {len(meant - ran)} of it missing: "
        "another schedule; give the one that ran)"
    )


def recorded_program(traces: Sequence[Any], step: int, recorded: Schedule) -> Schedule | None:
    """The step as PyTorch's runtime issued it: each rank's host-side actions of ``step`` in start
    order, SEND/RECV posts and markers (UNSHARD, RESHARD, REDUCE_GRAD) included, as the actions a
    ``compute_comms`` CSV parses to, on ``recorded``'s placement, so that ``verify`` checks it with
    PyTorch's rules (message order, gradient reduction) as it checks such a file (``format``
    ``trace_comms`` where no marker range was recorded: the reduction rules are then not
    checked). None where the step has no SEND/RECV or marker ranges (only its compute order can
    be verified), for the older
    classes' ``Forward i`` ranges, and for two pipes (ppverify's own runner, not PyTorch's).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> from ppverify.io.profiler_trace import read_traces
        >>> from ppverify.io.trace_step import recorded_step
        >>> traces = read_traces([str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")])
        >>> from ppverify.measure.trace_import import import_step
        >>> prog = recorded_program(traces, 1, import_step(traces, recorded_step(traces, 1)).schedule)
        >>> prog.params["format"], [str(a) for a in prog.programs[1][:5]]
        ('compute_comms', ['1UNSHARD', '1RECV_F0', '1F0', '1RECV_F1', '1B0'])
    """
    from ..core.ops import ActionSyntaxError, Comm, Marker, parse_action
    from ..io.trace_step import step_host_actions

    if recorded.placement.num_pipes != 1:
        return None
    from ..core.errors import ScheduleFileError
    from ..io.profiler_trace import LEGACY_ACTION

    programs = []
    for t in traces:
        acts = step_host_actions(t, step)
        if any(LEGACY_ACTION.match(a.name) for a in acts):  # Forward i / Backward i: no SEND/RECV either
            return None
        try:
            programs.append(tuple(parse_action(a.name, compact=False) for a in acts))
        except ActionSyntaxError as exc:  # read_rank_trace refuses these; a RankTrace built by hand
            # any other name dropped the whole step to its compute order: a wrong VALID
            raise ScheduleFileError(t.path, "traceEvents", f"range PP:{exc}") from None
    actions = [a for prog in programs for a in prog]
    if not any(isinstance(a, (Comm, Marker)) for a in actions):
        return None
    # without any marker range the gradients may be reduced outside the runtime's actions (a
    # runtime that records none): only a compute_comms file is held to the reduction rules
    fmt = "compute_comms" if any(isinstance(a, Marker) for a in actions) else "trace_comms"
    params = {"p": recorded.p, "m": recorded.m, "format": fmt, "placement": recorded.placement.name}
    return Schedule(recorded.placement, recorded.m, tuple(programs), recorded.pipe_of_mb, "recorded", params)


def check_trace(
    inputs: Sequence[Any],
    schedule: Schedule | None = None,
    step: int | None = None,
    clock: str = "auto",
    costs: CostModel | None = None,
    system: Any = None,
) -> TraceCheck:
    """Read, align, rebuild, verify, diff and predict (see the module docstring). ``inputs``:
    trace files and directories, or the :class:`~ppverify.io.profiler_trace.RankTrace` values
    :func:`~ppverify.io.profiler_trace.read_traces` returned.

    Example:
        >>> import json
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.schedules import build
        >>> tc = check_trace([traces_dir], build("1f1b", p=2, m=4))
        >>> round(tc.timeline.makespan, 3), [(n, round(ms, 3)) for n, ms in tc.step_makespans]
        (0.163, [(1, 0.163), (2, 0.178)])
        >>> own = json.loads(Path(traces_dir + ".measure.json").read_text())["makespans"]  # measure's own clock
        >>> [round(ms, 3) for ms in own]
        [0.163, 0.178]
    """
    from ..core.errors import PPVerifyError
    from ..engines import run
    from ..io.profiler_trace import RankTrace, read_traces
    from ..io.trace_step import recorded_step
    from ..measure import seconds_costs
    from ..measure.calibrate import predict_on
    from ..measure.trace_import import import_step, schedule_differences
    from ..verify import verify

    traces = list(inputs) if inputs and all(isinstance(x, RankTrace) for x in inputs) else read_traces(inputs)
    rec = recorded_step(traces, step, clock)
    imported = import_step(traces, rec, schedule, costs)
    recorded = imported.schedule
    # with its SEND/RECV and markers the step is verified as its compute_comms CSV would be, under
    # PyTorch's rules (message order, gradient reduction); without them only the compute order
    program = recorded_program(traces, rec.step, recorded)
    report = (
        verify(program, max_violations=20, pytorch=True) if program is not None else verify(recorded, max_violations=20)
    )
    target = schedule if schedule is not None else recorded
    differences = tuple(schedule_differences(schedule, recorded)) if schedule is not None else ()
    c = imported.timeline.costs
    unpredicted = _unpredicted(recorded, target, costs is None)
    try:
        predicted: Timeline | None = None if unpredicted else run(target, c, semantics="async")
    except PPVerifyError:
        predicted = None
    calibrated = None
    if system is not None and not unpredicted:
        try:
            calibrated = predict_on(target, seconds_costs(target, c), system)
        except PPVerifyError:
            calibrated = None
    per_step = []
    for n in rec.steps:
        other = rec if n == rec.step else recorded_step(traces, n, clock)
        per_step.append((n, import_step(traces, other, schedule, c).timeline.makespan))
    return TraceCheck(
        imported,
        report,
        differences,
        schedule,
        predicted,
        calibrated,
        tuple(per_step),
        costs is None,
        unpredicted,
        _checked(program) if recorded.placement.num_pipes == 1 else "two-pipe",
    )


def measured_beside(inputs: Sequence[Any], predicted: Timeline, step: int | None = None) -> dict[str, Any]:
    """The ``measured`` level read from a trace, beside a prediction of the same schedule (what
    ``simulate --measured-trace DIR`` prints): the step's measured makespan, its errors against
    ``predicted`` (:func:`prediction_errors`; the prediction's costs as given, nothing fitted),
    whether the recorded order is the schedule's, and which step was read.

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> mb = measured_beside([traces_dir], run(build("1f1b", p=2, m=4)))
        >>> round(mb["makespan"], 3), mb["step"], mb["steps"], mb["differences"]
        (0.163, 1, [1, 2], [])
    """
    from ..io.profiler_trace import read_traces
    from ..io.trace_step import recorded_step
    from ..measure.trace_import import import_step, schedule_differences, step_events

    traces = read_traces(inputs)
    rec = recorded_step(traces, step)
    target = predicted.schedule
    stages = 1 + max((e.stage for evs in step_events(rec, traces, target) for e in evs if e.kind in KINDS), default=-1)
    # a trace of more stages than the schedule has is read as it ran (the schedule has no place
    # for them), and another schedule's time: no error against it, as compare says not applicable
    imported = import_step(traces, rec, target if stages <= target.num_stages else None)
    diffs = schedule_differences(target, imported.schedule)
    # a step of other microbatches than the schedule's is another step's time: no error against it
    unpredicted = _unpredicted(imported.schedule, target, fitted=False) or _other_ops(imported.schedule, target)
    return {
        "makespan": imported.timeline.makespan,
        "step": rec.step,
        "steps": list(rec.steps),
        "clock": rec.clock,
        "side": rec.side,
        "differences": diffs,
        "errors": None if unpredicted else prediction_errors(imported.timeline, predicted),
        "no_prediction": unpredicted or None,
    }


def _checked(program: Schedule | None) -> str:
    """Which of the step's SEND/RECV ("comms") and marker ranges its verdict covers."""
    from ..core.ops import Comm, Marker

    if program is None:
        return ""
    acts = [a for prog in program.programs for a in prog]
    kinds = [k for k, t in (("comms", Comm), ("markers", Marker)) if any(isinstance(a, t) for a in acts)]
    return "+".join(kinds)
