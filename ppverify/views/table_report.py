"""A schedule's idealized (``slot``) table next to its family's closed form: the timing, the
formula's values and whether the table agrees, whether a file's stored table is the one the
engine computes, and the text ``ppverify show`` prints."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

from ..core.comm import CommModel, FixedDelay
from ..core.costs import CostModel, complete_costs, parse_costs
from ..core.errors import ParameterError, ScheduleFileError
from ..core.memory_unit import printed_unit
from ..core.schedule import Schedule
from ..core.sizes import format_apart
from ..core.timeline import Timeline
from ..core.timeline_text import fmt_number
from ..io.json_format import ScheduleDocument, TableGrid
from ..schedules.family_checks import described
from .memory_units import in_activations
from .table_cells import (
    comm_charged_text,
    difference_text,
    drawn_break,
    drawn_costs,
    embedded_check,
    file_comm_text,
)

#: relative tolerance when comparing a formula with the table (costs are rationals in floats)
_TOL = 1e-9
#: the formula's costs when the cost model is not uniform abstract costs (a preset, a hand-written one)
UNKNOWN_COSTS = "unknown"


def table_costs(
    costs_given: str | Sequence[tuple[str, float]] | None, doc: ScheduleDocument, source: str = ""
) -> tuple[CostModel, Any]:
    """The cost model to time ``doc`` with (``--costs``: ``(kind, cost)`` pairs as a command read
    them, or text; else the file's, else unit slots)
    and the per-share costs a formula takes: a dict, ``None`` for unit slots, or
    :data:`UNKNOWN_COSTS`.

    Example:
        >>> from ppverify.schedules import build
        >>> doc = ScheduleDocument(build("gpipe", p=2, m=2))
        >>> costs, given = table_costs("F=1,B=2", doc)
        >>> costs.duration["B"], sorted(given.items())
        ((2.0, 2.0), [('B', 2.0), ('F', 1.0), ('I', 1.0), ('W', 1.0)])
        >>> table_costs(None, doc)[1]   # the default abstract costs
        {'F': 1.0, 'B': 2.0, 'I': 1.0, 'W': 1.0}
    """
    schedule = doc.schedule
    if costs_given:
        named = parse_costs(costs_given) if isinstance(costs_given, str) else dict(costs_given)
        given = complete_costs(named)
        return CostModel.abstract(schedule.placement, **given), given
    if doc.costs is not None:
        if doc.costs.num_stages != schedule.num_stages:
            raise ScheduleFileError(
                source,
                "costs",
                f"describes {doc.costs.num_stages} stages; the placement has {schedule.num_stages}",
            )
        if doc.costs == CostModel.unit(schedule.placement):
            return doc.costs, None
        try:  # abstract costs carry their per-share values in the label (F=1,B=2,I=1,W=1)
            given = complete_costs(parse_costs(doc.costs.label))
        except ParameterError:
            return doc.costs, UNKNOWN_COSTS
        if doc.costs != CostModel.abstract(schedule.placement, **given):
            return doc.costs, UNKNOWN_COSTS
        return doc.costs, given
    if doc.table is not None:  # a drawn table (a text table file): one tick per cell, as drawn
        costs = drawn_costs(schedule, doc.table)
        return costs, None if costs == CostModel.unit(schedule.placement) else UNKNOWN_COSTS
    given = complete_costs({})  # the default abstract costs: F=1, B=2, I=W=1
    return CostModel.abstract(schedule.placement, **given), given


def shown_peaks(timeline: Timeline) -> list[float]:
    """Each device's activation peak in the unit ``--memory-cap`` counts, as ``verify`` prints it
    (:mod:`~ppverify.views.memory_units`): bytes as they are, else activations of a device's share.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> shown_peaks(run(build("1f1b", p=2, m=2), semantics="slot"))
        [2.0, 1.0]
    """
    unit = printed_unit(timeline.costs, timeline.schedule.placement)
    return in_activations(timeline.peak_memory().tolist(), unit)


def shown_metrics(timeline: Timeline) -> dict[str, Any]:
    """:meth:`Timeline.metrics` with ``peak_activations`` from :func:`shown_peaks`.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> shown_metrics(run(build("gpipe", p=2, m=2), semantics="slot"))["peak_activations"]
        [2.0, 2.0]
    """
    return dict(timeline.metrics(), peak_activations=shown_peaks(timeline))


def exact_number(x: float | None) -> str:
    """A time or activation count as ``show`` prints it: integers whole, others to 6 significant
    digits and at least one decimal, never in scientific notation. Abstract values are exact sums
    of the costs (215.25 is a makespan, not 215.2), so the 4 digits of a ratio would print a number
    the table does not hold.

    Example:
        >>> # interleaved 1F1B p=32 m=64 v=4: m(tF+tB) + (p-1)(tF+tB)/v = 192 + 23.25
        >>> exact_number(215.25), exact_number(12004.5), exact_number(39.75), exact_number(21.0), exact_number(1 / 3)
        ('215.25', '12004.5', '39.75', '21', '0.333333')
    """
    if x is None or not math.isfinite(x) or float(x).is_integer():
        return fmt_number(x)
    return plain_number(x, 6, min_decimals=1)


def plain_number(x: float, digits: int, min_decimals: int = 0) -> str:
    """``x`` (finite, non-zero) to ``digits`` significant digits, and at least ``min_decimals``
    decimals, never in scientific notation: every digit before the point is kept, trailing zeros
    after it are dropped.

    Example:
        >>> plain_number(49450.3, 4), plain_number(82.2, 4), plain_number(215.25, 6, 1), plain_number(1 / 3, 6, 1)
        ('49450', '82.2', '215.25', '0.333333')
    """
    whole = math.floor(math.log10(abs(x))) + 1  # digits before the point
    text = f"{x:.{max(min_decimals, digits - whole)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_TOL, abs_tol=_TOL)


def _holds(kind: str, formula: float, table: float) -> bool:
    """Exact: equal; lower bound: the table is not below it; upper bound: not above it."""
    if kind == "lower bound":
        return table >= formula or _close(formula, table)
    if kind == "upper bound":
        return table <= formula or _close(formula, table)
    return _close(formula, table)


def formula_report(schedule: Schedule, given: Any, timeline: Timeline) -> dict[str, Any] | None:
    """The family's closed form next to the table's values, or ``None`` when there is none.

    ``given`` is the per-share cost dict (None: unit slots). Keys: ``makespan``, ``bubble_ratio``,
    ``peak_activations`` (formula values), ``kinds`` (per metric ``exact``, ``lower bound`` or
    ``upper bound``), ``agrees`` (per metric: equal when exact, the bound holds otherwise),
    ``exact``, ``conditions``, ``source``; or only ``unavailable`` (why it was not evaluated).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> s = build("gpipe", p=4, m=4)
        >>> r = formula_report(s, None, run(s, semantics="slot"))
        >>> r is None or r["agrees"]["makespan"]
        True
    """
    from ..schedules import get_family

    try:
        fam = get_family(schedule.family)
    except ParameterError:
        return None  # a custom or table schedule: no family, no formula
    if fam.formula is None:
        return None
    if given == UNKNOWN_COSTS:
        return {"unavailable": "the costs are not uniform abstract costs per device share"}
    if timeline.info.charge_comm:
        return {"unavailable": "communication is charged in the table; the formulas model none"}
    params = {pr.name: schedule.params.get(pr.name, pr.default) for pr in fam.params}
    try:
        f = fam.formula(schedule.p, schedule.m, None if given is None else dict(given), **params)
    except ParameterError as exc:
        return {"unavailable": str(exc)}
    if f is None:
        return None
    exact = bool(getattr(f, "exact", False))
    mk = getattr(f, "makespan_kind", "exact" if exact else "bound")
    pk = getattr(f, "peak_kind", "exact" if exact else "bound")
    values = {
        "makespan": getattr(f, "makespan", None),
        "bubble_ratio": getattr(f, "bubble_ratio", None),
        "peak_activations": getattr(f, "peak_activations", None),
    }
    kinds = {"makespan": mk, "bubble_ratio": mk, "peak_activations": pk}
    table: dict[str, Any] = {
        "makespan": timeline.makespan,
        "bubble_ratio": timeline.bubble_ratio,
        "peak_activations": shown_peaks(timeline),
    }
    agrees: dict[str, bool | None] = {}
    for k, v in values.items():
        if v is None:
            agrees[k] = None
        elif k == "peak_activations":
            v = values[k] = [float(x) for x in v]
            agrees[k] = len(v) == len(table[k]) and all(_holds(pk, a, b) for a, b in zip(v, table[k]))
        else:
            v = values[k] = float(v)
            agrees[k] = _holds(kinds[k], v, table[k])
    return {
        **values,
        "kinds": kinds,
        "agrees": agrees,
        "exact": exact,
        "conditions": str(getattr(f, "conditions", "")),
        "source": str(getattr(f, "source", "")),
    }


def placement_text(schedule: Schedule) -> str:
    """One line naming a schedule's placement and the device of each stage, per pipe.

    Example:
        >>> from ppverify.schedules import build
        >>> placement_text(build("1f1b", p=2, m=2))
        'linear, 1 pipe, 2 stages on 2 devices (device of each stage, pipe 0: 0 1)'
    """
    pl = schedule.placement
    pipes = "; ".join(f"pipe {i}: " + " ".join(map(str, mp)) for i, mp in enumerate(pl.maps))
    return (
        f"{pl.name}, {pl.num_pipes} pipe{'s' if pl.num_pipes > 1 else ''}, {pl.num_stages} stage"
        f"{'s' if pl.num_stages > 1 else ''} on {pl.p} device{'s' if pl.p > 1 else ''} (device of each stage, {pipes})"
    )


@dataclass(frozen=True)
class TableRun:
    """A document timed as a table: the timeline, its cost model, the grid (``None`` when too
    long to draw), the formula report and the check of the file's own table."""

    doc: ScheduleDocument
    timeline: Timeline
    costs: CostModel
    grid: TableGrid | None
    formula: dict[str, Any] | None
    embedded: dict[str, Any] | None
    #: the fixed delay charged per column (0: none, or a system's transfers)
    comm_delay: float
    text_table: bool
    #: the communication charged per column (``None``: none)
    comm: CommModel | None = None
    #: where the communication came from: ``"given"`` (``--comm-delay``, even 0), ``"file"`` (the
    #: file's own, as ``simulate`` charges it) or ``""`` (none, or a file's left uncharged)
    comm_source: str = ""


def time_table(
    doc: ScheduleDocument,
    costs_given: str | Sequence[tuple[str, float]] | None = None,
    comm_delay: float | None = None,
    source: str = "",
    text_table: bool = False,
) -> TableRun:
    """Time ``doc`` with the ``slot`` engine and compare it with its formula and with the file's
    table. Communication is charged per column: ``comm_delay`` when given (``--comm-delay``, 0
    included), else the file's own as ``simulate`` charges it (:func:`~ppverify.io.json_comm.charged_comm`).

    Example:
        >>> from ppverify.schedules import build
        >>> r = time_table(ScheduleDocument(build("gpipe", p=2, m=2)), "F=1,B=2")
        >>> r.timeline.makespan, r.formula["agrees"]["makespan"], r.grid.ticks  # (m + p - 1)(F + B)
        (9.0, True, 9)
    """
    from ..engines import run as run_engine
    from ..engines.table import MAX_RENDER_TICKS, timeline_table
    from ..io.json_comm import charged_comm

    schedule = doc.schedule
    costs, given = table_costs(costs_given, doc, source)
    if comm_delay is None:  # not given: the file's own, with its own costs when a system's (seconds)
        comm, origin = charged_comm(doc.comm, own_costs=not costs_given and doc.costs is not None), "file"
    else:
        comm, origin = FixedDelay(comm_delay), "given"
    comm_source = "" if comm is None else origin
    if isinstance(comm, FixedDelay) and comm.delay == 0:  # nothing to charge
        comm = None
    if comm is not None:
        timeline = run_engine(schedule, costs, comm, "slot", charge_comm=True)
    else:
        timeline = run_engine(schedule, costs, semantics="slot")
    # a cost model in seconds can make the tick tiny: time it, but do not build a giant grid
    grid = timeline_table(timeline) if int(timeline.info.ticks or 0) <= MAX_RENDER_TICKS else None
    formula = formula_report(schedule, given, timeline)
    embedded = None if grid is None else embedded_check(doc, grid, not costs_given and comm is None, text_table)
    if embedded is not None and not embedded["checked"] and comm_source == "file" and not costs_given:
        embedded["why"] = "the file's communication is charged per column, which its table leaves out"
    if embedded is not None and embedded.get("matches") is False and text_table and doc.table is not None:
        # a drawn time that breaks a dependency is no cost's doing: --costs cannot reproduce it
        broken = drawn_break(schedule, doc.table)
        if broken is not None:
            embedded["drawn_break"] = broken
    delay = comm.delay if isinstance(comm, FixedDelay) else 0.0
    return TableRun(doc, timeline, costs, grid, formula, embedded, delay, text_table, comm, comm_source)


def table_json(run: TableRun) -> dict[str, Any]:
    """What ``ppverify show --json`` prints for a timed table.

    Example:
        >>> from ppverify.schedules import build
        >>> out = table_json(time_table(ScheduleDocument(build("gpipe", p=2, m=1))))
        >>> out["makespan"], out["ticks"], out["table"]   # default costs: a backward is two ticks
        (6.0, 6, [['0F0', None, None, None, '0B0', '0B0'], [None, '1F0', '1B0', '1B0', None, None]])
    """
    schedule, timeline = run.doc.schedule, run.timeline
    out = {
        **shown_metrics(timeline),
        "family": schedule.family,
        "params": dict(schedule.params),
        "p": schedule.p,
        "m": schedule.m,
        "placement": schedule.placement.to_dict(),
        "costs": run.costs.label or "custom",
        # None: a system's transfers are charged (a file's, beside its own costs in seconds)
        "comm_delay_per_column": None if run.comm is not None and not run.comm_delay else run.comm_delay,
        "comm_from_file": run.comm_source == "file",
        # null where the text says the durations share no common tick (no table cell to measure)
        "tick": None if _no_common_tick(timeline) else float(timeline.info.tick or 0.0),
        "ticks": None if _no_common_tick(timeline) else int(timeline.info.ticks or 0),
        "formula": run.formula,
        "table": None if run.grid is None else [list(row) for row in run.grid.cells],
    }
    if run.embedded is not None:
        out["embedded_table"] = run.embedded
    return out


def _no_common_tick(timeline: Timeline) -> bool:
    # durations in seconds (presets) share no tick a table can draw: their gcd is a rounding's
    from ..engines.table import NO_COMMON_TICK

    return int(timeline.info.ticks or 0) > NO_COMMON_TICK


def table_text(run: TableRun, style: str = "paper", width: int | None = None, table: bool = True) -> str:
    """The text ``ppverify show`` prints: what was timed, the table (``style`` paper or torch,
    wrapped to ``width`` columns; ``table=False`` leaves it out), the metrics per device, the
    formula against the table and the check of the file's table.

    Example:
        >>> from ppverify.schedules import build
        >>> text = table_text(time_table(ScheduleDocument(build("gpipe", p=2, m=2))), table=False)
        >>> text.splitlines()[4]   # (m + p - 1)(tF + tB) at the default tF = 1, tB = 2
        'makespan      9 units (9 ticks)'
    """
    from ..engines.table import format_table

    schedule, timeline, doc = run.doc.schedule, run.timeline, run.doc
    unit, metrics = timeline.time_unit, shown_metrics(timeline)
    ticks = int(timeline.info.ticks or 0)
    no_tick = _no_common_tick(timeline)
    tick = timeline.info.tick or 0.0
    tick_text = (
        "the durations share no common tick a table can draw: timed exactly, not drawn"
        if no_tick
        # "1 unit", "2 units": the count words take a plural, symbols (s, ms) do not
        else f"one table tick = {exact_number(tick)} {unit[:-1] if tick == 1 and unit in ('units', 'steps') else unit}"
    )
    lines = [
        f"schedule      {described(schedule)}",
        f"placement     {placement_text(schedule)}",
        f"costs         {run.costs.label or 'custom'} ({unit}; {tick_text})"
        + comm_charged_text(run.comm, run.comm_delay, run.comm_source),
    ]
    if doc.comment:
        lines.append(f"comment       {doc.comment}")
    if doc.comm is not None:  # the file's communication: said, charged or not
        lines.append(f"file's comm   {doc.comm.describe()}: {file_comm_text(run.comm_source)}")
    if table and not no_tick:
        lines += ["", format_table(timeline, style, width=width or None)]
    lines += [
        "",
        f"makespan      {exact_number(timeline.makespan)} {unit}" + ("" if no_tick else f" ({ticks} ticks)"),
        f"bubble ratio  {timeline.bubble_ratio:.4f}  (convention {metrics['bubble_convention']})",
    ]
    busy, idle, peaks = metrics["busy"], metrics["idle"], metrics["peak_activations"]
    # bytes as GiB, as verify and the memory line print them (docs/memory.md), told apart
    in_bytes = metrics["memory_unit"] == "bytes"
    peak_texts = format_apart(peaks, "bytes") if in_bytes else [exact_number(x) for x in peaks]
    rows = [
        [
            d,
            exact_number(busy[d]),
            exact_number(idle[d]),
            f"{100 * idle[d] / timeline.makespan:.1f}" if timeline.makespan else "-",
            peak_texts[d],
        ]
        for d in range(schedule.p)
    ]
    peak_head = "peak activations" + ("" if in_bytes else f" ({metrics['memory_unit']})")
    headers = ["device", f"busy ({unit})", f"idle ({unit})", "idle %", peak_head]
    lines += ["", tabulate(rows, headers=headers, tablefmt="simple", stralign="right", disable_numparse=True)]
    lines += ["", _formula_text(run.formula, timeline)]
    emb = run.embedded
    if emb is not None:
        if not emb["checked"]:
            lines.append(f"\ntable in the file: not compared ({emb['why']})")
        elif emb["matches"]:
            lines.append("\ntable in the file: identical to the slot engine's table")
        else:
            hint = " (give --costs matching the table's op lengths)" if run.text_table else ""
            tail = ""
            if "drawn_break" in emb:  # no --costs makes such a drawing the engine's
                hint, tail = "", f"; {emb['drawn_break']}"
            lines.append(
                f"\ntable in the file: DIFFERS from the slot engine's table{hint}: "
                f"{difference_text(emb['first_difference'])}{tail}"
            )
    return "\n".join(lines)


def formula_contradicted(run: TableRun) -> bool:
    """Whether the table contradicts a claim of its formula (an exact value differs or a bound
    fails).

    Example:
        >>> from ppverify.schedules import build
        >>> formula_contradicted(time_table(ScheduleDocument(build("gpipe", p=2, m=2))))
        False
    """
    f = run.formula
    return f is not None and "agrees" in f and False in f["agrees"].values()


def _formula_text(formula: dict[str, Any] | None, timeline: Timeline) -> str:
    if formula is None:
        return "formula       none (no closed form registered for this schedule)"
    if "unavailable" in formula:
        return f"formula       not evaluated: {formula['unavailable']}"

    def verdict(k: str) -> str:
        ok, kind = formula["agrees"][k], formula["kinds"][k]
        if ok is None:
            return "not given"
        if kind == "exact":
            return "equal (exact)" if ok else "DIFFERS (claimed exact)"
        return f"{kind} holds" if ok else f"{kind} VIOLATED"

    peaks = formula["peak_activations"]
    head = (
        f"formula       {'exact' if formula['exact'] else 'partly a bound'}; conditions: {formula['conditions'] or '-'}"
        + (f"; source: {formula['source']}" if formula["source"] else "")
    )
    rows = [
        ["makespan", exact_number(formula["makespan"]), exact_number(timeline.makespan), verdict("makespan")],
        [
            "bubble ratio",
            fmt_number(formula["bubble_ratio"]),
            fmt_number(timeline.bubble_ratio),
            verdict("bubble_ratio"),
        ],
        [
            "peak activations",
            " ".join(exact_number(x) for x in peaks) if peaks else "-",
            " ".join(exact_number(x) for x in shown_peaks(timeline)),
            verdict("peak_activations"),
        ],
    ]
    grid = tabulate(
        rows, headers=["metric", "formula", "table", "formula vs table"], tablefmt="simple", disable_numparse=True
    )
    return head + "\n" + grid


def file_formula(res: TableRun) -> TableRun:
    """``res`` with its formula set aside when the file's schedule is not what its family builds
    (a file saved from a family whose programs were edited into another order): the formula is
    about the family's order, so a difference is no contradiction of it.

    Example:
        >>> from ppverify.io.json_format import ScheduleDocument
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=2)
        >>> edited = dataclasses.replace(s, family="1f1b")  # GPipe's programs under 1F1B's name
        >>> file_formula(time_table(ScheduleDocument(edited))).formula["unavailable"]  # doctest: +ELLIPSIS
        "the file's schedule is not 1f1b's: its programs are not 1f1b's at p=2 m=2 (device 1, action 1: 1F1 where 1f1b runs 1B0); the family's formula does not apply"
    """
    from ..schedules.family_checks import family_mismatch

    if res.formula is None or "unavailable" in res.formula:
        return res
    why = family_mismatch(res.doc.schedule)
    if why is None:
        return res
    name = res.doc.schedule.family
    text = f"the file's schedule is not {name}'s: {why}; the family's formula does not apply"
    return dataclasses.replace(res, formula={"unavailable": text})
