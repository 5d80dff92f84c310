"""Schedule tables as text, both ways: render a schedule's idealized (``slot``) table, and parse a
table back into a schedule whose programs carry the table's idle slots.

Two text layouts (both written by :func:`format_grid`; a schedule's own table comes from the
``slot`` engine, :func:`ppverify.engines.table.format_schedule_table`):

* **paper** — one row per device, one column per tick; an action repeats in every cell it
  occupies and ``.`` is an idle cell::

      tick    0   1   2   3
      dev 0 0F0   .   . 0B0
      dev 1   . 1F0 1B0   .

* **torch** — PyTorch's step x rank grid (the layout of
  ``torch.distributed.pipelining.schedules._format_pipeline_order``): an action is written at its
  first tick, ``~`` marks further ticks it occupies, an empty cell is idle. PyTorch's own output
  (every action one step, column widths as PyTorch computes them, an optional
  ``<-- ERROR HERE`` marker) parses too::

              Rank 0 Rank 1
      Step 0: 0F0
      Step 1:        1F0
      Step 2:        1B0
      Step 3: 0B0

A table does not say where stages live, so parsing takes the placement (default: ``linear`` over
the table's devices), and ``m`` (default: one more than the largest microbatch in the table). The
parsed programs keep the idle cells as idle slots (``None``), counted in ticks; so running the
parsed schedule through the slot engine *with the same costs* reproduces the table exactly, and
its compute-op order is the original schedule's. Trailing idle cells are dropped. A mistyped
stage or microbatch (``5F0`` among stages 0..2, ``0F9`` beyond ``m``) is named at its cell: the
text line and the cell's rank or tick (:func:`~ppverify.io.table_schedule.schedule_from_programs`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ScheduleFileError
from ..core.files import read_text
from ..core.limits import check_digits
from ..core.ops import Action, parse_action
from ..core.placement import Placement
from ..core.schedule import Schedule
from .show_output import shown_placement, shown_table, table_of_show
from .table_cells import CONTINUED, IDLE, cells_to_programs, programs_from_cells
from .table_schedule import schedule_from_programs

STYLES = ("paper", "torch")


@dataclass(frozen=True)
class TableGrid:
    """A device x tick grid of action text (``None`` = idle cell); ``tick`` is one cell's length
    in the cost model's time unit.

    Example:
        >>> TableGrid(1.0, (("0F0", None), (None, "1F0"))).ticks
        2
    """

    tick: float
    cells: tuple[tuple[str | None, ...], ...]

    @property
    def ticks(self) -> int:
        """Number of columns (the longest row)."""
        return max((len(r) for r in self.cells), default=0)


# --------------------------------------------------------------------------- grid -> text


def _cell_width(cells: list[list[str]], floor: int) -> int:
    return max([floor] + [len(c) for row in cells for c in row])


def _block_width(cells: list[list[str]], t0: int, t1: int) -> int:
    return max([len(str(t1 - 1))] + [len(c) for row in cells for c in row[t0:t1]])


def _paper_block(cells: list[list[str]], t0: int, t1: int, w: int, lw: int) -> str:
    lines = [f"{'tick':<{lw}}" + " ".join(f"{t:>{w}}" for t in range(t0, t1))]
    for d, row in enumerate(cells):
        lines.append(f"{'dev ' + str(d):<{lw}}" + " ".join(f"{c:>{w}}" for c in row[t0:t1]))
    return "\n".join(x.rstrip() for x in lines)


def _compact(cell: str) -> str:
    # an overlapped slot in the paper layout: 0F3&3B5 instead of PyTorch's (0F3;3B5)OVERLAP_F_B
    return parse_action(cell).compact if cell.endswith(")OVERLAP_F_B") else cell  # type: ignore[union-attr]


def _long(cell: str) -> str:
    # a grid read back holds the action text every engine writes: PyTorch's for an overlapped slot
    return str(parse_action(cell)) if "&" in cell else cell


def format_grid(
    grid: TableGrid, style: str = "paper", width: int | None = None, starts: Collection[tuple[int, int]] | None = None
) -> str:
    """Render a grid as text in one of :data:`STYLES` (:func:`read_text_table` reads both back).

    * ``paper``: one row per device, one column per tick; an action fills every cell it occupies,
      ``.`` marks idle cells. With ``width`` (a terminal's columns) a wider table is cut into
      blocks of consecutive ticks, each with its own ``tick`` header and columns only as wide as
      that block's cells. An overlapped slot reads ``0F3&3B5`` (PyTorch's text,
      ``(0F3;3B5)OVERLAP_F_B``, is kept for the ``torch`` layout).
    * ``torch``: PyTorch's step x rank grid, laid out like
      ``torch.distributed.pipelining.schedules._format_pipeline_order`` (``Step NN:`` rows, ``Rank
      r`` columns, empty cells idle); an action is written at its first tick and ``~`` marks the
      further ticks it occupies (with unit costs there are none, as in PyTorch). ``starts`` names
      the ``(device, tick)`` cells where an action begins; by default, a cell whose text differs
      from the cell before it.

    Example:
        >>> g = TableGrid(1.0, (("0F0", None, None, "0B0"), (None, "1F0", "1B0")))
        >>> print(format_grid(g))
        tick    0   1   2   3
        dev 0 0F0   .   . 0B0
        dev 1   . 1F0 1B0   .
        >>> print(format_grid(TableGrid(1.0, (("0F0", "0B0", "0B0"),)), "torch"))
                Rank 0
        Step 0: 0F0
        Step 1: 0B0
        Step 2: ~
    """
    p, T = len(grid.cells), grid.ticks
    rows = [list(r) + [None] * (T - len(r)) for r in grid.cells]
    if style == "paper":
        cells = [[IDLE if c is None else _compact(c) for c in row] for row in rows]
        # label column wide enough for "dev 10" so that cells never touch the label
        lw = max(len("tick"), len(f"dev {p - 1}")) + 1
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
        if starts is None:
            starts = {
                (d, t) for d, row in enumerate(rows) for t, c in enumerate(row) if c and (not t or row[t - 1] != c)
            }
        steps = []
        for t in range(T):
            step = []
            for d in range(p):
                c = rows[d][t]
                step.append("" if c is None else (c if (d, t) in starts else CONTINUED))
            steps.append(step)
        w = _cell_width(steps, len(f"Rank {p - 1}"))
        labels = ["Step " + str(t).zfill(len(str(T - 1))) for t in range(T)]
        lab = len(labels[0]) if labels else len("Step 0")
        lines = [" " * (lab + 2) + " ".join(f"{'Rank ' + str(d):<{w}}" for d in range(p))]
        for label, step in zip(labels, steps):
            lines.append(f"{label}: " + " ".join(f"{c:<{w}}" for c in step))
        return "\n".join(x.rstrip() for x in lines)
    raise ValueError(f"unknown table style {style!r}; expected 'paper' or 'torch'")


# --------------------------------------------------------------------------- text -> schedule


_ROW_RE = re.compile(r"dev\s+([0-9]+)\s*(.*)")
_STEP_RE = re.compile(r"Step\s+([0-9]+):(.*)")
_RANK_RE = re.compile(r"Rank ([0-9]+)")


def _lines(text: str) -> list[tuple[int, str]]:
    return [(n, line.rstrip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def parse_paper_table(text: str, path: str = "<table>") -> tuple[tuple[Action, ...], ...]:
    """Programs from the paper layout (``tick`` header, ``dev D`` rows, ``.`` idle).

    Example:
        >>> progs = parse_paper_table("tick 0 1 2\\ndev 0 0F0 0B0 0B0")
        >>> [[str(a) for a in prog] for prog in progs]
        [['0F0', '0B0']]
    """
    cells, rows = _paper_cells(text, path)
    return cells_to_programs(cells, path, rows, "repeat")


def _paper_cells(text: str, path: str) -> tuple[list[list[str]], list[int]]:
    """Raw cell text of a paper-style table (device x tick) and the line number of each row.

    A wide table may come in blocks of consecutive ticks (``show`` wraps it to the terminal):
    each block repeats the ``tick`` header, numbered on from the previous block, and every
    ``dev`` row; the blocks are joined (a row's line number is that of its first block).

    Example:
        >>> _paper_cells("tick 0 1\\ndev 0 0F0 0B0\\n\\ntick 2\\ndev 0 .", "t.txt")
        ([['0F0', '0B0', '.']], [2])
    """
    lines = _lines(text)
    if not lines or not lines[0][1].lstrip().startswith("tick"):
        raise ScheduleFileError(path, "line 1", "a paper-style table starts with a 'tick 0 1 2 ...' header")
    cells: list[list[str]] = []
    row_lines: list[int] = []
    ticks: list[str] = []
    block, dev = -1, 0
    for n, line in lines:
        if line.lstrip().startswith("tick"):
            first = len(cells[0]) if cells else 0
            ticks = line.split()[1:]
            if ticks != [str(t) for t in range(first, first + len(ticks))]:
                raise ScheduleFileError(
                    path,
                    f"line {n}",
                    f"tick header must number the columns {first}, {first + 1}, "
                    f"{first + 2}, ..." + (" (on from the previous block)" if first else ""),
                )
            if block >= 0 and len(cells) > 0 and dev != len(cells):
                raise ScheduleFileError(
                    path, f"line {n}", f"the previous block has {dev} rows; the first has {len(cells)}"
                )
            block, dev = block + 1, 0
            continue
        mt = _ROW_RE.fullmatch(line.strip())
        if not mt:
            raise ScheduleFileError(path, f"line {n}", f"expected a row 'dev {dev} CELL CELL ...'")
        if int(mt.group(1)) != dev or (block > 0 and dev >= len(cells)):
            raise ScheduleFileError(
                path,
                f"line {n}",
                "rows must be dev 0, 1, 2 ... in order; expected "
                + (f"dev {dev}" if block == 0 or dev < len(cells) else "a 'tick' header"),
            )
        row = mt.group(2).split()
        if len(row) != len(ticks):
            raise ScheduleFileError(
                path, f"line {n}", f"dev {dev} has {len(row)} cells; the header has {len(ticks)} ticks"
            )
        if block == 0:
            cells.append(row)
            row_lines.append(n)
        else:
            cells[dev].extend(row)
        dev += 1
    if block > 0 and dev != len(cells):
        raise ScheduleFileError(
            path, f"line {lines[-1][0]}", f"the last block has {dev} rows; the first has {len(cells)}"
        )
    return cells, row_lines


def parse_torch_grid(text: str, path: str = "<table>") -> tuple[tuple[Action, ...], ...]:
    """Programs from PyTorch's step x rank grid (``Rank r`` header, ``Step N:`` rows).

    Cells are located by the header's column positions (PyTorch left-aligns each cell under its
    ``Rank r`` label; a cell wider than its column pushes the rest of the row right, as PyTorch
    prints it); a row holding exactly one cell per rank is read word by word.

    Example:
        >>> from ppverify.core.ops import format_action
        >>> grid = "        Rank 0 Rank 1\\nStep 0: 0F0\\nStep 1:        1F0\\nStep 2: 0F1    1B0\\n"
        >>> [[format_action(a) for a in prog] for prog in parse_torch_grid(grid)]
        [['0F0', '', '0F1'], ['', '1F0', '1B0']]
    """
    cells, steps = _torch_cells(text, path)
    return cells_to_programs(cells, path, steps, "tilde", transposed=True)


def _torch_cells(text: str, path: str) -> tuple[list[list[str]], list[int]]:
    """Raw cell text of a torch-style grid, transposed to device x tick, and each step's line."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines or not _RANK_RE.search(lines[0][1]):
        raise ScheduleFileError(path, "line 1", "a torch-style grid starts with a 'Rank 0 Rank 1 ...' header")
    n0, header = lines[0]
    ranks = list(_RANK_RE.finditer(header))
    if [int(r.group(1)) for r in ranks] != list(range(len(ranks))):
        raise ScheduleFileError(path, f"line {n0}", "header must name Rank 0, Rank 1, ... in order")
    starts = [r.start() for r in ranks]
    widths = [b - a - 1 for a, b in zip(starts, starts[1:])] + [None]
    p = len(ranks)
    rows: list[list[str]] = []
    line_of_step: list[int] = []
    for n, line in lines[1:]:
        line = line.split(" <-- ERROR HERE")[0].rstrip()
        mt = _STEP_RE.match(line)
        if not mt:
            raise ScheduleFileError(path, f"line {n}", f"expected a row 'Step {len(rows)}: CELL CELL ...'")
        if int(mt.group(1)) != len(rows):
            raise ScheduleFileError(
                path, f"line {n}", f"steps must be numbered 0, 1, 2 ... in order; expected Step {len(rows)}"
            )
        words = line[mt.start(2) :].split()
        rows.append(words if len(words) == p else _split_positional(line, starts, widths, path, n))
        line_of_step.append(n)
    return [[rows[t][d] for t in range(len(rows))] for d in range(p)], line_of_step


