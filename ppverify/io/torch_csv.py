"""PyTorch pipelining CSV (``torch.distributed.pipelining``, torchtitan), read and written losslessly.

The format (``torch.distributed.pipelining`` in PyTorch 2.13): one row per rank, no header, one action per cell in PyTorch's text
form (``0F1``, ``2I3``, ``0W3``, ``1B0``, ``3SEND_F1``, ``0UNSHARD``, ``(0F7;7B3)OVERLAP_F_B``); an
empty cell is an idle slot. Two flavours:

* ``compute_only``: compute actions (and idle cells); PyTorch lowers it to add SEND/RECV;
* ``compute_comms``: the lowered form with explicit SEND/RECV actions and no idle cells (a file
  holding SEND/RECV or UNSHARD/RESHARD/REDUCE_GRAD markers, which PyTorch's compute-only loader
  refuses, is read in this flavour).

Stage indices are global. Which rank holds a stage is not written in the file: it is inferred
from the rank whose row holds the stage's actions (so ``loop``, ``v`` and arbitrary maps all load),
or given explicitly with ``placement=``. UNSHARD/RESHARD/REDUCE_GRAD are kept as
:class:`~ppverify.core.ops.Marker` actions (free in time) so that a load/save round trip in the
``compute_comms`` flavour gives back the same cells; ``compute_only`` output leaves them out, as
PyTorch's compute-only loader refuses them.

Unlike PyTorch, whose parser matches a prefix (it reads ``0F1xyz`` as ``0F1`` and the old ``2BW0``
as ``2B`` with no microbatch), every cell must be exactly one action; anything else raises
:class:`~ppverify.core.errors.ScheduleFileError` naming the row, the column and the text. Each cell
must also read the same in PyTorch's grammar (:func:`torch_reading`) as in ppverify's: ``measure``
and ``export`` write ppverify's reading back, so a cell PyTorch reads otherwise (``0F2&0B0``, the
short form of ppverify's text tables, which PyTorch reads as ``0F2``; ``.``, which it refuses)
would make ppverify check a schedule the user's file does not hold. So does
a mistyped number: an action beyond the stages or microbatches a file is read with (given, or
implied by the placement), or, when they are inferred, one beyond numbers no cell names (``5F0``
in a file of stages 0..2), is named at its cell rather than inferred into a larger step whose
missing ops hide it.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..core.errors import ParameterError, ScheduleFileError
from ..core.limits import check_stages_mbs
from ..core.ops import Action, ActionSyntaxError, Comm, Marker, Op, Overlap, format_action, parse_action
from ..core.placement import Placement
from ..core.schedule import Schedule
from .cell_checks import check_cells_within, first_gap, mbs_of, numbers, program_cells, refuse_gaps, stages_of
from .rows_placement import implied_stages, infer_stage_ranks, resolve_placement

COMPUTE_ONLY, COMPUTE_COMMS = "compute_only", "compute_comms"
FLAVOURS: tuple[str, ...] = (COMPUTE_ONLY, COMPUTE_COMMS)


def _cell(r: int, c: int) -> str:
    return f"row {r + 1} (rank {r}), column {c + 1}"


#: PyTorch's ``_action_regex`` (2.13), which ``_Action.from_str`` matches at the start of a cell; its
#: ``\d`` (kept: this is what PyTorch reads) takes any script's digits, ``'\u0660F\u0663'`` as ``0F3``,
#: which ppverify's reader refuses (:func:`_torch_cell`: digits are ASCII 0-9, as in ``core/ops.py``)
_TORCH_ACTION_RE = re.compile(r"(\d+)(F|I|B|W|UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)(\d*)")


def torch_reading(cell: str) -> str | None:
    """The action PyTorch's ``_Action.from_str`` (2.13) reads in a cell, as its text (None for an
    empty cell, ``""`` for a cell it refuses): it matches a prefix, so ``0F2&0B0`` reads as ``0F2``.

    Example:
        >>> torch_reading(" 0F2&0B0"), torch_reading("(0F7; 7B3)OVERLAP_F_B"), torch_reading("."), torch_reading("")
        ('0F2', '(0F7;7B3)OVERLAP_F_B', '', None)
    """
    s = cell.strip()
    if s == "":
        return None
    if s.startswith("(") and ")" in s:  # sub-actions, then the computation type
        end = s.find(")")
        subs = [torch_reading(x) for x in s[1:end].split(";")]
        return f"({';'.join(x for x in subs if x)}){s[end + 1 :]}"
    m = _TORCH_ACTION_RE.match(s)
    if not m:
        return ""
    return f"{int(m.group(1))}{m.group(2)}{int(m.group(3)) if m.group(3) else ''}"


def _torch_cell(cell: str) -> Action:
    """One CSV cell as ppverify reads it, refused unless it is exactly one action that PyTorch
    reads the same (:func:`torch_reading`).

    Example:
        >>> _torch_cell("0F2&0B0")
        Traceback (most recent call last):
        ...
        ppverify.core.ops.ActionSyntaxError: PyTorch reads 0F2&0B0 as 0F2; write (0F2;0B0)OVERLAP_F_B
        >>> _torch_cell("\u0660F\u0663")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.ops.ActionSyntaxError: ... is numbered in digits other than ASCII 0-9 (... is U+0660 ARABIC-INDIC DIGIT ZERO), which PyTorch reads as 0F3: write 0F3
    """
    text = cell.strip()
    digit = next((ch for ch in text if ch.isdecimal() and not ch.isascii()), None)
    if digit is not None:  # PyTorch's \d and int() read them; ppverify's action text (core/ops.py) does not
        read = torch_reading(text)
        name = f"U+{ord(digit):04X} {unicodedata.name(digit, '')}".rstrip()
        fix = f"which PyTorch reads as {read}: write {read}" if read else "which PyTorch refuses: write ASCII digits"
        raise ActionSyntaxError(f"{text!r} is numbered in digits other than ASCII 0-9 ({digit!r} is {name}), {fix}")
    if "&" in text:  # ppverify's text tables take it; PyTorch drops all after the first action
        try:
            both = parse_action(text)
        except ActionSyntaxError:
            both = None
        fix = (
            str(both)
            if isinstance(both, Overlap)
            else "one action per cell, an overlapped F and B as (0F7;7B3)OVERLAP_F_B"
        )
        read = torch_reading(text)
        reads = f"reads {text} as {read}" if read else f"refuses {text}"
        raise ActionSyntaxError(f"PyTorch {reads}; write {fix}")
    action = parse_action(text, compact=False)
    read = torch_reading(text)
    if read != (None if action is None else format_action(action)):
        reads = f"reads {text!r} as {read}" if read else f"refuses {text!r}"
        fix = "leave the cell empty for an idle slot" if action is None else f"write {format_action(action)}"
        raise ActionSyntaxError(f"PyTorch {reads}; {fix}")
    return action


def _no_idle_cells(programs: Sequence[Sequence[Action]], source: str) -> None:
    """Refuse an empty cell in a ``compute_comms`` file: PyTorch's runtime raises on an idle
    action in that flavour (``_prepare_schedule_with_comms``), so the file does not run at all,
    whatever its order.

    Example:
        >>> _no_idle_cells([[parse_action("0F0"), None, parse_action("0SEND_F0")]], "c.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: c.csv: row 1 (rank 0), column 2: an empty cell in a compute_comms file (it holds SEND/RECV or UNSHARD/RESHARD/REDUCE_GRAD, which only that flavour takes): PyTorch's runtime refuses idle cells in this flavour; remove the cell (a trailing comma makes one too)
    """
    for r, prog in enumerate(programs):
        for c, a in enumerate(prog):
            if a is None:
                raise ScheduleFileError(
                    source,
                    _cell(r, c),
                    "an empty cell in a compute_comms file (it holds SEND/RECV or UNSHARD/RESHARD/REDUCE_GRAD, "
                    "which only that flavour takes): PyTorch's runtime refuses idle cells in this flavour; remove "
                    "the cell (a trailing comma makes one too)",
                )


def parse_rows(
    rows: Iterable[Sequence[str]],
    source: str = "<rows>",
    placement: str | Sequence[int] | Placement | None = None,
    m: int | None = None,
    num_stages: int | None = None,
    strict: bool = False,
) -> Schedule:
    """Build a :class:`Schedule` from CSV rows (one per rank) of PyTorch action text.

    ``m`` and ``num_stages`` default to one more than the largest microbatch and stage index in
    the file; give them when the file might lack the last ones (missing ops are then reported by
    the structural check instead of shrinking the step). An inferred count with a gap (stages
    0..2 and 5, none of 3..4) is refused at the first cell beyond the gap: one mistyped action is
    likelier than whole stages left out. ``strict`` (files a user wrote): an action beyond a given
    ``m`` or ``num_stages``, or the stages the placement names (``linear``, ``v``, a map), is
    refused at its cell; without it (PyTorch's own action lists, whose bugs are audited) it is
    kept and the structural check reports it.

    Example:
        >>> s = parse_rows([["0F0", "0F1", "", "0B0", "", "0B1"], ["", "1F0", "1B0", "1F1", "1B1"]])
        >>> s.p, s.m, s.placement.name, s.params["format"], s.programs[1][0] is None
        (2, 2, 'linear', 'compute_only', True)
        >>> parse_rows([["0F0", "0F1xyz"]], "s.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.csv: row 1 (rank 0), column 2: '0F1xyz' is not an action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, (0F7;7B3)OVERLAP_F_B, or empty for idle)
        >>> parse_rows([["0F0", "0B0"], ["1F0", "1B0"], ["5F0", "2B0"]], "s.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.csv: row 3 (rank 2), column 1: 5F0 names stage 5, but no cell names stages 3..4: a typo? (if they are really absent, give the stage count or the placement: ppverify import --stages 6 or --placement)
    """
    _check_counts(m, num_stages)
    return _schedule(_programs(rows, source), source, placement, m, num_stages, strict)


def _check_counts(m: int | None, num_stages: int | None) -> None:
    """Refuse a given count below 1 before the cells are read."""
    if num_stages is not None and (isinstance(num_stages, bool) or num_stages < 1):
        raise ParameterError("stages", num_stages, "must be >= 1")  # else a later check names v
    if m is not None and (isinstance(m, bool) or m < 1):
        raise ParameterError("m", m, "must be an integer >= 1")  # else each cell is beyond "microbatches 0..-1"


def _programs(rows: Iterable[Sequence[str]], source: str) -> list[tuple[Action, ...]]:
    """The actions of each row, a cell that is not exactly one action refused at its cell."""
    programs: list[tuple[Action, ...]] = []
    for r, row in enumerate(rows):
        prog = []
        for c, cell in enumerate(row):
            try:
                prog.append(_torch_cell(cell))
            except ActionSyntaxError as exc:
                raise ScheduleFileError(source, _cell(r, c), str(exc)) from None
        programs.append(tuple(prog))
    if not programs:
        raise ScheduleFileError(source, "", "no rows: a PyTorch schedule has one row per rank")
    for r, actions in enumerate(programs):
        if all(a is None for a in actions):  # else a rank without a stage, which rescales every share
            raise ScheduleFileError(
                source,
                f"row {r + 1} (rank {r})",
                "holds no action: each row is one rank's actions, and every rank of a pipeline runs a stage "
                "(a blank line? remove it)",
            )
    return programs


def _schedule(
    programs: Sequence[tuple[Action, ...]],
    source: str,
    placement: str | Sequence[int] | Placement | None,
    m: int | None,
    num_stages: int | None,
    strict: bool,
) -> Schedule:
    """:func:`parse_rows` once its cells are actions (the counts checked)."""
    p = len(programs)
    actions = [a for prog in programs for a in prog if a is not None]
    if not any(isinstance(a, (Op, Overlap)) for a in actions):
        raise ScheduleFileError(source, "", "no compute action (F, B, I, W) in any row")
    seen_stages = {s for a in actions for s in stages_of(a)}
    seen_mbs = {mb for a in actions for mb in mbs_of(a)}
    implied = implied_stages(placement, p) if num_stages is None else None
    if num_stages is not None:
        S = num_stages
    else:  # a placement's count bounds a file; PyTorch's lists keep their largest stage, audited
        S = implied[0] if implied is not None and strict else max(seen_stages) + 1
    mm = m if m is not None else max(seen_mbs, default=0) + 1
    # the limits first: 0F1000000 is refused for its size (naming the counts), not as a gap
    check_stages_mbs(S, mm, source, held=sum(len(mbs_of(a)) for a in actions if not isinstance(a, Comm)))
    cells = program_cells(programs, _cell)
    if strict:
        stages_from = "given" if implied is None else f"of placement {implied[1]}"
        bound = S if num_stages is not None or implied else None
        check_cells_within(cells, source, m, bound, stages_from, _whole_note(actions, m))
    if num_stages is None and implied is None:
        fix = f"give the stage count or the placement: ppverify import --stages {S} or --placement"
        refuse_gaps(cells, source, "stage", fix)
    if m is None:
        refuse_gaps(cells, source, "microbatch", f"give m: -m {mm} reports their ops missing")
    inferred = infer_stage_ranks(programs, S)
    pl = resolve_placement(placement, p, S, inferred, source)
    # PyTorch's compute-only loader refuses markers as it refuses SEND/RECV: a file holding either
    # (a lowered p=1 file has markers and no SEND/RECV) only runs as compute_comms
    flavour = COMPUTE_COMMS if any(isinstance(a, (Comm, Marker)) for a in actions) else COMPUTE_ONLY
    if flavour == COMPUTE_COMMS:
        _no_idle_cells(programs, source)
    if strict:  # a file a user wrote, read through read_text, which skipped a byte-order mark
        note_byte_order_mark(source, flavour, programs[0][0])
    params = {"p": p, "m": mm, "format": flavour, "placement": pl.name}
    return Schedule(
        pl, mm, tuple(programs), (0,) * mm, Path(source).name if source != "<rows>" else "torch-csv", params
    )


def note_byte_order_mark(source: str, flavour: str, first: Action) -> None:
    """One note on stderr, as ppverify prints its notes (``ppverify: note: ...``), when the CSV
    file ``source`` starts with a UTF-8 byte-order mark: ppverify reads past it, as it does in every
    format, but PyTorch's loader (``_PipelineScheduleRuntime._load_csv``) opens the file as plain
    UTF-8, so its first cell reads ``'\\ufeff0F0'``, which ``_Action.from_str`` refuses (``strip()``
    keeps U+FEFF). ``first`` is the first cell's action; ``export`` writes the file without the mark.

    Example:
        >>> import contextlib, io, os, tempfile
        >>> f = os.path.join(tempfile.mkdtemp(), "bom.csv")
        >>> _ = open(f, "wb").write(b"\\xef\\xbb\\xbf0F0,0B0\\n")
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     note_byte_order_mark(f, COMPUTE_ONLY, parse_action("0F0"))
        >>> print(err.getvalue().replace(os.path.dirname(f) + os.sep, ""), end="")  # doctest: +NORMALIZE_WHITESPACE
        ppverify: note: bom.csv: starts with a UTF-8 byte-order mark, which ppverify skips but PyTorch's
        loader (_PipelineScheduleRuntime._load_csv) keeps: it reads the first cell as '\\ufeff0F0' and
        refuses the file as it stands; `ppverify export bom.csv --format torch-csv -o OUT.csv` writes it
        without the mark
    """
    import sys

    from ..core.files import starts_with_bom

    if not starts_with_bom(source):
        return
    cell = "\ufeff" + ("" if first is None else format_action(first))  # what csv.reader hands PyTorch
    fmt = "torch-csv" if flavour == COMPUTE_ONLY else "torch-csv-comms"
    print(
        f"ppverify: note: {source}: starts with a UTF-8 byte-order mark, which ppverify skips but PyTorch's "
        f"loader (_PipelineScheduleRuntime._load_csv) keeps: it reads the first cell as {cell!r} and refuses the "
        f"file as it stands; `ppverify export {source} --format {fmt} -o OUT.csv` writes it without the mark",
        file=sys.stderr,
    )


class MicrobatchesBeyondFile(ParameterError):
    """``-m`` above the microbatches a CSV names, given to a command that runs a whole step: the
    file read at that ``m`` is :attr:`schedule` (its extra microbatches' ops all missing), which
    ``verify`` reports INVALID as ``import`` does.

    Example:
        >>> exc = MicrobatchesBeyondFile("m3.csv", 4, 3, None)
        >>> str(exc)  # doctest: +NORMALIZE_WHITESPACE
        'parameter m=4: m3.csv holds a schedule of m=3: leave -m out (the file decides), or give -m 3;
        no cell names microbatch 3, so this command cannot run the step: `ppverify verify m3.csv -m 4` names its missing ops'
    """

    def __init__(self, source: str, m: int, held: int, schedule: Schedule | None) -> None:
        self.schedule = schedule
        super().__init__(
            "m",
            m,
            f"{source} holds a schedule of m={held}: leave -m out (the file decides), or give -m {held}; "
            f"no cell names {numbers('microbatch', held, m - 1)}, so this command cannot run the step: "
            f"`ppverify verify {source} -m {m}` names its missing ops",
        )


def parse_file_rows(rows: Iterable[Sequence[str]], source: str, m: int | None = None) -> Schedule:
    """A file's CSV rows read as a command that takes its schedule reads them (``verify``,
    ``simulate``, ``show``...), ``m`` its ``-m`` (None: not given, the file read whole by
    :func:`parse_rows`).

    The file holds one microbatch more than the largest it names, gaps or not. ``-m`` is looked at
    before any gap, as a text table reads it: an ``m`` below that count names the first cell beyond
    it (``outside the m=3 given``), adding, when the file read whole has no gap, that leaving ``-m``
    out takes it so; an ``m`` at or above it reads the file at that ``m``, so that microbatches no
    cell names are reported missing (``-m`` said they belong to the step), not refused as a typo.
    An ``m`` above it raises :class:`MicrobatchesBeyondFile` holding the file so read: ``verify``
    reports its missing ops as ``import`` does, a command that runs the step refuses it.

    Example:
        >>> rows = [["0F0", "0F1", "0F3", "0B0", "0B1", "0B3"]]  # no microbatch 2
        >>> parse_file_rows(rows, "gap.csv", m=4).m  # 0F2 and 0B2 are then reported missing
        4
        >>> try:
        ...     parse_file_rows(rows, "gap.csv", m=6)
        ... except MicrobatchesBeyondFile as exc:
        ...     exc.schedule.m  # microbatches 4 and 5 missing too
        6
        >>> parse_file_rows(rows, "gap.csv", m=3)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: gap.csv: row 1 (rank 0), column 3: 0F3 names microbatch 3, outside the m=3 given (microbatches 0..2)
        >>> parse_file_rows([["0F0", "0F1", "0B0", "0B1"]], "two.csv", m=1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: two.csv: row 1 (rank 0), column 2: 0F1 names microbatch 1, outside the m=1 given (microbatch 0); read whole, the file holds m=2: leave -m out to take it so
    """
    _check_counts(m, None)
    programs = _programs(rows, source)
    schedule = _schedule(programs, source, None, m, None, True)
    held = max((mb for prog in programs for a in prog if a is not None for mb in mbs_of(a)), default=0) + 1
    if m is not None and m > held:
        raise MicrobatchesBeyondFile(source, m, held, schedule)
    return schedule


def _whole_note(actions: Sequence[Action], m: int | None) -> str:
    """What ends the refusal of a cell beyond a given ``m`` below the file's own count: that the
    file read whole (without ``-m``) holds ``held`` microbatches, unless it has a gap, which leaving
    ``-m`` out would refuse in turn."""
    mbs = {mb for a in actions for mb in mbs_of(a)}
    held = max(mbs, default=0) + 1
    if m is None or m >= held or first_gap(mbs) is not None:
        return ""
    if first_gap({s for a in actions for s in stages_of(a)}) is not None:
        return ""
    return f"; read whole, the file holds m={held}: leave -m out to take it so"


def load_csv(
    path: str | Path,
    placement: str | Sequence[int] | Placement | None = None,
    m: int | None = None,
    num_stages: int | None = None,
    **_: object,
) -> Schedule:
    """Load a PyTorch pipelining CSV (either flavour, detected from its cells) as :func:`parse_rows`
    reads a file (``strict``: an action beyond a given ``m``, ``num_stages`` or placement is refused
    at its cell).

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp(); f = os.path.join(d, "s.csv")
        >>> _ = open(f, "w").write("0F0,0F1,,0B0,,0B1\\n,1F0,1B0,1F1,1B1\\n")
        >>> load_csv(f).describe()
        's.csv p=2 m=2 format=compute_only placement=linear'
    """
    from ..core.files import read_text
    from ..core.text_formats import csv_rows

    path = Path(path)
    rows = csv_rows(read_text(path), str(path))  # size, encoding, BOM and cell length checked there
    return parse_rows(rows, str(path), placement=placement, m=m, num_stages=num_stages, strict=True)


def to_rows(schedule: Schedule, format: str = COMPUTE_ONLY) -> list[list[str]]:
    """The CSV cells of a schedule in one flavour.

    ``compute_only`` writes the programs as they are, minus any SEND/RECV and UNSHARD/RESHARD/
    REDUCE_GRAD markers (idle cells kept): PyTorch's compute-only loader refuses every action that
    is not compute ("Expected compute-only schedule but found communication action '0UNSHARD'"),
    and its lowering adds them back.
    ``compute_comms`` writes them as they are when they already hold SEND/RECV, else lowers them
    first exactly as PyTorch's runtime does when it loads a compute-only file (UNSHARD/RESHARD,
    REDUCE_GRAD, SEND/RECV: :func:`ppverify.io.torch_lowering.lower_like_pytorch`), so the file
    trains the same; idle cells are dropped because PyTorch's runtime rejects them in this flavour.
    Two-pipe schedules (Chimera, DualPipe) are refused: PyTorch routes every microbatch through
    the same stages.

    Example:
        >>> from ppverify.schedules import build
        >>> to_rows(build("gpipe", p=2, m=1), "compute_comms")[0]
        ['0UNSHARD', '0F0', '0SEND_F0', '0RECV_B0', '0B0', '0REDUCE_GRAD', '0RESHARD']
        >>> to_rows(parse_rows([["0UNSHARD", "0F0", "0B0", "0REDUCE_GRAD", "0RESHARD"]]))
        [['0F0', '0B0']]
    """
    if format not in FLAVOURS:
        raise ParameterError("format", format, f"expected one of {', '.join(FLAVOURS)}")
    if schedule.placement.num_pipes != 1 or any(schedule.pipe_of_mb):
        raise ParameterError(
            "schedule",
            schedule.describe(),
            "PyTorch's format has one pipe (stage index -> one rank); a two-pipe schedule "
            "(chimera, dualpipe) cannot be written: --format json keeps it; dualpipev is DualPipe's one-pipe form",
        )
    if format == COMPUTE_ONLY:
        return [[format_action(a) for a in prog if not isinstance(a, (Comm, Marker))] for prog in schedule.programs]
    if any(isinstance(a, Comm) for prog in schedule.programs for a in prog):
        lowered = schedule
    else:
        from .torch_lowering import lower_like_pytorch

        lowered = lower_like_pytorch(schedule)
    return [[format_action(a) for a in prog if a is not None] for prog in lowered.programs]


def save_csv(schedule: Schedule, path: str | Path, format: str = COMPUTE_ONLY, flag: str = "-o") -> None:
    """Write a schedule as a PyTorch CSV (see :func:`to_rows`); rows end in ``\\n``. A path that
    cannot be written is refused naming ``flag``, the option that gave it.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> f = os.path.join(tempfile.mkdtemp(), "g.csv")
        >>> save_csv(build("gpipe", p=2, m=1), f)
        >>> open(f).read()
        '0F0,0B0\\n1F0,1B0\\n'
    """
    rows = to_rows(schedule, format)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    from ..core.files import atomic_write

    atomic_write(path, buf.getvalue(), flag)  # temporary name, then rename


def csv_text(schedule: Schedule, format: str = COMPUTE_ONLY) -> str:
    """The CSV text :func:`save_csv` would write.

    Example:
        >>> from ppverify.schedules import build
        >>> csv_text(build("1f1b", p=2, m=2))
        '0F0,0F1,0B0,0B1\\n1F0,1B0,1F1,1B1\\n'
    """
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(to_rows(schedule, format))
    return buf.getvalue()
