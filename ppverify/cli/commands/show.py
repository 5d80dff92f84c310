"""``ppverify show FAMILY|FILE``: a schedule's idealized table and its metrics.

Prints the schedule's description and placement, the ``slot`` table (paper layout or PyTorch's
step x rank grid), the makespan, the bubble ratio with its convention, per-device busy/idle time
and peak activations, and, when the family has a closed form, the formula's values and whether the
table agrees. ``--json`` prints the same as one JSON object; ``--save`` writes the schedule (with
its costs and table) as a ppverify JSON file that ``show`` and every other command read back.
"""

from __future__ import annotations

import argparse
import shutil
import sys

from ...core.memory_cap import resolve_memory_cap
from ...io.table_text import STYLES
from ...views.memory_units import timeline_cap_check
from ...views.table_report import file_formula, formula_contradicted, table_json, table_text, time_table
from .. import Command
from ..common import add_cost_arguments, add_schedule_arguments, file_faults, print_json, read_document
from ..file_settings import memory_model_notes, print_notes
from ..run_request import run_request
from ..show_options import check_show_options, save_shown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule source (a text table's ``--placement`` too), costs, ``--style``, ``--json``, ``--save``, ``--no-table``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["1f1b", "-p", "2", "--style", "torch"])
        >>> ns.schedule, ns.style, ns.save, ns.width
        ('1f1b', 'torch', None, None)
    """
    add_schedule_arguments(parser, placement=True)
    add_cost_arguments(parser)
    parser.add_argument(
        "--style",
        choices=STYLES,
        default="paper",
        help="table layout: paper (device x tick) or torch (PyTorch's step x rank grid)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument(
        "--save",
        metavar="OUT.json",
        default=None,
        help="also write the schedule, its costs and its table as a ppverify JSON file",
    )
    parser.add_argument("--no-table", action="store_true", help="print the metrics only")
    parser.add_argument(
        "--memory-cap",
        default=None,
        metavar="N|NMF|none",  # tests/docs/test_newcomer_path.py reads this spelling; SIZE is in the help
        # not MEMORY_CAP_HELP: show has no --system/--model; a size needs a file's preset costs (bytes)
        help="per-device activation memory cap: N activations of one microbatch on a device's whole share of "
        "layers (1F1B's first device peaks at p), NMF stage activations, a size such as 40GiB for a file "
        "saved with --system/--model costs (they count bytes), or none (exit 1 over it)",
    )
    parser.add_argument(
        "--width",
        type=int,
        default=None,
        metavar="COLUMNS",
        help="wrap a wider paper table into blocks of ticks that fit (default: the terminal's "
        "width, 100 when unknown; 0: never wrap)",
    )


def run(args: argparse.Namespace) -> int:
    """Build or load the schedule, time it as a table, print (or save) the result.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["gpipe", "-p", "2", "-m", "2", "--width", "0"]))  # doctest: +ELLIPSIS
        schedule      gpipe p=2 m=2
        ...
        tick    0   1   2   3   4   5   6   7   8
        dev 0 0F0 0F1   .   .   . 0B0 0B0 0B1 0B1
        dev 1   . 1F0 1F1 1B0 1B0 1B1 1B1   .   .
        <BLANKLINE>
        makespan      9 units (9 ticks)
        ...
        0
    """
    check_show_options(args)  # --width, --style, --save: before the build, not after it
    request = run_request(args)  # costs and cap read once, before the build
    doc, kind = read_document(request.source)  # a file by its content: a CSV named .txt is no table
    text_table = kind == "table"
    # --comm-delay, else the file's own communication, charged per column as simulate --semantics slot does
    with file_faults(request.source, doc.schedule):  # a file's missing op or deadlock names the file
        res = time_table(doc, request.costs, request.settings.comm_delay, args.schedule, text_table)
    if kind != "family":
        res = file_formula(res)
    if doc.costs is not None and request.costs:  # --costs over a file's own cost model (file_settings.py)
        print_notes(memory_model_notes(args.schedule, doc.costs, res.costs))
    spec = request.memory_cap
    cap = None if spec is None else resolve_memory_cap(spec, res.costs, doc.schedule.placement)
    check = None if cap is None else timeline_cap_check(res.timeline, cap)
    code = 1 if check and check["over"] else 0
    if args.save:
        save_shown(args, doc, res)
    if args.json:
        out = table_json(res)
        if args.save:
            out["saved"] = str(args.save)
        if check is not None:
            out["memory_cap"], out["over_memory_cap"] = check["cap"], check["over"]
        print_json(out)
        return code
    width = shutil.get_terminal_size((100, 24)).columns if args.width is None else args.width
    print(table_text(res, args.style, width, table=not args.no_table))
    if check is not None:
        print(f"\nmemory        {check['line']}")
    if formula_contradicted(res):
        print("note: the table contradicts the formula's claim (see 'formula vs table')", file=sys.stderr)
    if args.save:
        print(f"\nsaved         {args.save}")
    return code


COMMAND = Command(
    "show",
    "print a schedule's idealized table and its metrics",
    add_arguments,
    run,
    description=(
        "Print a schedule's idealized (slot) table and its metrics: makespan, bubble ratio (idle/total),\n"
        "per-device busy/idle time and peak activations, and the family's closed form next to the table.\n"
        "FAMILY|FILE: a registered family (ppverify list), a ppverify JSON file, a PyTorch CSV, or a text\n"
        "table (.txt: the paper layout or PyTorch's printed step x rank grid; see --placement)."
    ),
)
