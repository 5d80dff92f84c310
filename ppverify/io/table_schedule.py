"""A schedule from programs read off a table (text, JSON grid): the defaults a table does not say.

A table names actions per device and tick but not where stages live, how many microbatches there
are or which pipe each microbatch takes; :func:`schedule_from_programs` fills these in (linear
placement, or the rows' own one-pipe map when the table names more stages than devices; ``m``
from the largest microbatch; pipes inferred from the devices ops sit on). A number at fault is
named at its cell (:mod:`ppverify.io.cell_checks`, as in a PyTorch CSV), which programs read off
a text table know (:class:`TablePrograms`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.errors import ScheduleFileError
from ..core.limits import check_stages_mbs
from ..core.ops import Action, Comm, Op, Overlap, compute_ops
from ..core.placement import Placement, linear, name_fits
from ..core.schedule import Schedule
from .cell_checks import Located, check_cells_within, first_gap, program_cells, refuse_gaps


def _mb_of(action: Action) -> list[tuple[int, int]]:
    """``(stage, mb)`` pairs an action names (compute and communication actions)."""
    if type(action) is Op or type(action) is Comm:
        return [(action.stage, action.mb)]
    if type(action) is Overlap:
        return [(o.stage, o.mb) for o in action.ops]
    return []


class TablePrograms(tuple[tuple[Action, ...], ...]):
    """Programs read off a text table (a plain tuple of programs to every reader) that also know
    the cell of each action in the text: ``located``, ``(location, action)`` in reading order
    (``line 7 (rank 1)``), so that :func:`schedule_from_programs` names a mistyped stage or
    microbatch where it is written. A tuple, not a dataclass: a caller that reads a table and
    then builds its schedule passes it on as the programs it is.

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> progs = TablePrograms(((parse_action("0F0"),),), [("line 2 (tick 0)", parse_action("0F0"))])
        >>> progs == ((parse_action("0F0"),),), progs.located[0][0]
        (True, 'line 2 (tick 0)')
    """

    located: tuple[Located, ...]

    def __new__(cls, programs: Iterable[tuple[Action, ...]], located: Iterable[Located] = ()) -> TablePrograms:
        # ``located`` has a default: unpickling calls ``__new__`` with the programs, then restores it
        self = super().__new__(cls, programs)
        self.located = tuple(located)
        return self


def _slot(d: int, k: int) -> str:
    return f"device {d}, slot {k}"


def schedule_from_programs(
    programs: tuple[tuple[Action, ...], ...],
    placement: Placement | None = None,
    m: int | None = None,
    pipe_of_mb: Sequence[int] | None = None,
    family: str = "table",
    params: Mapping[str, Any] | None = None,
    path: str = "<table>",
) -> Schedule:
    """Wrap parsed programs into a :class:`Schedule`, filling in what a table does not say.

    Defaults: ``placement`` linear over ``len(programs)`` devices, or, when the table names more
    stages than it has devices (a loop, V or wave table, which linear cannot hold), the one-pipe
    map its rows show (each stage on the device whose row holds its ops, as a PyTorch CSV is read);
    ``m`` one more than the largest microbatch named; ``pipe_of_mb`` all 0 with one pipe, else
    inferred per microbatch from the devices its ops sit on (the pipe placing most of them; ties,
    a microbatch without ops included, the lowest: the verifier then reports a misplaced op, and
    an absent microbatch's ops missing).

    A placement whose name contradicts its maps (``loop`` over ``0 1 1 0``, read off a ``show``
    placement line) is refused, as a JSON file's is (:func:`~ppverify.core.placement.name_fits`).

    A mistyped number is refused at its cell (the text's line and column for
    :class:`TablePrograms`, else ``device d, slot k``), as a PyTorch CSV's is: a stage beyond the
    placement's stages or a microbatch beyond a given ``m``; and, where the count is inferred,
    one beyond numbers no cell names (``5F1`` among stages 0..2 read with the rows' map, ``0F9``
    among microbatches 0..2), rather than inferred into a larger step whose missing ops hide it.

    Example:
        >>> from ppverify.core.placement import bidirectional
        >>> from ppverify.io.table_text import programs_from_cells
        >>> progs = programs_from_cells([["0F0", "1F1"], ["1F0", "0F1"]])
        >>> schedule_from_programs(progs, bidirectional(2)).pipe_of_mb
        (0, 1)
        >>> v_table = programs_from_cells([["0F0", "3F0", "3B0", "0B0"], ["1F0", "2F0", "2B0", "1B0"]])
        >>> schedule_from_programs(v_table).placement.name
        'v'
        >>> schedule_from_programs(programs_from_cells([["0F0", "0F9"]]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: <table>: device 0, slot 1: 0F9 names microbatch 9, but no cell names microbatches 1..8: a typo? (if they are really absent, give m: -m 10 reports their ops missing)
    """
    p = len(programs)
    if p == 0:
        raise ScheduleFileError(path, "", "the table has no device rows")
    cells = list(getattr(programs, "located", ())) or program_cells(programs, _slot)
    named = [(d, s, mb) for d, prog in enumerate(programs) for a in prog for s, mb in _mb_of(a)]
    whole_m = 1 + max((mb for _, _, mb in named), default=0)
    given_m = m is not None
    m = whole_m if m is None else m
    if m < 1:
        raise ScheduleFileError(path, "", f"m={m}: need at least one microbatch")
    held = sum(1 for prog in programs for _ in compute_ops(prog))
    placement = placement or _rows_placement(programs, cells, m, held, path)
    if placement.p != p:
        raise ScheduleFileError(path, "", f"the table has {p} device rows but the placement has p={placement.p}")
    if not name_fits(p, placement.maps, placement.name):  # as a JSON file's: the name is printed as fact
        shown = "; ".join(f"pipe {k}: {' '.join(map(str, mp))}" for k, mp in enumerate(placement.maps))
        raise ScheduleFileError(
            path,
            "placement",
            f"{placement.name!r} disagrees with its map ({shown}): correct the name, or give --placement",
        )
    check_stages_mbs(placement.num_stages, m, path, held=held)
    # read whole (without -m) the table holds whole_m microbatches; say so unless it has a gap,
    # which leaving -m out would refuse in turn
    whole = first_gap({mb for _, _, mb in named}) is None
    note = f"; read whole, the table holds m={whole_m}: leave -m out to take it so" if whole else ""
    num_stages, of = placement.num_stages, f"of placement {placement.name}"
    check_cells_within(cells, path, m if given_m else None, num_stages, of, note)
    if not given_m:
        refuse_gaps(cells, path, "microbatch", f"give m: -m {m} reports their ops missing")
    if pipe_of_mb is None:
        pipe_of_mb = _infer_pipes(placement, m, named)
    else:
        pipe_of_mb = tuple(int(x) for x in pipe_of_mb)
        if len(pipe_of_mb) != m or any(not 0 <= x < placement.num_pipes for x in pipe_of_mb):
            raise ScheduleFileError(path, "", f"pipe_of_mb needs {m} entries in 0..{placement.num_pipes - 1}")
    # a plain tuple: the schedule holds its programs, not where a text had them
    return Schedule(placement, m, tuple(programs), tuple(pipe_of_mb), family, dict(params or {}))


def _rows_placement(
    programs: tuple[tuple[Action, ...], ...], cells: Sequence[Located], m: int, held: int, path: str
) -> Placement:
    """Linear over the rows when the table names no stage beyond the last device; else the map
    the rows show (linear would put every op of a stage >= p out of range), after refusing a
    stage beyond numbers no cell names (a typo, not stages to place on no row)."""
    p = len(programs)
    named = [pair for prog in programs for a in prog for pair in _mb_of(a)]
    num_stages = 1 + max((s for s, _ in named), default=-1)
    if num_stages <= p:
        return linear(p)
    from .rows_placement import infer_stage_ranks, resolve_placement

    # before a walk over every stage: one mistyped 999999999F0 must not mean a billion of them
    check_stages_mbs(num_stages, m, path, held=held)
    refuse_gaps(cells, path, "stage", "give the placement: --placement loop, v, wave or one rank per stage")
    return resolve_placement(None, p, num_stages, infer_stage_ranks(programs, num_stages), path)


def _infer_pipes(placement: Placement, m: int, named: list[tuple[int, int, int]]) -> tuple[int, ...]:
    """Each microbatch's pipe: the one placing most of its ops on the devices the table has them
    (ties, a microbatch without ops included: the lowest), so that a misplaced op is reported by
    the placement check and an absent microbatch's ops as missing, not refused as unreadable."""
    if placement.num_pipes == 1:
        return (0,) * m
    fits = [[0] * placement.num_pipes for _ in range(m)]
    for d, s, mb in named:
        if 0 <= mb < m and 0 <= s < placement.num_stages:
            for pipe, stage_dev in enumerate(placement.maps):
                fits[mb][pipe] += stage_dev[s] == d
    # max() keeps the first of equal counts: the lowest pipe
    return tuple(max(range(placement.num_pipes), key=row.__getitem__) for row in fits)


__all__ = ["TablePrograms", "schedule_from_programs"]
