"""What a drawn table's cells say about its timing: the number of cells each kind of op spans
(a table ``show --costs F=1,B=2`` drew has every B over two cells), so that ``show TABLE.txt``
times the table as drawn, one tick per cell; and a difference between two grids in words.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from ..core.costs import CostModel
from ..core.ops import Op
from ..core.schedule import Schedule
from ..io.json_format import TableGrid


def drawn_widths(schedule: Schedule, table: TableGrid) -> dict[str, int] | None:
    """The cells each kind of op spans in ``table`` (``{"F": 1, "B": 2}``), or ``None`` when one
    kind is drawn over different numbers of cells or a cell holds something other than one op
    (an overlapped slot, a send or receive): no per-kind cost then reproduces the drawing.

    Example:
        >>> from ppverify.io.table_text import read_text_table, schedule_from_programs
        >>> progs, grid = read_text_table("tick 0 1 2 3\\ndev 0 0F0 0B0 0B0 .")
        >>> drawn_widths(schedule_from_programs(progs), grid)
        {'F': 1, 'B': 2}
    """
    widths: dict[str, set[int]] = {}
    for program, row in zip(schedule.programs, table.cells):
        ops = {str(a): a for a in program if isinstance(a, Op)}
        # an op is drawn in consecutive cells; the same op never twice, so a run is one op
        for label, run in itertools.groupby(row):
            if label is None:
                continue
            op = ops.get(label)
            if op is None:
                return None
            widths.setdefault(op.kind, set()).add(len(list(run)))
    if any(len(w) != 1 for w in widths.values()):
        return None
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
