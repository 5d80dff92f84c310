"""What a schedule file says about its own timing: a ppverify JSON file's cost model (``show
--save``, ``optimize --save``) and communication and collectives (``optimize --save``), and a text
table's op widths as drawn. Every command that times such a file (``simulate``, ``verify``,
``plot``, ``import``...) uses them unless the command line says otherwise, so it reproduces the
value the file was saved or drawn with. A file is read by its content, whatever its name.

Precedence: ``--system/--model`` replace both; ``--costs`` replaces the cost model (and a stored
system, whose times are seconds); ``--comm-delay`` replaces the communication; ``--sync`` and
``--dp-allreduce`` replace the stored collectives. A ``--costs`` that frees activations otherwise
than the stored cost model is noted on stderr (:func:`memory_model_notes`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.comm import FixedDelay
from ..core.costs import CostModel
from ..core.errors import ScheduleFileError
from ..core.schedule import Schedule
from ..io.json_format import ScheduleDocument
from .presets_args import PresetContext


def add_collective_arguments(group: argparse._ArgumentGroup, sync_default: str | None = None) -> None:
    """``--sync`` and ``--dp-allreduce``: the collectives that end a step, as ``simulate`` and
    ``verify --makespan-le`` take them (unset, a saved file's own settings or the defaults);
    ``optimize`` and ``gap`` read no saved settings and pass ``sync_default="eager"``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_collective_arguments(p.add_argument_group("x"))
        >>> a = p.parse_args(["--dp-allreduce"]); a.sync, a.dp_allreduce
        (None, 2)
    """
    from ..core.comm import SYNC_MODES

    saved = "" if sync_default is not None else ", or what a saved file says"
    group.add_argument(
        "--sync",
        choices=SYNC_MODES,
        default=sync_default,
        help="weight-gradient all-reduce between stage replicas (Chimera): eager (as soon as "
        f"a stage's last backward ends; default{saved}), after-flush, or none",
    )
    group.add_argument(
        "--dp-allreduce",
        type=int,
        nargs="?",
        const=2,
        default=None,
        metavar="N",
        help="end the step with a data-parallel gradient all-reduce among N pipeline replicas "
        f"(N defaults to 2 when the flag is given; 0: none{saved})",
    )


@dataclass(frozen=True)
class Timing:
    """Everything an engine run needs besides the schedule, and where it came from."""

    ctx: PresetContext
    sync: str = "eager"
    dp_allreduce: int = 0
    #: which settings came from the file (``costs``, ``comm``; ``drawn``: a text table's widths), for the report
    from_file: tuple[str, ...] = ()
    #: what the command line replaced that changes the result's meaning (printed on stderr)
    notes: tuple[str, ...] = ()


def timing_from_file(args: argparse.Namespace, schedule: Schedule, ctx: PresetContext) -> Timing:
    """Apply the file's stored settings to ``ctx`` where the arguments leave them open.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.json_format import save_json
        >>> from ppverify.io.json_comm import CommSettings
        >>> s = build("gpipe", p=2, m=2)
        >>> f = save_json(s, os.path.join(tempfile.mkdtemp(), "s.json"), CostModel.abstract(s.placement, F=1, B=2),
        ...               comm=CommSettings(FixedDelay(1.5), "after-flush"))
        >>> ns = argparse.Namespace(schedule=str(f), costs=None, comm_delay=None, sync=None, dp_allreduce=0)
        >>> t = timing_from_file(ns, s, PresetContext(CostModel.unit(s.placement), FixedDelay(0.0)))
        >>> t.ctx.comm.delay, t.ctx.costs.duration["B"], t.sync, t.from_file
        (1.5, (2.0, 2.0), 'after-flush', ('costs', 'comm'))
    """
    given = FileOverrides(
        bool(getattr(args, "costs", None)),
        getattr(args, "comm_delay", None) is not None,
        getattr(args, "sync", None),
        getattr(args, "dp_allreduce", None),
    )
    return file_timing(str(getattr(args, "schedule", "") or ""), given, schedule, ctx)


@dataclass(frozen=True)
class FileOverrides:
    """What the command line says over a saved file's timing: whether ``--costs`` and
    ``--comm-delay`` were given, and ``--sync`` and ``--dp-allreduce`` (``None``: not given; an
    explicit 0 replaces a file's all-reduce).

    Example:
        >>> FileOverrides().sync is None
        True
    """

    costs: bool = False
    comm_delay: bool = False
    sync: str | None = None
    dp_allreduce: int | None = None


def file_timing(
    path: str, given: FileOverrides, schedule: Schedule, ctx: PresetContext, unsniffed: str | None = None
) -> Timing:
    """:func:`timing_from_file` with typed values: the settings the file at ``path`` stores, read
    by its content whatever its name (:func:`stored_document`), applied to ``ctx`` where ``given``
    leaves them open: a ppverify JSON file's costs and communication, a text table's widths as
    drawn (``show`` times it so). ``ctx`` as it is for a family, a CSV, or in preset mode.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.costs import CostModel
        >>> s = build("gpipe", p=2, m=2)
        >>> file_timing("gpipe", FileOverrides(sync="none"), s, PresetContext(CostModel.unit(s.placement), FixedDelay(0.0))).sync
        'none'
    """
    sync, dp = given.sync, given.dp_allreduce
    stored = stored_document(path, schedule, unsniffed)
    if stored is None:
        return Timing(ctx, sync or "eager", dp or 0)
    kind, doc = stored
    if ctx.preset_mode:  # the presets time it; the file's collectives stay where not replaced
        kept = doc.comm if kind == "json" else None
        if kept is None:
            return Timing(ctx, sync or "eager", dp or 0)
        return Timing(ctx, sync or kept.sync, kept.dp_allreduce if dp is None else dp)
    if kind == "table":  # timed as drawn, one tick per cell, unless --costs say otherwise
        if given.costs or doc.table is None:
            return Timing(ctx, sync or "eager", dp or 0)
        from ..views.table_cells import drawn_costs

        ctx = replace(ctx, costs=drawn_costs(schedule, doc.table), base_costs=None)
        return Timing(ctx, sync or "eager", dp or 0, ("drawn",))
    from ..io.json_comm import charged_comm

    used = []
    notes: tuple[str, ...] = ()
    if doc.costs is not None and given.costs:
        notes = memory_model_notes(path, doc.costs, ctx.costs)
    if doc.costs is not None and not given.costs:
        if doc.costs.num_stages != schedule.num_stages:
            raise ScheduleFileError(
                path, "costs", f"describes {doc.costs.num_stages} stages; the placement has {schedule.num_stages}"
            )
        ctx = replace(ctx, costs=doc.costs, base_costs=None)
        used.append("costs")
    stored_comm = doc.comm
    if stored_comm is not None:
        comm = None if given.comm_delay else charged_comm(stored_comm, "costs" in used)
        if comm is not None:
            system = None if isinstance(comm, FixedDelay) else comm
            ctx = replace(ctx, comm=comm, system=system)
            used.append("comm")
        sync = sync or stored_comm.sync
        dp = stored_comm.dp_allreduce if dp is None else dp  # an explicit 0 is no all-reduce
    return Timing(ctx, sync or "eager", dp or 0, tuple(used), notes)


def stored_document(path: str, schedule: Schedule, unsniffed: str | None = None) -> tuple[str, ScheduleDocument] | None:
    """What the schedule file at ``path`` carries beside ``schedule``, read by its content as its
    loader read it (:func:`~ppverify.io.content_kind`; ``unsniffed``: ``import`` reads a file whose
    content does not say as a CSV), whatever its name: ``("json", document)`` with its costs and
    communication, ``("table", document)`` with a text table's grid; ``None`` for a family or a CSV.

    Example:
        >>> import os, tempfile
        >>> from ppverify.schedules import build
        >>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
        >>> with open(path, "w") as f:
        ...     print("tick 0 1 2\\ndev 0 0F0 0B0 0B0", file=f)
        >>> kind, doc = stored_document(path, build("gpipe", p=1, m=1))
        >>> kind, doc.table.cells
        ('table', (('0F0', '0B0', '0B0'),))
        >>> stored_document("gpipe", build("gpipe", p=1, m=1)) is None
        True
    """
    from pathlib import Path

    from ..core.files import read_text
    from ..io import content_kind, looks_like_file

    if not path or not looks_like_file(path) or not Path(path).is_file():  # a family, or --torch-class
        return None
    text = read_text(path)
    kind = content_kind(text, path, unsniffed)
    if kind == "json":
        from ..io.json_format import loads_document

        return kind, loads_document(text, path)
    if kind == "table":
        from ..io.table_text import read_text_table

        return kind, ScheduleDocument(schedule, table=read_text_table(text, path)[1])
    return None


def memory_model_notes(path: str, saved: CostModel, given: CostModel) -> tuple[str, ...]:
    """A note when ``--costs`` (``given``) frees activations otherwise than the cost model saved in
    the file at ``path``: ``optimize --save`` stores its memory model (the zero-bubble paper's
    ``I`` frees part of an activation), and abstract ``--costs`` let ``W`` free all of it, so the
    same schedule's peaks can rise above the cap it was saved under.

    Example:
        >>> from ppverify.core.placement import linear
        >>> pl = linear(2)
        >>> saved = CostModel.abstract(pl, F=1, I=1, W=1, freed_by_I=0.25)
        >>> memory_model_notes("s.json", saved, CostModel.abstract(pl, F=1, I=1, W=1))  # doctest: +ELLIPSIS
        ("s.json: --costs replaces the file's cost model, whose I frees 25 % of an activation ...",)
        >>> memory_model_notes("s.json", saved, saved)
        ()
    """
    if tuple(saved.freed_by_I) == tuple(given.freed_by_I):
        return ()

    def share(model: CostModel) -> str:
        shares = sorted(set(model.freed_by_I))
        return f"{shares[0]:.0%}".replace("%", " %") if len(shares) == 1 else "a varying part"

    return (
        f"{path}: --costs replaces the file's cost model, whose I frees {share(saved)} of an activation "
        f"(W the rest); with the given costs I frees {share(given)}, so peaks can differ from the ones "
        "the file was saved with (leave out --costs to use the file's)",
    )


def print_notes(notes: Sequence[str]) -> None:
    """Print each note (:attr:`Timing.notes`, :func:`memory_model_notes`) on stderr, one line each.

    Example:
        >>> import contextlib, io
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     print_notes(["s.json: --costs replaces ..."])
        >>> err.getvalue()
        'ppverify: note: s.json: --costs replaces ...\\n'
    """
    for note in notes:
        print(f"ppverify: note: {note}", file=sys.stderr)
