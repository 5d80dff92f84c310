"""``ppverify show``'s output options checked before the build, and its ``--save`` written after
it: the table's ``--width`` and ``--style`` refused where nothing prints a table, a ``--save`` name
that no reader would take back as ppverify JSON refused, and the file written with the
communication the table was timed with."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError
from .common import TABLE_SUFFIXES, check_nonnegative
from .timeline_outputs import check_width_shown


def check_show_options(args: argparse.Namespace) -> None:
    """Refuse, before the build, what ``show`` would ignore or could not write back: a negative
    ``--comm-delay`` or ``--width``, ``--width`` or ``--style torch`` beside ``--json`` or
    ``--no-table`` (no table is printed), a ``--save`` name that is a folder, in a missing folder,
    or ends in ``.csv``/``.txt``/``.table`` (every reader would take it for a PyTorch CSV or a text
    table, not the ppverify JSON it holds).

    Example:
        >>> ns = argparse.Namespace(comm_delay=None, width=None, style="torch", json=True, no_table=False, save=None)
        >>> check_show_options(ns)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter style=torch: --json prints no table: drop --style
        >>> check_show_options(argparse.Namespace(comm_delay=None, width=None, style="paper", json=False,
        ...                                       no_table=True, save="s.txt"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --save=s.txt: this writes ppverify JSON, and a .txt name tells every reader a text table: name it .json
    """
    check_nonnegative("comm-delay", args.comm_delay)
    if args.width is not None and args.width < 0:
        raise ParameterError("width", args.width, "must be >= 0 (0: never wrap)")
    check_width_shown(args, ("no_table", "json"), "table")  # the width wraps the printed table
    for flag in ("json", "no_table"):
        if args.style != "paper" and getattr(args, flag, False):
            raise ParameterError("style", args.style, f"--{flag.replace('_', '-')} prints no table: drop --style")
    if args.save:  # before the build (a minute for a large schedule), not after it
        from ..core.files import check_output_path

        suffix = Path(args.save).suffix.lower()
        if suffix in TABLE_SUFFIXES:
            raise ParameterError(
                "--save",
                args.save,
                f"this writes ppverify JSON, and a {suffix} name tells every reader a text table: name it .json",
            )
        check_output_path(args.save, "--save", json_file=True)


def save_shown(args: argparse.Namespace, doc: Any, res: Any) -> None:
    """Write ``show --save``: the schedule, the costs it was timed with and its table; with
    ``--comm-delay`` the delay instead of the table (a table with communication charged is not the
    costs' table), so that ``simulate`` of the file times it as asked; a file's own communication
    is kept where it was charged, else (a system in seconds beside ``--costs``, ``--comm-delay 0``)
    saved as no delay, keeping its sync and all-reduce, as ``optimize FILE --costs ... --save`` does.

    Example:
        >>> import json, os, tempfile
        >>> from ppverify.io.json_format import ScheduleDocument
        >>> from ppverify.schedules import build
        >>> from ppverify.views.table_report import time_table
        >>> doc = ScheduleDocument(build("gpipe", p=2, m=1))
        >>> out = os.path.join(tempfile.mkdtemp(), "s.json")
        >>> save_shown(argparse.Namespace(save=out), doc, time_table(doc, None, 0.5))
        >>> saved = json.load(open(out))
        >>> saved["comm"]["delay"], "table" in saved
        (0.5, False)
    """
    from ..core.comm import FixedDelay
    from ..core.files import atomic_write
    from ..io.json_comm import CommSettings
    from ..io.json_format import dumps

    comm = doc.comm
    kept = (comm.sync, comm.dp_allreduce) if comm is not None else ()
    if res.comm_source != "file" and (comm is not None or res.comm_delay):
        # what the table was timed with, as optimize FILE --save stores it: the command line's
        # delay (it wins, as in simulate), or none where the file's was not charged (a system
        # beside --costs: its seconds are not the costs' units, and readers would charge it)
        comm = CommSettings(FixedDelay(float(res.comm_delay)), *kept)
    grid = None if res.comm is not None else res.grid  # a table with communication charged is no costs' table
    atomic_write(args.save, dumps(doc.schedule, res.costs, grid, doc.comment, comm), "--save")