def _split_positional(line: str, starts: list[int], widths: list[int | None], path: str, n: int) -> list[str]:
    out = []
    pos = starts[0]
    for r, w in enumerate(widths):
        if pos >= len(line):
            out.append("")
            continue
        hit = re.match(r"\S+", line[pos:])
        if hit is None:  # a blank cell (a space, or a tab or other whitespace in a ragged row)
            span = line[pos:] if w is None else line[pos : pos + w]
            if span.strip():
                col = pos + len(span) - len(span.lstrip()) + 1  # where the stray text begins
                raise ScheduleFileError(
                    path, f"line {n} column {col}", f"cell of rank {r} is not aligned under its 'Rank {r}' header"
                )
            out.append("")
            pos += (w or 0) + 1
            continue
        tok = hit.group(0)
        out.append(tok)
        pos += max(w or 0, len(tok)) + 1
    if line[pos:].strip():
        raise ScheduleFileError(path, f"line {n} column {pos + 1}", f"more cells than ranks ({len(widths)})")
    return out


def read_text_table(text: str, path: str = "<table>") -> tuple[tuple[tuple[Action, ...], ...], TableGrid]:
    """Programs and the grid itself (device x tick, ``None`` idle, an action repeated in every
    cell it occupies) of a table in either layout; the grid's ``tick`` is 1 (a text table does not
    say how long a tick is).

    Example:
        >>> progs, grid = read_text_table("   Rank 0\\nStep 0: 0F0\\nStep 1: 0B0\\nStep 2: ~")
        >>> grid.cells
        (('0F0', '0B0', '0B0'),)
        >>> read_text_table("tick 0 1\\ndev 0 0F1&0B0 0F1&0B0")[1].cells  # an overlapped slot, either form
        (('(0F1;0B0)OVERLAP_F_B', '(0F1;0B0)OVERLAP_F_B'),)
    """
    check_digits(text, path)  # before int() of a device, step or rank number
    text = shown_table(text, path)  # `ppverify show ... > t.txt` reads back
    if detect_style(text, path) == "paper":
        cells, rows = _paper_cells(text, path)
        programs = cells_to_programs(cells, path, rows, "repeat")
    else:
        cells, steps = _torch_cells(text, path)
        programs = cells_to_programs(cells, path, steps, "tilde", transposed=True)
    grid = []
    for row in cells:
        out: list[str | None] = []
        for c in row:
            c = c.strip()
            out.append(None if c in ("", IDLE) else (out[-1] if c == CONTINUED else _long(c)))
        while out and out[-1] is None:
            out.pop()
        grid.append(tuple(out))
    return programs, TableGrid(1.0, tuple(grid))


