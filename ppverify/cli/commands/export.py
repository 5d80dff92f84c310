"""``ppverify export FAMILY|FILE --format torch-csv|torch-csv-comms|json [-o OUT]``.

Writes a schedule in a form other tools run unchanged:

* ``torch-csv``: PyTorch pipelining's ``compute_only`` CSV (``_PipelineScheduleRuntime._load_csv``,
  torchtitan's ``pipeline_parallel_schedule_csv``);
* ``torch-csv-comms``: the ``compute_comms`` flavour, lowered with SEND/RECV exactly as PyTorch's
  ``_add_send_recv`` would;
* ``json``: ppverify's schedule file (the default for an ``-o`` name ending in ``.json``).

The schedule is a registered family with its parameters, or any file ppverify reads (a CP-SAT
optimum saved as JSON, a PyTorch CSV to convert). Two-pipe schedules (chimera, dualpipe) have no
PyTorch form. Without ``-o`` the text goes to standard output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...core.errors import ParameterError
from ...core.schedule import Schedule
from ...io.json_format import ScheduleDocument
from .. import Command
from ..common import add_schedule_arguments, document_from_args

FORMATS = ("torch-csv", "torch-csv-comms", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule source, ``--format``, ``-o``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["zbv", "-p", "2", "--format", "json"])
        >>> ns.schedule, ns.p, ns.format, ns.output
        ('zbv', 2, 'json', None)
    """
    add_schedule_arguments(parser, placement=True)  # a text table's --placement too
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="output format (default: json for an -o name ending in .json, torch-csv for .csv or standard "
        "output; another -o name needs --format)",
    )
    parser.add_argument("-o", "--output", default=None, metavar="OUT", help="file to write (default: standard output)")


def export_text(schedule: Schedule | ScheduleDocument, fmt: str) -> str:
    """The exported text of a schedule (or of a schedule file's document) in one of :data:`FORMATS`.
    JSON keeps what a document carries besides the programs (costs, table, comment, communication):
    ``simulate`` of the copy then times it as it times the original.

    Example:
        >>> from ppverify.schedules import build
        >>> print(export_text(build("gpipe", p=2, m=2), "torch-csv"), end="")
        0F0,0F1,0B0,0B1
        1F0,1F1,1B0,1B1
    """
    doc = schedule if isinstance(schedule, ScheduleDocument) else ScheduleDocument(schedule)
    schedule = doc.schedule
    if fmt == "json":
        from ...io.json_format import dumps

        return dumps(schedule, doc.costs, doc.table, doc.comment, doc.comm)
    if fmt in ("torch-csv", "torch-csv-comms"):
        from ...io.torch_csv import COMPUTE_COMMS, COMPUTE_ONLY, csv_text

        return csv_text(schedule, COMPUTE_ONLY if fmt == "torch-csv" else COMPUTE_COMMS)
    raise ParameterError("format", fmt, f"expected one of {', '.join(FORMATS)}")


def export_format(fmt: str | None, output: str | None) -> str:
    """The format to write: ``fmt`` when given, else the one ``output``'s name says (``.json``:
    ppverify JSON; ``.csv`` and standard output: ``torch-csv``; another name needs ``fmt``). A format whose text
    the name contradicts (CSV in a ``.json`` file, JSON in a ``.csv`` one) is refused: every
    reader picks its parser by that name.

    Example:
        >>> export_format(None, "s.json"), export_format(None, "s.csv"), export_format(None, None)
        ('json', 'torch-csv', 'torch-csv')
        >>> export_format("torch-csv", "s.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter -o=s.json: a .json name for --format torch-csv would hold CSV: name it .csv, or give --format json
    """
    ext = Path(output).suffix.lower().lstrip(".") if output else ""
    if fmt is None and output and ext not in ("json", "csv"):  # x.yaml got CSV that no reader takes back
        raise ParameterError(
            "-o",
            output,
            "the format is read from the name (.json: ppverify JSON, .csv: PyTorch CSV); give --format "
            "to write another name",
        )
    if fmt is None:
        return "json" if ext == "json" else "torch-csv"
    if (ext == "json" and fmt != "json") or (ext == "csv" and fmt == "json"):
        holds, other = ("CSV", "csv") if fmt != "json" else ("JSON", "json")
        instead = "--format json" if fmt != "json" else "--format torch-csv"
        raise ParameterError(
            "-o", output, f"a .{ext} name for --format {fmt} would hold {holds}: name it .{other}, or give {instead}"
        )
    return fmt


def run_export(args: argparse.Namespace) -> int:
    """Build or load the schedule and write it.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run_export(parser.parse_args(["1f1b", "-p", "2", "-m", "2", "--format", "torch-csv-comms"]))
        0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD
        1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD
        0
    """
    fmt = export_format(args.format, args.output)  # before the build: a contradiction costs nothing
    doc = document_from_args(args)  # a JSON file's costs and communication travel with it
    schedule = doc.schedule
    named = 1 + max((op.mb for op in schedule.ops()), default=-1)
    if fmt != "json" and schedule.m > named:  # a table read with -m: the CSV cannot say it
        raise ParameterError(
            "m",
            schedule.m,
            f"a PyTorch CSV does not carry m, and the schedule's ops name {named} microbatches: "
            f"the file would hold m={named}; leave -m out, or give --format json",
        )
    if fmt != "json":  # a file PyTorch's runtime cannot run, or runs with crossed tensors, is not written
        from ...io.torch_rules import check_runnable, message_order_problem

        check_runnable(schedule, "; --format json keeps it as it is")
        crossed = message_order_problem(schedule) if fmt == "torch-csv-comms" else None
        if crossed is not None:
            raise ParameterError("schedule", schedule.describe(), crossed)
    text = export_text(doc, fmt)
    left = [w for w, v in (("costs", doc.costs), ("communication", doc.comm)) if v is not None]
    if fmt != "json" and left:  # simulate of the CSV would time it otherwise, without a word
        what = " and ".join(left)
        print(
            f"ppverify: note: {args.schedule}: a PyTorch CSV holds the order only; the file's {what} stay behind, "
            "so a command reading the CSV times it with its own options (--format json keeps them)",
            file=sys.stderr,
        )
    if args.output:
        from ...core.files import atomic_write

        atomic_write(args.output, text, "-o")
        print(f"wrote {args.output} ({fmt}, {schedule.describe()})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


COMMAND = Command(
    "export",
    "write a schedule as a PyTorch CSV (either flavour) or ppverify JSON",
    add_arguments,
    run_export,
    description=__doc__.split("\n\n", 1)[1] if __doc__ else "",
)
