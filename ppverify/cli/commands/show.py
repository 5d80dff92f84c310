"""``ppverify show FAMILY|FILE``: a schedule's idealized table and its metrics.

Prints the schedule's description and placement, the ``slot`` table (paper layout or PyTorch's
step x rank grid), the makespan, the bubble ratio with its convention, per-device busy/idle time
and peak activations, and, when the family has a closed form, the formula's values and whether the
table agrees. ``--json`` prints the same as one JSON object; ``--save`` writes the schedule (with
its costs and table) as a ppverify JSON file that ``show`` and every other command read back.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

from ...comm import FixedDelay
from ...costs import CostModel, complete_costs, parse_costs
from ...engines.table import MAX_RENDER_TICKS
from ...errors import ParameterError, ScheduleFileError
from ...io.json_format import ScheduleDocument, TableGrid, save_json
from ...io.table_text import STYLES, timeline_table
from ...schedule import Schedule
from ...timeline import Timeline
from .. import Command
from ..common import add_cost_arguments, add_schedule_arguments, check_nonnegative, print_json

#: relative tolerance when comparing a formula with the table (costs are rationals in floats)
_TOL = 1e-9


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule source, costs, ``--style``, ``--json``, ``--save``, ``--no-table``."""
    add_schedule_arguments(parser)
    add_cost_arguments(parser)
    parser.add_argument(
        "--style",
        choices=STYLES,
        default="paper",
        help="table layout: paper (device x tick) or torch (PyTorch's step x rank grid)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument(
        "--save",
        metavar="OUT.json",
        default=None,
        help="also write the schedule, its costs and its table as a ppverify JSON file",
    )
    parser.add_argument("--no-table", action="store_true", help="print the metrics only")
    parser.add_argument(
        "--width",
        type=int,
        default=None,
        metavar="COLUMNS",
        help="wrap a wider paper table into blocks of ticks that fit (default: the terminal's "
        "width, 100 when unknown; 0: never wrap)",
    )
    parser.add_argument(
        "--placement",
        default=None,
        help="for a text table (.txt): where its stages live: linear (default), loop "
        "(with --v), v, wave (with --waves), bidirectional (with --offset)",
    )


#: suffixes read as text tables (paper layout or PyTorch's printed grid)
TABLE_SUFFIXES = (".txt", ".table")


def _table_placement(args: argparse.Namespace, p: int):
    """The placement a text table is read with (``--placement``, default linear over its rows)."""
    from ...placement import NAMED

    name = args.placement or "linear"
    if name not in NAMED:
        raise ParameterError("placement", name, f"expected one of {', '.join(NAMED)}")
    extra = {"loop": ("v", 2), "wave": ("waves", 1), "bidirectional": ("offset", 0)}.get(name)
    if extra is None:
        return NAMED[name](p)
    value = getattr(args, f"fam_{extra[0]}", None)
    return NAMED[name](p, extra[1] if value is None else value)


def _document(args: argparse.Namespace) -> ScheduleDocument:
    """The schedule: built from a family, or read from a file (a ppverify JSON file brings its
    costs and table along; a text table is read with ``--placement`` and ``-m``)."""
    from ...io import looks_like_file
    from ...io.json_format import read_json
    from ...io.table_text import read_text_table, schedule_from_programs
    from ..common import schedule_from_args

    suffix = Path(args.schedule).suffix.lower()
    if suffix in TABLE_SUFFIXES:
        from ...files import read_text

        path = Path(args.schedule)
        text = read_text(path)  # as every reader: size, encoding and byte-order mark alike
        programs, cells = read_text_table(text, str(path))
        placement = _table_placement(args, len(programs)) if programs else None
        schedule = schedule_from_programs(programs, placement, args.m, None, "table", {"file": path.name}, str(path))
        return ScheduleDocument(schedule, table=cells)
    if looks_like_file(args.schedule) and suffix == ".json":
        return read_json(args.schedule)
    if args.placement:
        raise ParameterError(
            "placement",
            args.placement,
            "only a text table (.txt) takes --placement; families and schedule files carry their own",
        )
    return ScheduleDocument(schedule_from_args(args))


#: the formula's costs: a per-share dict, None for unit slots, or _UNKNOWN when the costs are not
#: uniform abstract costs (a preset, a hand-written cost model)
_UNKNOWN = "unknown"


