"""The ``slot`` engine: the idealized schedule table.

Costs become integer ticks (the tick is the greatest common divisor of all op durations); every
device runs its program in order and an op occupies as many consecutive cells as it has ticks,
starting as soon as its device and inputs are free. Communication is not a delay here: with
``charge_comm=True`` it is charged per column, i.e. every op with a cross-device input or output
is lengthened by that transfer's time (Chimera's performance model; GPipe and 1F1B then tie at
``(m+p-1)(tF+tB+2c)``). Explicit idle slots (``None``) in a program each take one tick.

The table's grid and its text form (both layouts, written and read) belong to the file format,
:mod:`ppverify.io.table_text`; this module computes a schedule's grid and hands it over.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from ..core.closed_form import exact_cost
from ..core.comm import NO_COMM, CommModel
from ..core.costs import CostModel
from ..core.dag import build_dag
from ..core.errors import DeadlockError
from ..core.ops import Action, Op, Overlap, format_action
from ..core.program_order import list_schedule_flat, op_durations
from ..core.schedule import Schedule
from ..core.send_gates import gated_pred
from ..core.timeline import Timeline, TimelineInfo
from ..io.table_text import TableGrid, format_grid
from .core import _waits

#: a table longer than this many ticks has no common tick worth the name (durations in seconds
#: whose gcd is a float rounding's: 10**22 ticks for a 0.15 s step)
NO_COMMON_TICK = 10**9
#: an op longer than this many ticks is not counted in ticks (no float holds a larger count
#: exactly): the table is timed in the durations' unit and has no common tick
MAX_COUNTED_TICKS = 2**53
#: tables wider than this many ticks are timed but not rendered cell by cell
MAX_RENDER_TICKS = 20_000


def _as_fraction(x: float, kind: str = "op") -> Fraction:
    # relative to the duration's size (exact_cost): a denominator limited to 10**6 made 1e-7 a 0 tick
    return exact_cost(kind, x)


def slot_timeline(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel = NO_COMM,
    charge_comm: bool = False,
) -> Timeline:
    """Time a schedule as an idealized table (see module doc).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.costs import CostModel
        >>> s = build("gpipe", p=4, m=4)
        >>> slot_timeline(s, CostModel.abstract(s.placement, F=1, B=2)).makespan
        21.0
    """
    dag = build_dag(schedule)
    dur = op_durations(dag, costs, comm, charge_comm)
    # a step has a handful of distinct durations: each is made a fraction once, and the tick is
    # their gcd (per op, the fractions cost 150 us: minutes for show hanayo --waves 100000)
    kinds: dict[float, str] = {}
    for x, op in zip(dur, dag.ops):
        kinds.setdefault(x, op.kind)  # only to name the op kind of a duration refused
    exact = {x: _as_fraction(x, kinds[x]) for x in kinds}
    fracs = [exact[x] for x in dur] or [Fraction(1)]
    tick = Fraction(0)
    for f in set(fracs):
        tick = (
            Fraction(
                math.gcd(tick.numerator * f.denominator, f.numerator * tick.denominator),
                tick.denominator * f.denominator,
            )
            if tick
            else f
        )
    tick = tick or Fraction(1)  # every op of length 0: any tick counts them 0
    per_tick = {f: int(f / tick) for f in set(fracs)}
    # a duration of more than 2**53 ticks (--costs F=1e-308,B=1: 1e308 ticks) is counted in
    # ticks no float holds exactly, and past 1e308 in none at all: such a table has no common tick
    # (it is never drawn, as NO_COMMON_TICK says), and the ops are timed in the durations' own
    # unit instead, an idle slot taking one tick of it
    counted = max(per_tick.values(), default=0) <= MAX_COUNTED_TICKS
    ticks: list[float] = [per_tick[f] for f in fracs] if counted else list(dur)
    gated = gated_pred(dag)  # a file's SEND posted after a later op than its producer waits for it
    timed = dag if gated is None else dataclasses.replace(dag, pred=gated)
    # list_schedule's engine, so that a deadlock is worded by the engines (an overlapped slot, a late SEND)
    p0, p1 = [pr[0] for pr in timed.pred], [pr[1] for pr in timed.pred]
    idle = 1.0 if counted else float(tick)
    start, end, ptr, done = list_schedule_flat(p0, p1, None, None, ticks, dag.fused, dag.idle_before, dag.offsets, idle)
    if ptr is not None and done is not None:
        raise DeadlockError(_waits(dag, ptr, done, timed.pred))
    start, end = [float(x) for x in start], [float(x) for x in end]
    tk = float(tick)
    if counted:
        scale, length = tk, int(max(end, default=0))
    else:
        # the table's length in ticks, exact (an integer past any float): over NO_COMMON_TICK
        scale, length = 1.0, max(math.ceil(Fraction(max(end, default=0.0)) / tick), NO_COMMON_TICK + 1)
    return Timeline(
        schedule,
        costs,
        "slot",
        dag.ops,
        np.asarray(dag.device, dtype=np.int64),
        np.asarray(start) * scale,
        np.asarray(end) * scale,
        info=TimelineInfo(
            tick=tk,
            ticks=length,
            charge_comm=charge_comm,
            start_tick=start if counted else None,
            end_tick=end if counted else None,
            # the system's device memory, as the other engines record it (simulate.finish): the
            # report's memory panel draws its capacity line and OOM keys from it
            memory_capacity=getattr(comm, "memory_bytes", None),
        ),
    )


def table_grid(timeline: Timeline) -> list[list[Op | None]]:
    """Device x tick grid of a ``slot`` timeline: the op occupying each cell, ``None`` if idle.

    An overlapped slot's cells hold its first op (see :func:`table_actions` for the whole slot).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> g = table_grid(run(build("gpipe", p=2, m=1), semantics="slot"))
        >>> [[str(c) if c else "." for c in row] for row in g]
        [['0F0', '.', '.', '0B0'], ['.', '1F0', '1B0', '.']]
    """
    if timeline.semantics != "slot":
        raise ValueError("table_grid needs a slot timeline (run(..., semantics='slot'))")
    T, starts, ends = timeline.info.ticks, timeline.info.start_tick, timeline.info.end_tick
    if T is not None and (T > NO_COMMON_TICK or starts is None):
        raise ValueError(f"the durations share no common tick a table can draw ({T} ticks)")
    assert T is not None and starts is not None and ends is not None  # every slot timeline has them
    grid: list[list[Op | None]] = [[None] * T for _ in range(timeline.p)]
    for op, d, s, e in zip(timeline.ops, timeline.device.tolist(), starts, ends):
        for t in range(int(s), int(e)):
            cur = grid[d][t]
            # overlapped ops share cells: keep the first, the text form shows the pair elsewhere
            if cur is None:
                grid[d][t] = op
    return grid


def table_actions(timeline: Timeline) -> list[list[Action]]:
    """Device x tick grid of a ``slot`` timeline holding the *action* in each cell: the op, or
    the whole :class:`~ppverify.core.ops.Overlap` for an overlapped slot; ``None`` if idle.

    Example:
        >>> from ppverify.core.ops import Overlap
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.schedule import Schedule
        >>> from ppverify.engines import run
        >>> s = Schedule(linear(1), 2, ((Op("F", 0, 0), Overlap((Op("F", 0, 1), Op("B", 0, 0))), Op("B", 0, 1)),), (0, 0))
        >>> [str(a) for a in table_actions(run(s, semantics="slot"))[0]]
        ['0F0', '(0F1;0B0)OVERLAP_F_B', '(0F1;0B0)OVERLAP_F_B', '0B1']
    """
    grid: list[list[Action]] = [list(row) for row in table_grid(timeline)]
    # the action each op belongs to, read from the programs (ops are unique per schedule)
    slot_of: dict[Op, Overlap] = {}
    for prog in timeline.schedule.programs:
        for a in prog:
            if type(a) is Overlap:
                for op in a.ops:
                    slot_of[op] = a
    if slot_of:
        for row in grid:
            for t, c in enumerate(row):
                if c is not None and c in slot_of:
                    row[t] = slot_of[c]
    return grid


def format_table(
    timeline: Timeline, style: str = "paper", max_ticks: int = MAX_RENDER_TICKS, width: int | None = None
) -> str:
    """Render a ``slot`` timeline as text with :func:`ppverify.io.table_text.format_grid` (which
    also parses both layouts back); a table wider than ``max_ticks`` is not rendered.

    * ``paper``: one row per device, one column per tick; an action fills every cell it occupies,
      ``.`` marks idle cells. With ``width`` (a terminal's columns) a wider table is cut into
      blocks of consecutive ticks, each with its own ``tick`` header and columns only as wide as
      that block's cells. An overlapped slot reads ``0F3&3B5`` (PyTorch's text,
      ``(0F3;3B5)OVERLAP_F_B``, in the ``torch`` layout).
    * ``torch``: PyTorch's step x rank grid, laid out like
      ``torch.distributed.pipelining.schedules._format_pipeline_order`` (``Step NN:`` rows, ``Rank
      r`` columns, empty cells idle); an action is written at its first tick and ``~`` marks the
      further ticks it occupies (with unit costs there are none, as in PyTorch).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> tl = run(build("gpipe", p=2, m=1), semantics="slot")
        >>> print(format_table(tl))
        tick    0   1   2   3
        dev 0 0F0   .   . 0B0
        dev 1   . 1F0 1B0   .
        >>> print(format_table(tl, "torch"))
                Rank 0 Rank 1
        Step 0: 0F0
        Step 1:        1F0
        Step 2:        1B0
        Step 3: 0B0
    """
    T = timeline.info.ticks or 0  # None off a slot timeline: table_actions below says so
    if T > NO_COMMON_TICK:
        return "(no table: the durations share no common tick a table can draw; unit costs, e.g. --costs F=1,B=2, give one)"
    if max_ticks < T:
        return f"(table of {T} ticks not rendered; limit {max_ticks})"
    grid = timeline_table(timeline)
    # an action starts where one of its ops starts (not merely where the text changes)
    starts = {(d, int(s)) for d, s in zip(timeline.device.tolist(), timeline.info.start_tick or ())}
    return format_grid(grid, style, width, starts)


def timeline_table(timeline: Timeline) -> TableGrid:
    """The device x tick grid of a ``slot`` timeline as action text (``None`` idle).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> timeline_table(run(build("gpipe", p=2, m=1), semantics="slot")).cells
        (('0F0', None, None, '0B0'), (None, '1F0', '1B0', None))
    """
    grid = table_actions(timeline)
    return TableGrid(
        float(timeline.info.tick or 0.0),
        tuple(tuple(None if a is None else format_action(a) for a in row) for row in grid),
    )


def table_grid_of(schedule: Schedule, costs: CostModel | None = None) -> TableGrid:
    """Run the slot engine (unit costs when ``costs`` is None) and return its grid.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=1, m=1)
        >>> table_grid_of(s, CostModel.abstract(s.placement, F=1, B=2)).cells
        (('0F0', '0B0', '0B0'),)
    """
    return timeline_table(slot_timeline(schedule, costs or CostModel.unit(schedule.placement)))


def format_schedule_table(schedule: Schedule, costs: CostModel | None = None, style: str = "paper") -> str:
    """Render a schedule's slot table (unit costs when ``costs`` is None) in one of
    :data:`~ppverify.io.table_text.STYLES`.

    Example:
        >>> from ppverify.schedules import build
        >>> print(format_schedule_table(build("1f1b", p=2, m=2), style="torch"))
                Rank 0 Rank 1
        Step 0: 0F0
        Step 1: 0F1    1F0
        Step 2:        1B0
        Step 3: 0B0    1F1
        Step 4:        1B1
        Step 5: 0B1
    """
    return format_table(slot_timeline(schedule, costs or CostModel.unit(schedule.placement)), style)


__all__ = [
    "MAX_RENDER_TICKS",
    "format_schedule_table",
    "format_table",
    "op_durations",
    "slot_timeline",
    "table_actions",
    "table_grid",
    "table_grid_of",
    "timeline_table",
]
