"""The cells of a schedule table, as text, read into programs: shared by the text layouts
(:mod:`ppverify.io.table_text`) and the JSON ``table`` (:mod:`ppverify.io.json_format`).

A table holds one row of cells per device, one cell per tick; an action occupies one or more
consecutive cells, and each idle cell before an action becomes one idle slot of its program.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..core.errors import ScheduleFileError
from ..core.ops import Action, ActionSyntaxError, parse_action
from .table_schedule import TablePrograms

#: cell text of an idle cell in the paper layout
IDLE = "."
#: cell text of a tick still occupied by the action started above it (torch layout)
CONTINUED = "~"


def programs_from_cells(
    cells: Sequence[Sequence[str | None]],
    path: str = "<table>",
    location: str = "table.grid",
    continuation: str = "repeat",
) -> tuple[tuple[Action, ...], ...]:
    """Programs (with idle slots) read off a device x tick grid of cell text.

    ``continuation="repeat"``: an action spanning several ticks repeats its text in each (paper
    layout, JSON tables). ``continuation="tilde"``: every cell holding text starts a new action and
    ``~`` continues the one before (torch layout). ``None``, ``""`` and ``.`` are idle cells; each
    idle cell before an action becomes one idle slot; trailing idle cells are dropped.

    Example:
        >>> from ppverify.core.ops import format_action
        >>> progs = programs_from_cells([["0F0", ".", "0B0", "0B0"], [".", "1F0", "1B0", None]])
        >>> [[format_action(a) for a in prog] for prog in progs]
        [['0F0', '', '0B0'], ['', '1F0', '1B0']]
        >>> programs_from_cells([["0F0", "~", "0X1"]], "t.txt", "line 3", "tilde")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: t.txt: line 3[0][2]: '0X1' is not an action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, (0F7;7B3)OVERLAP_F_B or 0F7&7B3, or empty for idle)
    """
    return _read_cells(cells, path, location, continuation)[0]


def _read_cells(
    cells: Sequence[Sequence[str | None]], path: str, location: str, continuation: str
) -> tuple[tuple[tuple[Action, ...], ...], list[list[int]]]:
    """:func:`programs_from_cells`, and the tick (column) of each action's first cell, per device."""
    programs, ticks = [], []
    for d, row in enumerate(cells):
        prog: list[Action] = []
        at: list[int] = []
        idle = 0
        prev: str | None = None  # text of the action occupying the previous cell (None if idle)
        for t, cell in enumerate(row):
            text = "" if cell is None else str(cell).strip()
            where = f"{location}[{d}][{t}]"
            if text in ("", IDLE):
                idle += 1
                prev = None
                continue
            if continuation == "tilde" and text == CONTINUED:
                if prev is None:
                    raise ScheduleFileError(
                        path, where, f"'{CONTINUED}' continues an action but the cell before it is idle"
                    )
                continue
            if continuation == "repeat" and text == prev:
                continue
            try:
                action = parse_action(text)
            except ActionSyntaxError as exc:
                raise ScheduleFileError(path, where, str(exc)) from None
            prog.extend([None] * idle)
            at.append(t)
            prog.append(action)
            idle = 0
            prev = text
        programs.append(tuple(prog))
        ticks.append(at)
    return tuple(programs), ticks


def cells_to_programs(
    cells: Sequence[Sequence[str | None]],
    path: str,
    line_of_row: Sequence[int],
    continuation: str,
    transposed: bool = False,
) -> TablePrograms:
    """:func:`programs_from_cells` of a text table's cells (device x tick), which also know the
    text line and column of each action's cell, in reading order; a cell error names them too.
    ``line_of_row`` is the text line of each device's row (paper layout), or with ``transposed``
    of each tick's step (torch layout, whose steps are read one by one, rank by rank).

    Example:
        >>> progs = cells_to_programs([["0F0", "~", "0B0"], ["", "1F0", "1B0"]], "t.txt", [2, 3, 4], "tilde", True)
        >>> [(where, str(a)) for where, a in progs.located]
        [('line 2 (rank 0)', '0F0'), ('line 3 (rank 1)', '1F0'), ('line 4 (rank 0)', '0B0'), ('line 4 (rank 1)', '1B0')]
    """

    def where(d: int, t: int) -> str:  # the line and column the user sees
        return f"line {line_of_row[t]} (rank {d})" if transposed else f"line {line_of_row[d]} (tick {t})"

    try:
        programs, ticks = _read_cells(cells, path, "cell", continuation)
    except ScheduleFileError as exc:
        mt = re.fullmatch(r"cell\[(\d+)\]\[(\d+)\]", exc.location)
        if not mt:
            raise
        raise ScheduleFileError(path, where(int(mt.group(1)), int(mt.group(2))), exc.rule) from None
    starts: list[tuple[int, int, Action]] = []  # (tick, device, action) of every action
    for d, prog in enumerate(programs):
        starts.extend((t, d, a) for t, a in zip(ticks[d], [a for a in prog if a is not None]))
    starts.sort(key=lambda x: (x[0], x[1]) if transposed else (x[1], x[0]))  # the order lines are read in
    return TablePrograms(programs, [(where(d, t), a) for t, d, a in starts])


__all__ = ["CONTINUED", "IDLE", "cells_to_programs", "programs_from_cells"]