def detect_style(text: str, path: str = "<table>") -> str:
    """``"paper"`` or ``"torch"`` from a table's header line.

    Example:
        >>> detect_style("tick 0 1"), detect_style("   Rank 0 Rank 1")
        ('paper', 'torch')
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.lstrip().startswith("tick"):
        return "paper"
    if _RANK_RE.search(first):
        return "torch"
    raise ScheduleFileError(path, "line 1", "not a table: expected a 'tick 0 1 ...' or 'Rank 0 Rank 1 ...' header")


def parse_table(
    text: str,
    placement: Placement | None = None,
    m: int | None = None,
    pipe_of_mb: Sequence[int] | None = None,
    style: str | None = None,
    family: str = "table",
    params: Mapping[str, Any] | None = None,
    path: str = "<table>",
) -> Schedule:
    """Parse a paper-style table or a torch-style grid (``style`` detected when None) into a
    schedule; see :func:`schedule_from_programs` for the defaults.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines.table import format_schedule_table
        >>> from ppverify.core.ops import compute_ops
        >>> s = build("1f1b", p=3, m=4)
        >>> back = parse_table(format_schedule_table(s))
        >>> [list(compute_ops(prog)) for prog in back.programs] == [list(prog) for prog in s.programs]
        True
        >>> format_schedule_table(back) == format_schedule_table(s)
        True
    """
    check_digits(text, path)  # before int() of a device, step or rank number
    shown = shown_placement(text) if placement is None else None
    text = shown_table(text, path)
    style = style or detect_style(text, path)
    if style == "paper":
        programs = parse_paper_table(text, path)
    elif style == "torch":
        programs = parse_torch_grid(text, path)
    else:
        raise ScheduleFileError(path, "", f"unknown table style {style!r}; expected one of {', '.join(STYLES)}")
    if shown is not None and shown.p == len(programs):  # a table saved from show: on the placement it printed
        placement = shown
    return schedule_from_programs(programs, placement, m, pipe_of_mb, family, params, path)


def load_table(path: str | Path, **kwargs: Any) -> Schedule:
    """Read a table from a text file (same keywords as :func:`parse_table`).

    Example:
        >>> load_table("no-such-table.txt")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: no-such-table.txt: file not found
    """
    return parse_table(read_text(path), path=str(path), **kwargs)


__all__ = [
    "CONTINUED",
    "IDLE",
    "STYLES",
    "TableGrid",
    "detect_style",
    "format_grid",
    "load_table",
    "parse_paper_table",
    "parse_table",
    "parse_torch_grid",
    "programs_from_cells",
    "read_text_table",
    "schedule_from_programs",
    "shown_placement",
    "table_of_show",
]