def _costs(args: argparse.Namespace, doc: ScheduleDocument) -> tuple[CostModel, Any]:
    """The cost model to time with, and the costs a formula takes (see ``_UNKNOWN``)."""
    schedule = doc.schedule
    if args.costs:
        given = complete_costs(parse_costs(args.costs))
        return CostModel.abstract(schedule.placement, **given), given
    if doc.costs is not None:
        if doc.costs.num_stages != schedule.num_stages:
            raise ScheduleFileError(
                args.schedule,
                "costs",
                f"describes {doc.costs.num_stages} stages; the placement has {schedule.num_stages}",
            )
        if doc.costs == CostModel.unit(schedule.placement):
            return doc.costs, None
        try:  # abstract costs carry their per-share values in the label (F=1,B=2,I=1,W=1)
            given = complete_costs(parse_costs(doc.costs.label))
        except ParameterError:
            return doc.costs, _UNKNOWN
        if doc.costs != CostModel.abstract(schedule.placement, **given):
            return doc.costs, _UNKNOWN
        return doc.costs, given
    return CostModel.unit(schedule.placement), None


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
    from ...schedules import get_family

    try:
        fam = get_family(schedule.family)
    except ParameterError:
        return None  # a custom or table schedule: no family, no formula
    if fam.formula is None:
        return None
    if given == _UNKNOWN:
        return {"unavailable": "the costs are not uniform abstract costs per device share"}
    if timeline.info.get("charge_comm"):
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
    table = {
        "makespan": timeline.makespan,
        "bubble_ratio": timeline.bubble_ratio,
        "peak_activations": timeline.peak_memory().tolist(),
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


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    return (
        str(int(x))
        if float(x).is_integer()
        else f"{x:.{digits}g}"
        if abs(x) >= 10
        else f"{x:.{digits}f}".rstrip("0").rstrip(".")
    )


def _placement_text(schedule: Schedule) -> str:
    pl = schedule.placement
    pipes = "; ".join(f"pipe {i}: " + " ".join(map(str, mp)) for i, mp in enumerate(pl.maps))
    return (
        f"{pl.name}, {pl.num_pipes} pipe{'s' if pl.num_pipes > 1 else ''}, {pl.num_stages} stages on "
        f"{pl.p} devices (device of each stage, {pipes})"
    )


def _embedded_check(
    doc: ScheduleDocument, table: TableGrid, same_costs: bool, text_table: bool = False
) -> dict[str, Any] | None:
    """Whether a file's table equals the one the slot engine computes now. A JSON file's table is
    compared only under the file's own costs; a text table (which has no costs) always, cells only."""
    if doc.table is None:
        return None
    if not same_costs and not text_table:
        return {"checked": False, "why": "the costs differ from the file's (--costs/--comm-delay given)"}
    want, got = doc.table.cells, table.cells
    for d in range(max(len(want), len(got))):
        a = want[d] if d < len(want) else ()
        b = got[d] if d < len(got) else ()
        for t in range(max(len(a), len(b))):
            x = a[t] if t < len(a) else None
            y = b[t] if t < len(b) else None
            if x != y:
                return {
                    "checked": True,
                    "matches": False,
                    "first_difference": {"device": d, "tick": t, "file": x, "engine": y},
                }
    if not text_table and not _close(doc.table.tick, table.tick):
        return {"checked": True, "matches": False, "first_difference": {"tick_length": [doc.table.tick, table.tick]}}
    return {"checked": True, "matches": True}


def run(args: argparse.Namespace) -> int:
    """Build or load the schedule, time it as a table, print (or save) the result."""
    from ...engines import run as run_engine
    from ...engines.table import format_table

    check_nonnegative("comm-delay", args.comm_delay)
    doc = _document(args)
    schedule = doc.schedule
    costs, given = _costs(args, doc)
    comm_delay = args.comm_delay or 0.0
    if comm_delay:
        timeline = run_engine(schedule, costs, FixedDelay(comm_delay), "slot", charge_comm=True)
    else:
        timeline = run_engine(schedule, costs, semantics="slot")
    ticks = int(timeline.info["ticks"])
    # a cost model in seconds can make the tick tiny: time it, but do not build a giant grid
    grid = timeline_table(timeline) if ticks <= MAX_RENDER_TICKS else None
    formula = formula_report(schedule, given, timeline)
    text_table = Path(args.schedule).suffix.lower() in TABLE_SUFFIXES
    embedded = None if grid is None else _embedded_check(doc, grid, not args.costs and not comm_delay, text_table)
    metrics = timeline.metrics()
    if args.save:
        try:
            # a table timed with communication charged is not the file's costs' table: leave it out
            save_json(schedule, args.save, costs, None if comm_delay else grid, comment=doc.comment)
        except OSError as exc:
            raise ScheduleFileError(args.save, "", f"cannot write: {exc.strerror or exc}") from None
    if args.json:
        out = {
            **metrics,
            "family": schedule.family,
            "params": dict(schedule.params),
            "p": schedule.p,
            "m": schedule.m,
            "placement": schedule.placement.to_dict(),
            "costs": costs.label or "custom",
            "comm_delay_per_column": comm_delay,
            "tick": float(timeline.info["tick"]),
            "ticks": ticks,
            "formula": formula,
            "table": None if grid is None else [list(row) for row in grid.cells],
        }
        if embedded is not None:
            out["embedded_table"] = embedded
        if args.save:
            out["saved"] = str(args.save)
        print_json(out)
        return 0
    unit = timeline.time_unit
    lines = [
        f"schedule      {schedule.describe()}",
        f"placement     {_placement_text(schedule)}",
        f"costs         {costs.label or 'custom'} ({unit}; one table tick = {_fmt(timeline.info['tick'])} {unit})"
        + (f"; communication {_fmt(comm_delay)} charged per column" if comm_delay else ""),
    ]
    if doc.comment:
        lines.append(f"comment       {doc.comment}")
    print("\n".join(lines))
    if not args.no_table:
        print()
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns if args.width is None else args.width
        if width < 0:
            raise ParameterError("width", width, "must be >= 0 (0: never wrap)")
        print(format_table(timeline, args.style, width=width or None))
    print()
    print(f"makespan      {_fmt(timeline.makespan)} {unit} ({ticks} ticks)")
    print(f"bubble ratio  {timeline.bubble_ratio:.4f}  (convention {metrics['bubble_convention']})")
    busy, idle, peaks = metrics["busy"], metrics["idle"], metrics["peak_activations"]
    rows = [
        [
            d,
            _fmt(busy[d]),
            _fmt(idle[d]),
            f"{100 * idle[d] / timeline.makespan:.1f}" if timeline.makespan else "-",
            _fmt(peaks[d]),
        ]
        for d in range(schedule.p)
    ]
    print()
    print(
        tabulate(
            rows,
            headers=[
                "device",
                f"busy ({unit})",
                f"idle ({unit})",
                "idle %",
                f"peak activations ({metrics['memory_unit']})",
            ],
            tablefmt="simple",
            stralign="right",
            disable_numparse=True,
        )
    )
    _print_formula(formula, timeline)
    if embedded is not None:
        if not embedded["checked"]:
            print(f"\ntable in the file: not compared ({embedded['why']})")
        elif embedded["matches"]:
            print("\ntable in the file: identical to the slot engine's table")
        else:
            hint = " (give --costs matching the table's op lengths)" if text_table else ""
            print(f"\ntable in the file: DIFFERS from the slot engine's table{hint}: {embedded['first_difference']}")
    if args.save:
        print(f"\nsaved         {args.save}")
    return 0


def _print_formula(formula: dict[str, Any] | None, timeline: Timeline) -> None:
    print()
    if formula is None:
        print("formula       none (no closed form registered for this schedule)")
        return
    if "unavailable" in formula:
        print(f"formula       not evaluated: {formula['unavailable']}")
        return

    def verdict(k: str) -> str:
        ok, kind = formula["agrees"][k], formula["kinds"][k]
        if ok is None:
            return "not given"
        if kind == "exact":
            return "equal (exact)" if ok else "DIFFERS (claimed exact)"
        return f"{kind} holds" if ok else f"{kind} VIOLATED"

    peaks = formula["peak_activations"]
    print(
        f"formula       {'exact' if formula['exact'] else 'partly a bound'}; conditions: {formula['conditions'] or '-'}"
        + (f"; source: {formula['source']}" if formula["source"] else "")
    )
    rows = [
        ["makespan", _fmt(formula["makespan"]), _fmt(timeline.makespan), verdict("makespan")],
        ["bubble ratio", _fmt(formula["bubble_ratio"]), _fmt(timeline.bubble_ratio), verdict("bubble_ratio")],
        [
            "peak activations",
            " ".join(_fmt(x) for x in peaks) if peaks else "-",
            " ".join(_fmt(x) for x in timeline.peak_memory().tolist()),
            verdict("peak_activations"),
        ],
    ]
    print(
        tabulate(
            rows, headers=["metric", "formula", "table", "formula vs table"], tablefmt="simple", disable_numparse=True
        )
    )
    if False in formula["agrees"].values():
        print("note: the table contradicts the formula's claim (see 'formula vs table')", file=sys.stderr)


COMMAND = Command(
    "show",
    "print a schedule's idealized table and its metrics",
    add_arguments,
    run,
    description=(
        "Print a schedule's idealized (slot) table and its metrics: makespan, bubble ratio (idle/total),\n"
        "per-device busy/idle time and peak activations, and the family's closed form next to the table.\n"
        "FAMILY|FILE: a registered family (ppverify list), a ppverify JSON file, a PyTorch CSV, or a text\n"
        "table (.txt: the paper layout or PyTorch's printed step x rank grid; see --placement)."
    ),
)
