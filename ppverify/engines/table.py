"""The ``slot`` engine: the idealized schedule table.

Costs become integer ticks (the tick is the greatest common divisor of all op durations); every
device runs its program in order and an op occupies as many consecutive cells as it has ticks,
starting as soon as its device and inputs are free. Communication is not a delay here: with
``charge_comm=True`` it is charged per column, i.e. every op with a cross-device input or output
is lengthened by that transfer's time (Chimera's performance model; GPipe and 1F1B then tie at
``(m+p-1)(tF+tB+2c)``). Explicit idle slots (``None``) in a program each take one tick.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..comm import NO_COMM, CommModel
from ..costs import CostModel
from ..dag import build_dag
from ..ops import Action, Op, Overlap
from ..schedule import Schedule
from ..timeline import Timeline
from .core import list_schedule

#: tables wider than this many ticks are timed but not rendered cell by cell
MAX_RENDER_TICKS = 20_000


def _as_fraction(x: float) -> Fraction:
    return Fraction(x).limit_denominator(10**6)


def op_durations(dag, costs: CostModel, comm: CommModel = NO_COMM, charge_comm: bool = False) -> list[float]:
    """Duration of every op position of ``dag`` under ``costs``; an overlapped slot's length sits
    on its first op; with ``charge_comm`` each op pays its slowest cross-device transfer.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.dag import build_dag
        >>> from ppverify.comm import FixedDelay
        >>> dag = build_dag(build("gpipe", p=2, m=1))
        >>> op_durations(dag, CostModel.unit(dag.schedule.placement), FixedDelay(0.5), True)
        [1.5, 1.5, 1.5, 1.5]
    """
    dur = [costs.op_duration(op) for op in dag.ops]
    if charge_comm:
        charge = [0.0] * len(dur)
        bb = costs.boundary_bytes
        for i, op in enumerate(dag.ops):
            for k in (0, 1):
                q = dag.pred[i][k]
                if q >= 0 and dag.cross[i][k]:
                    lo = min(op.stage, dag.ops[q].stage)
                    t = comm.transfer_time(dag.device[q], dag.device[i], bb[lo] if lo < len(bb) else 0.0)
                    charge[i] = max(charge[i], t)
                    charge[q] = max(charge[q], t)
        dur = [a + b for a, b in zip(dur, charge)]
    # an overlapped slot lasts overlap * (sum of its ops), stored on its first op
    i = 0
    while i < len(dur):
        j = i
        while dag.fused[j]:
            j += 1
        if j > i:
            dur[i] = costs.overlap * sum(dur[i : j + 1])
            for k in range(i + 1, j + 1):
                dur[k] = dur[i]
        i = j + 1
    return dur


def slot_timeline(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel = NO_COMM,
    charge_comm: bool = False,
) -> Timeline:
    """Time a schedule as an idealized table (see module doc).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.costs import CostModel
        >>> s = build("gpipe", p=4, m=4)
        >>> slot_timeline(s, CostModel.abstract(s.placement, F=1, B=2)).makespan
        21.0
    """
    dag = build_dag(schedule)
    dur = op_durations(dag, costs, comm, charge_comm)
    fracs = [_as_fraction(x) for x in dur] or [Fraction(1)]
    tick = Fraction(0)
    for f in fracs:
        tick = (
            Fraction(
                math.gcd(tick.numerator * f.denominator, f.numerator * tick.denominator),
                tick.denominator * f.denominator,
            )
            if tick
            else f
        )
    ticks = [int(f / tick) for f in fracs]
    start, end = list_schedule(dag, ticks, None, idle_tick=1.0)
    tk = float(tick)
    return Timeline(
        schedule,
        costs,
        "slot",
        dag.ops,
        np.asarray(dag.device, dtype=np.int64),
        np.asarray(start) * tk,
        np.asarray(end) * tk,
        info={
            "tick": tk,
            "ticks": int(max(end, default=0)),
            "charge_comm": charge_comm,
            "start_tick": start,
            "end_tick": end,
        },
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
    T = timeline.info["ticks"]
    grid: list[list[Op | None]] = [[None] * T for _ in range(timeline.p)]
    for op, d, s, e in zip(
        timeline.ops, timeline.device.tolist(), timeline.info["start_tick"], timeline.info["end_tick"]
    ):
        for t in range(int(s), int(e)):
            cur = grid[d][t]
            # overlapped ops share cells: keep the first, the text form shows the pair elsewhere
            if cur is None:
                grid[d][t] = op
    return grid


def table_actions(timeline: Timeline) -> list[list[Action]]:
    """Device x tick grid of a ``slot`` timeline holding the *action* in each cell: the op, or
    the whole :class:`~ppverify.ops.Overlap` for an overlapped slot; ``None`` if idle.

    Example:
        >>> from ppverify.ops import Overlap
        >>> from ppverify.placement import linear
        >>> from ppverify.schedule import Schedule
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


