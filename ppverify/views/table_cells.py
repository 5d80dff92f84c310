"""What a drawn table's cells say about its timing: the number of cells each kind of op spans
(a table ``show --costs F=1,B=2`` drew has every B over two cells), so that every command times
``TABLE.txt`` as drawn, one tick per cell; whether a file's table is the engine's and a difference
between two grids in words; and what ``show`` says of the communication it charges.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.dag import predecessors, split_pairs
from ..core.ops import Op, Overlap
from ..core.schedule import Schedule
from ..io.json_format import ScheduleDocument, TableGrid


def drawn_widths(schedule: Schedule, table: TableGrid) -> dict[str, int] | None:
    """The cells each kind of op spans in ``table`` (``{"F": 1, "B": 2}``), or ``None`` when one
    kind is drawn over different numbers of cells, a cell holds something other than an op or an
    overlapped slot (a send or receive), or a kind is drawn only inside overlapped slots: no
    per-kind cost then reproduces the drawing. An overlapped slot (DualPipe's ``0F3&3B5``) gives
    no length: the engines time it from its two ops' (and the overlap factor).

    Example:
        >>> from ppverify.io.table_text import read_text_table, schedule_from_programs
        >>> progs, grid = read_text_table("tick 0 1 2 3\\ndev 0 0F0 0B0 0B0 .")
        >>> drawn_widths(schedule_from_programs(progs), grid)
        {'F': 1, 'B': 2}
    """
    widths: dict[str, set[int]] = {}
    overlapped: set[str] = set()
    for program, row in zip(schedule.programs, table.cells):
        ops = {str(a): a for a in program if isinstance(a, Op)}
        pairs = {str(a): a for a in program if isinstance(a, Overlap)}
        # an op is drawn in consecutive cells; the same op never twice, so a run is one op
        for label, run in itertools.groupby(row):
            if label is None:
                continue
            if label in pairs:  # an overlapped slot's length is the engine's (both ops, overlap)
                overlapped.update(op.kind for op in pairs[label].ops)
                continue
            op = ops.get(label)
            if op is None:
                return None
            widths.setdefault(op.kind, set()).add(len(list(run)))
    if any(len(w) != 1 for w in widths.values()) or not overlapped <= set(widths):
        return None  # a kind drawn only inside overlapped slots has no length of its own
    return {k: next(iter(w)) for k, w in widths.items()}


def drawn_costs(schedule: Schedule, table: TableGrid) -> CostModel:
    """The cost model that times ``table`` as drawn: each op as many ticks as it has cells; unit
    slots, labelled as an assumption, when :func:`drawn_widths` reads no length per kind.

    Example:
        >>> from ppverify.io.table_text import read_text_table, schedule_from_programs
        >>> progs, grid = read_text_table("tick 0 1 2 3\\ndev 0 0F0 0B0 0B0 .")
        >>> costs = drawn_costs(schedule_from_programs(progs), grid)
        >>> costs.duration["B"], costs.label
        ((2.0,), 'F=1,B=2 (cells as drawn)')
    """
    unit = CostModel.unit(schedule.placement)
    widths = drawn_widths(schedule, table)
    if widths is None:  # said in the costs line: the timing is not the drawing's
        return dataclasses.replace(unit, label="unit, assumed (the cells give no one length per kind of op)")
    if all(w == 1 for w in widths.values()):
        return unit
    share = schedule.placement.share_per_stage
    duration = dict(unit.duration)
    for kind, w in widths.items():
        duration[kind] = (share * w,) * schedule.num_stages
    order = sorted(widths, key=lambda k: "FBIW".find(k) if k in "FBIW" else 9)
    label = ",".join(f"{k}={widths[k]:g}" for k in order) + " (cells as drawn)"
    return dataclasses.replace(unit, duration=duration, label=label)


def drawn_break(schedule: Schedule, table: TableGrid) -> str | None:
    """Where a drawn table's times break a dependency: the first op (by its drawn start) drawn
    before one of its inputs ends, in words; ``None`` when every op starts at or after the end of
    each input it needs. A table timed as drawn that still differs from the slot engine's is
    either one of these or drawn later than the engine starts its ops.

    Example:
        >>> from ppverify.io.table_text import read_text_table, schedule_from_programs
        >>> # 1F0 starts with 0F0 (which ends at 1); 0B0 at tick 1 needs 1B0, which ends at 2
        >>> progs, grid = read_text_table("tick 0 1\\ndev 0 0F0 0B0\\ndev 1 1F0 1B0")
        >>> drawn_break(schedule_from_programs(progs), grid)
        'the drawn times break a dependency: 1F0 at tick 0 needs 0F0, which ends at tick 1 (1 more broken)'
    """
    span: dict[Op, tuple[int, int]] = {}  # op -> (first tick, tick after its last)
    for program, row in zip(schedule.programs, table.cells):
        held = {str(a): a.ops if isinstance(a, Overlap) else (a,) for a in program if isinstance(a, Op | Overlap)}
        t = 0
        for label, run in itertools.groupby(row):
            n = len(list(run))
            for op in held.get(label or "", ()):
                span[op] = (t, t + n)
            t += n
    split = split_pairs(schedule)
    broken = sorted(
        (start, str(op), str(q), span[q][1])
        for op, (start, _) in span.items()
        for q, _ in predecessors(op, schedule.num_stages, split)
        if q in span and start < span[q][1]
    )
    if not broken:
        return None
    start, op_text, q_text, end = broken[0]
    more = f" ({len(broken) - 1} more broken)" if len(broken) > 1 else ""
    return (
        f"the drawn times break a dependency: {op_text} at tick {start} needs {q_text}, which ends at tick {end}{more}"
    )


def embedded_check(
    doc: ScheduleDocument, table: TableGrid, same_costs: bool, text_table: bool = False
) -> dict[str, Any] | None:
    """Whether a file's table equals ``table`` (the one the slot engine computes now). A JSON
    file's table is compared only under the file's own costs (``same_costs``); a text table (which
    has no costs) always, cells only. ``None`` when the file has no table.

    Example:
        >>> from ppverify.schedules import build
        >>> doc = ScheduleDocument(build("gpipe", p=1, m=1), table=TableGrid(1.0, (("0F0", "0B0"),)))
        >>> embedded_check(doc, TableGrid(1.0, (("0F0", None),)), True)["first_difference"]
        {'device': 0, 'tick': 1, 'file': '0B0', 'engine': None}
    """
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
    if not text_table and not math.isclose(doc.table.tick, table.tick, rel_tol=1e-9, abs_tol=1e-9):
        return {"checked": True, "matches": False, "first_difference": {"tick_length": [doc.table.tick, table.tick]}}
    return {"checked": True, "matches": True}


def comm_charged_text(comm: CommModel | None, delay: float, source: str) -> str:
    """The tail of ``show``'s costs line: the communication charged per column (``delay``, else
    the system ``comm`` names) and, ``source`` ``"file"``, that it is the file's.

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> comm_charged_text(FixedDelay(1.0), 1.0, "file"), comm_charged_text(None, 0.0, "")
        ("; communication 1 charged per column (the file's)", '')
    """
    if comm is None:
        return ""
    what = f"{delay:g}" if delay else f"of system {getattr(comm, 'name', 'custom')}"
    return f"; communication {what} charged per column" + (" (the file's)" if source == "file" else "")


def file_comm_text(source: str) -> str:
    """What became of a file's stored communication in ``show``'s table, by where the charged
    communication came from (``TableRun.comm_source``).

    Example:
        >>> file_comm_text("given")
        'replaced by --comm-delay'
    """
    if source == "file":
        return "charged per column, as simulate --semantics slot charges it (--comm-delay replaces it)"
    if source == "given":
        return "replaced by --comm-delay"
    # charged_comm leaves out only a system beside --costs
    return "not charged: a system times transfers in seconds, which --costs are not (drop --costs to charge it)"


def difference_text(diff: dict[str, Any]) -> str:
    """:func:`~ppverify.views.table_report.embedded_check`'s first difference in words.

    Example:
        >>> difference_text({"device": 0, "tick": 11, "file": "0B0", "engine": None})
        'device 0, tick 11: the file has 0B0, the slot engine an idle cell'
        >>> difference_text({"tick_length": [1.0, 2.0]})
        "the file's tick is 1, the slot engine's 2"
    """
    if "tick_length" in diff:
        mine, engine = diff["tick_length"]
        return f"the file's tick is {mine:g}, the slot engine's {engine:g}"
    file, engine = (x or "an idle cell" for x in (diff["file"], diff["engine"]))
    return f"device {diff['device']}, tick {diff['tick']}: the file has {file}, the slot engine {engine}"
