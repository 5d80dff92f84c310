"""What a timed run reports: a timeline's metrics with its communication (transfers, exposed
time, collectives) and memory against the device capacity, as a dict and as the text
``ppverify simulate`` prints. Also the timeline's rows written as a table file."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from tabulate import tabulate

from ..core.errors import ScheduleFileError
from ..core.memory_cap import CapSpec, resolve_memory_cap
from ..core.memory_unit import printed_unit
from ..core.timeline import Timeline
from ..core.timeline_text import fmt_mem, fmt_time, gantt, stage_table
from ..schedules.family_checks import described
from .memory_units import cap_check_in_activations, in_activations

#: ppverify's one convention for a prediction's error against a measurement, stated once in every
#: output that prints one: positive when ppverify predicted slower than what was measured
ERROR_CONVENTION = "(pred-meas)/meas"


def prediction_error(predicted: float, measured: float) -> float | None:
    """The relative error of a prediction against a measurement, ``(predicted - measured) /
    measured`` (:data:`ERROR_CONVENTION`: positive when the prediction is slower); ``None`` when
    nothing was measured (0).

    Example:
        >>> # 150 ms predicted, 180 ms measured: -30 / 180 = -1/6; 5 against 4: +1 / 4 = +0.25
        >>> round(prediction_error(0.15, 0.18), 4), prediction_error(5.0, 4.0), prediction_error(1.0, 0.0)
        (-0.1667, 0.25, None)
    """
    return (predicted - measured) / measured if measured else None


def error_percent(error: float) -> str:
    """A prediction's error in per cent with its sign, as every output prints it; an error that
    rounds to zero prints ``+0.0%`` (a ``-0.0%`` reads as a sign that is not there).

    Example:
        >>> error_percent(-0.0004), error_percent(-0.0006), error_percent(0.25)
        ('+0.0%', '-0.1%', '+25.0%')
    """
    text = f"{100 * error:+.1f}%"
    return "+0.0%" if text == "-0.0%" else text


def error_text(error: float | None, labelled: bool = True) -> str:
    """A prediction's error as printed, in per cent; ``labelled``: with :data:`ERROR_CONVENTION`
    (the first error an output prints), so every output says which way its sign points.

    Example:
        >>> error_text(-1 / 6), error_text(0.25, labelled=False), error_text(None)
        ('error (pred-meas)/meas -16.7%', 'error +25.0%', 'error (pred-meas)/meas -')
    """
    value = "-" if error is None else error_percent(error)
    return f"error {ERROR_CONVENTION} {value}" if labelled else f"error {value}"


def timeline_report(
    timeline: Timeline,
    system: Any = None,
    stage_costs: Any = None,
    capacity: float | None = None,
    memory_cap: CapSpec | None = None,
) -> dict[str, Any]:
    """The metrics of a timed run: :meth:`Timeline.metrics` plus the schedule, communication and
    memory (``capacity`` in the cost model's memory unit; default: the system's). ``memory_cap``
    (``--memory-cap`` as read by :func:`ppverify.core.memory_cap.read_memory_cap`, resolved here in
    the timeline's cost model) adds the cap
    (``memory_cap``), the devices whose activation peak is over it (``over_memory_cap``) and the
    line saying so (``memory_cap_line``).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> r = timeline_report(run(build("1f1b", p=2, m=2)), capacity=1.5)
        >>> r["makespan"], r["peak_memory"], r["oom_devices"], r["transfers"]
        (6.0, [2.0, 1.0], [0], {'gradient': 2, 'activation': 2})
    """
    from ..engines.simulate import memory_report

    if capacity is None and system is not None and timeline.costs.memory_unit == "bytes":
        capacity = system.memory_bytes  # bytes: explicit --costs count activations, never checked against it
    mem = memory_report(timeline, capacity)
    # printed in the unit --memory-cap counts (verify's): one activation is a device's whole share
    one = printed_unit(timeline.costs, timeline.schedule.placement)
    tr = timeline.transfers
    counts = Counter(tr.kind)
    out = timeline.metrics()
    exposed = timeline.info.exposed_comm
    out.update(
        {
            "family": timeline.schedule.family,
            "params": dict(timeline.schedule.params),
            "p": timeline.p,
            "m": timeline.schedule.m,
            "placement": timeline.schedule.placement.to_dict(),
            "costs": timeline.costs.label or "custom",
            "system": system.summary() if system is not None else None,
            "exposed_comm": exposed,
            "exposed_comm_mean": float(np.mean(exposed)) if exposed else None,
            "transfers": dict(counts),
            "transfer_bytes": float(sum(tr.nbytes)),
            # the same differences, summed by the same sum(), without a Python loop over transfers
            "transfer_time": float(sum((tr.column("end") - tr.column("start")).tolist())),
            "peak_activations": in_activations(out["peak_activations"], one),
            "peak_memory": in_activations(mem["peak"], one),
            "weight_memory": in_activations(mem["weights"], one),
            "memory_capacity": None if mem["capacity"] is None else in_activations([mem["capacity"]], one)[0],
            "oom_devices": mem["oom"],
            "sync": timeline.info.sync,
            "dp_allreduce": timeline.info.dp_allreduce,
        }
    )
    if memory_cap is not None:
        cap = resolve_memory_cap(memory_cap, timeline.costs, timeline.schedule.placement)
        check = cap_check_in_activations(timeline.peak_memory().tolist(), cap, one)
        out.update(memory_cap=check["cap"], over_memory_cap=check["over"], memory_cap_line=check["line"])
    if stage_costs is not None:
        sc = stage_costs
        out["stages"] = {
            "layers": list(sc.layers),
            "F": list(sc.duration["F"]),
            "B": list(sc.duration["B"]),
            "I": list(sc.duration["I"]),
            "W": list(sc.duration["W"]),
            "activation_bytes": list(sc.activation),
            "weight_bytes": list(sc.weight_bytes),
            "boundary_bytes": list(sc.boundary_bytes),
        }
    return out


def measured_line(meas: dict[str, Any], predicted: float, semantics: str) -> str:
    """The line a measured step (``compare.trace_check.measured_beside``) prints beside a
    prediction's makespan (seconds), its error as :func:`prediction_error` has it.

    Example:
        >>> print(measured_line({"makespan": 0.18, "step": 2, "differences": [], "errors": {"step": -1 / 6}}, 0.15, "async"))
        measured      180.000 ms (trace, ProfilerStep#2; same op order)   predicted 150.000 ms (async)   error (pred-meas)/meas -16.7%
        >>> print(measured_line({"makespan": 0.05, "step": 2, "differences": [], "errors": None,
        ...                      "no_prediction": "the step ran microbatches 0..0; the schedule has m=4"}, 0.15, "async"))
        measured      50.000 ms (trace, ProfilerStep#2; same op order)   no prediction: the step ran microbatches 0..0; the schedule has m=4
    """
    diffs = meas["differences"]
    order = f"{len(diffs)} order difference(s)" if diffs else "same op order"
    head = f"measured      {fmt_time(meas['makespan'], 's')} (trace, ProfilerStep#{meas['step']}; {order})   "
    if meas.get("errors") is None:  # another step's microbatches: no error against this prediction
        return head + f"no prediction: {meas.get('no_prediction')}"
    return head + f"predicted {fmt_time(predicted, 's')} ({semantics})   {error_text(meas['errors']['step'])}"


def report_text(
    timeline: Timeline,
    rep: dict[str, Any],
    comm: Any = None,
    stage_costs: Any = None,
    *,
    show_stages: bool = False,
    chart: bool = True,
    width: int = 100,
) -> str:
    """The text of a timed run: what ran, the table (``slot``) or a chart, the metrics and a
    per-device table of busy/idle time, exposed communication and memory. ``rep`` is
    :func:`timeline_report`'s dict; ``comm`` the communication model (abstract costs: its fixed
    delay is named).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> tl = run(build("gpipe", p=2, m=1), semantics="async")
        >>> text = report_text(tl, timeline_report(tl), chart=False)
        >>> [line for line in text.splitlines() if line.startswith(("makespan", "comm"))]
        ['comm          0 per cross-device transfer', 'makespan      4']
    """
    from ..engines.registry import engine
    from ..engines.table import MAX_RENDER_TICKS, format_table

    unit, munit = time_unit_of(timeline), timeline.costs.memory_unit
    steps = unit == "steps"  # every action one step: the costs time nothing
    lines = [
        f"schedule      {described(timeline.schedule)}",
        f"semantics     {timeline.semantics} ({engine(timeline.semantics).help})",
        f"costs         {rep['costs']} ({unit})" if not steps else "costs         not used: every action one step",
    ]
    if rep["system"]:
        lines.append(f"system        {rep['system']}")
    else:
        lines.append(f"comm          {fmt_time(getattr(comm, 'delay', 0.0), unit)} per cross-device transfer")
    if stage_costs is not None:
        sc = stage_costs
        lines.append(
            f"stages        layers {','.join(map(str, sc.layers))}; F {fmt_time(max(sc.duration['F']), unit)}, "
            f"B {fmt_time(max(sc.duration['B']), unit)} (slowest stage); "
            f"boundary {sc.boundary_bytes[0] / 1e6 if sc.boundary_bytes else 0:.1f} MB"
        )
    if show_stages and stage_costs is not None:
        lines += ["", stage_table(stage_costs)]
    if chart:
        lines.append("")
        if timeline.semantics == "slot" and (timeline.info.ticks or 0) <= MAX_RENDER_TICKS:
            lines.append(format_table(timeline, width=width))  # --width wraps the table as it sizes a chart
        else:
            # seconds from presets rarely share a small tick: chart the table's timing instead
            lines.append(gantt(timeline, width))  # its axis in the timeline's unit (steps for torch)
    ms = timeline.makespan
    lines += [
        "",
        f"makespan      {fmt_time(ms, unit)}",
        f"bubble ratio  {timeline.bubble_ratio:.4f}  (convention {rep['bubble_convention']})",
    ]
    if rep.get("measured"):  # simulate --measured-trace: the step of a profiler trace, same schedule
        lines.append(measured_line(rep["measured"], ms, timeline.semantics))
    if rep["exposed_comm"] is not None:
        lines.append(
            f"exposed comm  {fmt_time(rep['exposed_comm_mean'], unit)} per device on average "
            "(time waiting for transfers in flight, plus collectives after the last op)"
        )
    if rep["transfers"]:
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(rep["transfers"].items()))
        size = f", {rep['transfer_bytes'] / 1e9:.3f} GB" if munit == "bytes" else ""
        lines.append(f"transfers     {kinds}{size}")
    if timeline.semantics != "slot" and rep["sync"] and any(k == "allreduce" for k in rep["transfers"]):
        lines.append(f"replica sync  {rep['sync']}")
    lines += ["", _device_table(timeline, rep)]
    if rep["oom_devices"]:
        cap = rep["memory_capacity"]
        lines.append(
            f"\nout of memory: device(s) {', '.join(map(str, rep['oom_devices']))} exceed "
            f"{fmt_mem(cap, munit)} (peak = activations + weights/gradients/optimizer state of every stage replica held)"
        )
    if rep.get("memory_cap_line"):
        lines.append(f"\nmemory        {rep['memory_cap_line']}")
    return "\n".join(lines)


def time_unit_of(timeline: Timeline) -> str:
    """The unit a timed run's numbers are in: ``steps`` for an engine that counts unit steps
    (``torch``: every action one step, whatever the costs), else the cost model's (``s``, ``units``).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> time_unit_of(run(build("1f1b", p=2, m=2), semantics="async"))
        'units'
    """
    from ..engines.registry import engine

    return "steps" if engine(timeline.semantics).unit_steps else timeline.time_unit


def _device_table(timeline: Timeline, rep: dict[str, Any]) -> str:
    unit, munit, ms = time_unit_of(timeline), timeline.costs.memory_unit, timeline.makespan
    exposed = rep["exposed_comm"] or [None] * timeline.p
    cap = rep["memory_capacity"]
    rows = [
        [
            d,
            fmt_time(rep["busy"][d], unit),
            fmt_time(rep["idle"][d], unit),
            f"{100 * rep['idle'][d] / ms:.1f}" if ms else "-",
            fmt_time(exposed[d], unit) if exposed[d] is not None else "-",
            fmt_mem(rep["weight_memory"][d], munit),
            fmt_mem(rep["peak_memory"][d], munit),
            ("OOM" if d in rep["oom_devices"] else "ok") if cap is not None else "-",
        ]
        for d in range(timeline.p)
    ]
    # seconds and bytes carry their unit in each cell (ms, GiB); abstract numbers name it here, as show
    # does (a calibrated preset's seconds beside activations: "busy (s)" over "134.407 ms" read twice)
    t = "" if unit == "s" else f" ({unit})"
    mem = "" if munit == "bytes" else f" ({munit})"
    headers = ["device", f"busy{t}", f"idle{t}", "idle %", f"exposed comm{t}", f"weights{mem}", f"peak memory{mem}"]
    headers.append(f"fits {fmt_mem(cap, munit)}" if cap is not None else "fits")
    return tabulate(rows, headers=headers, tablefmt="simple", stralign="right", disable_numparse=True)


def write_frame(timeline: Timeline, path: str, extra: Any = None) -> None:
    """Write every op and transfer of ``timeline`` as rows: CSV, or Parquet for ``.parquet``
    (needs pyarrow), with the rows of the data frame ``extra`` after them (a measured run's
    memory curve). Errors name the file.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> path = os.path.join(tempfile.mkdtemp(), "rows.csv")
        >>> write_frame(run(build("gpipe", p=2, m=1)), path)
        >>> open(path).read().count("\\n") > 4
        True
    """
    from ..core.files import atomic_path

    frame = timeline.to_frame()
    if extra is not None:
        import pandas as pd

        frame = pd.concat([frame, extra], ignore_index=True)
    try:
        with atomic_path(path, "--frame") as tmp:
            if path.endswith(".parquet"):
                frame.to_parquet(tmp)
            else:
                frame.to_csv(tmp, index=False)
    except (OSError, ImportError) as exc:
        raise ScheduleFileError(path, "", f"cannot write: {exc}") from None


def run_timed(
    schedule: Any, costs: Any, comm: Any, semantics: str = "async", sync: str = "eager", dp_allreduce: int = 0
) -> Timeline:
    """Time ``schedule`` under ``semantics``: ``slot`` charges the communication per column (none
    when it is a zero fixed delay; ``sync`` and ``dp_allreduce`` do not apply), the other engines
    run the replica and data-parallel collectives as ``sync`` and ``dp_allreduce`` say.

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> unit = CostModel.unit(s.placement)
        >>> run_timed(s, unit, FixedDelay(0.5), "async").makespan, run_timed(s, unit, FixedDelay(0.5), "slot").makespan
        (5.0, 6.0)
    """
    from ..core.comm import FixedDelay
    from ..engines import run as run_engine

    if semantics == "slot":
        zero = isinstance(comm, FixedDelay) and comm.delay == 0
        return run_engine(schedule, costs, comm, "slot", charge_comm=not zero)
    return run_engine(schedule, costs, comm, semantics, sync=sync, dp_allreduce=dp_allreduce)