def _cell_width(cells: list[list[str]], floor: int) -> int:
    return max([floor] + [len(c) for row in cells for c in row])


def _block_width(cells: list[list[str]], t0: int, t1: int) -> int:
    return max([len(str(t1 - 1))] + [len(c) for row in cells for c in row[t0:t1]])


def _paper_block(cells: list[list[str]], t0: int, t1: int, w: int, lw: int) -> str:
    lines = [f"{'tick':<{lw}}" + " ".join(f"{t:>{w}}" for t in range(t0, t1))]
    for d, row in enumerate(cells):
        lines.append(f"{'dev ' + str(d):<{lw}}" + " ".join(f"{c:>{w}}" for c in row[t0:t1]))
    return "\n".join(x.rstrip() for x in lines)


def format_table(
    timeline: Timeline, style: str = "paper", max_ticks: int = MAX_RENDER_TICKS, width: int | None = None
) -> str:
    """Render a ``slot`` timeline as text (:mod:`ppverify.io.table_text` parses both back).

    * ``paper``: one row per device, one column per tick; an action fills every cell it occupies,
      ``.`` marks idle cells. With ``width`` (a terminal's columns) a wider table is cut into
      blocks of consecutive ticks, each with its own ``tick`` header and columns only as wide as
      that block's cells (an overlapped slot's 20-character text widens its own block only).
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
    T = timeline.info["ticks"]
    if max_ticks < T:
        return f"(table of {T} ticks not rendered; limit {max_ticks})"
    grid = table_actions(timeline)
    if style == "paper":
        cells = [[str(c) if c is not None else "." for c in row] for row in grid]
        # label column wide enough for "dev 10" so that cells never touch the label
        lw = max(len("tick"), len(f"dev {timeline.p - 1}")) + 1
        if width is None:
            return _paper_block(cells, 0, T, _cell_width(cells, len(str(T - 1))), lw)
        blocks, t0 = [], 0
        while t0 < T:
            # grow the block while its widest cell still lets every column fit in ``width``
            t1, w = t0 + 1, _block_width(cells, t0, t0 + 1)
            while t1 < T:
                w2 = max(w, _block_width(cells, t1, t1 + 1))
                if lw + (t1 + 1 - t0) * (w2 + 1) - 1 > width:
                    break
                t1, w = t1 + 1, w2
            blocks.append(_paper_block(cells, t0, t1, w, lw))
            t0 = t1
        return "\n\n".join(blocks)
    if style == "torch":
        starts = {(d, int(s)) for d, s in zip(timeline.device.tolist(), timeline.info["start_tick"])}
        rows = []
        for t in range(T):
            row = []
            for d in range(timeline.p):
                c = grid[d][t]
                row.append("" if c is None else (str(c) if (d, t) in starts else "~"))
            rows.append(row)
        w = _cell_width(rows, len(f"Rank {timeline.p - 1}"))
        labels = ["Step " + str(t).zfill(len(str(T - 1))) for t in range(T)]
        lab = len(labels[0]) if labels else len("Step 0")
        lines = [" " * (lab + 2) + " ".join(f"{'Rank ' + str(d):<{w}}" for d in range(timeline.p))]
        for label, row in zip(labels, rows):
            lines.append(f"{label}: " + " ".join(f"{c:<{w}}" for c in row))
        return "\n".join(x.rstrip() for x in lines)
    raise ValueError(f"unknown table style {style!r}; expected 'paper' or 'torch'")
