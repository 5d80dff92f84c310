"""A mistyped number in a schedule file, named at its cell: shared by the PyTorch CSV reader
(:mod:`ppverify.io.torch_csv`) and the text-table reader (:mod:`ppverify.io.table_schedule`).

A reader lists its actions as *located cells*, ``(location, action)`` in reading order, the
location in the file's own terms (``row 3 (rank 2), column 5`` in a CSV, ``line 7 (rank 1)`` in a
table). Two checks then name the first cell at fault rather than letting a typo grow the step:

* :func:`check_cells_within`: an action beyond the stages or microbatches the file is read with
  (given, or implied by a placement);
* :func:`refuse_gaps`: with the count inferred (one more than the largest number), numbers below it
  that no cell names are more likely one mistyped action (``5F0`` among stages 0..2) than whole
  stages or microbatches left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..core.errors import ScheduleFileError
from ..core.ops import Action, Comm, Op, Overlap, format_action

#: a cell's location in its file's terms and the action it holds
Located = tuple[str, Action]


def stages_of(action: Action) -> list[int]:
    """The stage numbers an action names (markers such as ``0UNSHARD`` included).

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> stages_of(parse_action("(0F7;7B3)OVERLAP_F_B")), stages_of(None)
        ([0, 7], [])
    """
    if action is None:
        return []
    if isinstance(action, Overlap):
        return [op.stage for op in action.ops]
    return [action.stage]


def mbs_of(action: Action) -> list[int]:
    """The microbatch numbers an action names (none for a marker or an idle cell).

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> mbs_of(parse_action("(0F7;7B3)OVERLAP_F_B")), mbs_of(parse_action("0UNSHARD"))
        ([7, 3], [])
    """
    if isinstance(action, Overlap):
        return [op.mb for op in action.ops]
    if isinstance(action, (Op, Comm)):
        return [action.mb]
    return []


_OF: dict[str, Callable[[Action], list[int]]] = {"stage": stages_of, "microbatch": mbs_of}


def numbers(what: str, lo: int, hi: int) -> str:
    """``stage 3`` or ``stages 3..4``.

    Example:
        >>> numbers("stage", 3, 3), numbers("microbatch", 3, 8)
        ('stage 3', 'microbatches 3..8')
    """
    return f"{what} {lo}" if lo == hi else f"{what}{'es' if what.endswith('ch') else 's'} {lo}..{hi}"


def first_gap(seen: set[int]) -> tuple[int, int] | None:
    """The first run ``(lo, hi)`` of numbers below the largest seen that none names, or None.

    Example:
        >>> first_gap({0, 1, 2, 9}), first_gap({0, 1}), first_gap({1}), first_gap(set())
        ((3, 8), None, (0, 0), None)
    """
    if not seen:
        return None
    lo = next(i for i in range(len(seen) + 1) if i not in seen)  # at most len(seen): pigeonhole
    if lo > max(seen):
        return None
    return lo, min(x for x in seen if x > lo) - 1


def program_cells(programs: Sequence[Sequence[Action]], where: Callable[[int, int], str]) -> list[Located]:
    """Located cells of programs held one per row, row by row (``where(row, index)`` names a cell).

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> program_cells([[parse_action("0F0"), None]], lambda r, c: f"r{r}c{c}")
        [('r0c0', Op(kind='F', stage=0, mb=0))]
    """
    return [(where(r, c), a) for r, prog in enumerate(programs) for c, a in enumerate(prog) if a is not None]


def refuse_beyond(cells: Iterable[Located], source: str, what: str, limit: int, why: str) -> None:
    """Raise at the first cell whose action names a ``what`` (``"stage"`` or ``"microbatch"``)
    ``>= limit``, saying ``why`` that is wrong.

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> refuse_beyond([("line 2 (rank 0)", parse_action("4B1"))], "t.txt", "stage", 4, "too far")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: t.txt: line 2 (rank 0): 4B1 names stage 4, too far
    """
    of = _OF[what]
    for where, a in cells:
        for x in of(a):
            if x >= limit:
                raise ScheduleFileError(source, where, f"{format_action(a)} names {what} {x}, {why}")


def check_cells_within(
    cells: Sequence[Located],
    source: str,
    m: int | None = None,
    num_stages: int | None = None,
    stages_from: str = "given",
    m_note: str = "",
) -> None:
    """Refuse the first cell whose action names a microbatch ``>= m`` or a stage ``>= num_stages``
    (either None: not checked), naming the cell, the action and the bound; ``stages_from`` says
    where the stage count comes from (``"of placement v"``), ``m_note`` is added after the bound.

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> rows = [[parse_action("0F0"), parse_action("0F9")]]
        >>> check_cells_within(program_cells(rows, lambda r, c: f"row {r + 1}, column {c + 1}"), "x.csv", m=3)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: x.csv: row 1, column 2: 0F9 names microbatch 9, outside the m=3 given (microbatches 0..2)
    """
    for what, limit in (("stage", num_stages), ("microbatch", m)):
        if limit is None:
            continue
        bound = f"m={limit} given" if what == "microbatch" else f"{limit} stages {stages_from}"
        note = m_note if what == "microbatch" else ""
        refuse_beyond(cells, source, what, limit, f"outside the {bound} ({numbers(what, 0, limit - 1)}){note}")


def refuse_gaps(cells: Sequence[Located], source: str, what: str, fix: str) -> None:
    """With the count of ``what`` inferred (one more than the largest named), numbers no cell
    names below it are more likely one mistyped action than whole stages or microbatches left
    out: name the first action beyond the gap rather than report every op of the gap missing
    (``fix`` says what to give if they are really absent).

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> cells = [("line 2 (tick 0)", parse_action("0F0")), ("line 2 (tick 1)", parse_action("0F9"))]
        >>> refuse_gaps(cells, "t.txt", "microbatch", "give m")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: t.txt: line 2 (tick 1): 0F9 names microbatch 9, but no cell names microbatches 1..8: a typo? (if they are really absent, give m)
    """
    gap = first_gap({x for _, a in cells for x in _OF[what](a)})
    if gap is not None:
        lo, hi = gap
        absent = "it is" if lo == hi else "they are"
        why = f"but no cell names {numbers(what, lo, hi)}: a typo? (if {absent} really absent, {fix})"
        refuse_beyond(cells, source, what, lo, why)


__all__ = [
    "Located",
    "check_cells_within",
    "first_gap",
    "mbs_of",
    "numbers",
    "program_cells",
    "refuse_beyond",
    "refuse_gaps",
    "stages_of",
]
