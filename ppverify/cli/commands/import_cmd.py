"""``ppverify import FILE.csv``: read a PyTorch pipelining CSV, show it and verify it.

Shows how the file was read (flavour, ranks, stages, microbatches, the stage -> rank map that was
inferred or given, counts of compute/comm/marker/idle cells) and the checks ppverify runs:

* structure: every F and B (or I and W) of every stage and microbatch exactly once, on the rank
  holding its stage, nothing out of range;
* order: the ranks' lists run to completion in order (no rank waits for an op queued behind its
  own wait: cross-stage violations and deadlocks), via the ``slot`` engine;
* the Z3 verifier (:func:`ppverify.verify.verify`): the properties it proves and each violation
  with the minimal set of ops that explains it, under ``buffered`` or ``rendezvous``
  point-to-point semantics (``--comm-semantics``), with the file's SEND/RECV when it has them,
  and the two rules of PyTorch's runtime for a CSV or one of PyTorch's classes;
* runtime: where a file breaks one of those rules, that PyTorch's runtime accepts it and then
  fails the step or computes wrong gradients;
* optionally (``--torch``) PyTorch's own ``_validate_schedule`` verdict, to show what it misses.

Then the timing of a valid file: the ``slot`` table's makespan, bubble ratio and peaks, and
PyTorch's simulator step count (``torch`` semantics). Exit code 0 when valid, 1 when not.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...core.errors import ParameterError
from ...core.schedule import Schedule
from ...verify.import_audit import audit, audit_text, source_kind
from .. import Command
from ..common import DeprecatedAlias, add_cost_arguments, costs_from_args, print_json, warn_deprecated
from ..import_timing import import_timing


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``FILE``, ``--placement``, ``-m``, ``--stages``, costs, ``--torch``, ``--json``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["run.csv", "--placement", "v", "--comm-semantics", "rendezvous"])
        >>> ns.file, ns.placement, ns.m, ns.comm_semantics, ns.torch, ns.style
        ('run.csv', 'v', None, 'rendezvous', False, None)
    """
    parser.add_argument(
        "file",
        metavar="FILE.csv",
        nargs="?",
        default=None,
        help="a PyTorch pipelining CSV (compute_only or compute_comms)",
    )
    parser.add_argument(
        "--torch-class",
        default=None,
        metavar="NAME",
        help="instead of a file, build the action lists of one of PyTorch's schedule classes "
        "(GPipe, 1F1B, LoopedBFS, Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble, "
        "DualPipeV) with -p, -m and --v; needs torch",
    )
    parser.add_argument("-p", type=int, default=None, help="ranks for --torch-class (default 4)")
    parser.add_argument("--v", type=int, default=None, help="stages per rank for --torch-class")
    parser.add_argument(
        "--placement",
        default=None,
        help="stage -> rank map: linear, loop, v, or one rank per stage (e.g. 0,1,1,0); "
        "default: inferred from the rows",
    )
    parser.add_argument("-m", type=int, default=None, help="microbatches (default: largest index in the file + 1)")
    parser.add_argument(
        "--stages", type=int, default=None, help="number of stages (default: largest stage index in the file + 1)"
    )
    add_cost_arguments(parser)
    parser.add_argument(
        "--torch", action="store_true", help="also run PyTorch's own _validate_schedule (needs torch installed)"
    )
    parser.add_argument(
        "--comm-semantics",
        choices=("buffered", "rendezvous"),
        default="buffered",
        help="point-to-point semantics for the verifier's deadlock check: buffered (a SEND "
        "never blocks; default) or rendezvous (a SEND waits for its RECV, like NCCL)",
    )
    parser.add_argument(
        "--style",
        choices=("paper", "torch"),
        default=None,
        help="also print the slot table of a valid file in this layout: paper (device x tick) or torch "
        "(PyTorch's step x rank grid), as show --style",
    )
    parser.add_argument(
        "--table",
        dest="style",
        choices=("paper", "torch"),
        action=DeprecatedAlias,
        new="--style",
        help="deprecated name of --style",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def report(
    schedule: Schedule,
    costs_args: argparse.Namespace | None = None,
    with_torch: bool = False,
    comm_semantics: str = "buffered",
) -> dict[str, Any]:
    """Everything ``ppverify import`` prints, as a dict (``valid`` is the verdict); the costs are
    read from ``costs_args`` (``--costs``, default F=1,B=2,I=1,W=1; unit slots when None). See
    :func:`ppverify.verify.import_audit.audit`.

    Example:
        >>> from ppverify.schedules import build
        >>> report(build("gpipe", p=2, m=2))["valid"]
        True
    """
    costs = costs_from_args(costs_args, schedule) if costs_args is not None else None
    return audit(schedule, costs, with_torch, comm_semantics)[0]


def run_import(args: argparse.Namespace) -> int:
    """Load, check, print; 0 when valid, 1 when not.

    Example:
        A 1F1B CSV with two ranks and two microbatches, as PyTorch writes it:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "run.csv")
        >>> with open(path, "w") as f:
        ...     print("0F0,0F1,0B0,0B1", file=f)
        ...     print("1F0,1B0,1F1,1B1", file=f)
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run_import(parser.parse_args([path]))  # doctest: +ELLIPSIS
        file          run.csv p=2 m=2 format=compute_only placement=linear
        ...
        structure     ok: every F and B (or I+W) once, on its stage's rank
        order         ok: every rank's list runs to completion in order
        ...
        verdict       VALID
        0
    """
    from ...io import load_torch_file

    if args.json and args.style:  # as show: the JSON holds no table, so --style would be dropped
        raise ParameterError("style", args.style, "--json prints no table: drop --style")
    # the options of the other source were dropped unread
    misplaced = (("--placement", args.placement), ("--stages", args.stages)) if args.torch_class else ()
    for flag, value in misplaced or ((("-p", args.p), ("--v", args.v)) if args.file else ()):
        if value is not None:
            why = "reads a file, not --torch-class" if args.torch_class else "sizes --torch-class, not a file"
            raise ParameterError(flag.lstrip("-"), value, f"{flag} {why}: leave it out")
    if args.torch_class:
        from ...io.torch_interop import torch_schedule

        if args.file:
            raise ParameterError("file", args.file, "give a file or --torch-class, not both")
        p = args.p if args.p is not None else 4
        schedule = torch_schedule(args.torch_class, p, args.m if args.m is not None else p, args.v)
        if args.torch_class == "1F1B" and not args.json:
            from ...io.torch_interop import SCHEDULE_1F1B_BUG

            print(f"known bug     {SCHEDULE_1F1B_BUG}")
    elif args.file:
        schedule = load_torch_file(args.file, placement=args.placement, m=args.m, num_stages=args.stages)
    else:
        raise ParameterError("file", None, "give a PyTorch CSV file or --torch-class NAME")
    if args.torch and schedule.placement.num_pipes > 1:  # else to_rows' "cannot be written" error
        pipes = f"{schedule.describe()} has {schedule.placement.num_pipes} pipes"
        raise ParameterError("torch", True, f"PyTorch's validation takes one pipe; {pipes}: leave --torch out")
    kind = source_kind(args.file)  # None: a CSV or a PyTorch class, which PyTorch's runtime runs as it is
    costs, comm, used = import_timing(args, schedule)
    rep, tl = audit(schedule, costs, args.torch, args.comm_semantics, kind is None, comm)
    rep["format"] = rep["format"] or kind  # a JSON file or a table has no CSV flavour
    rep["costs"] = used
    if args.json:
        print_json(rep)
    else:
        print(audit_text(rep))
        if args.style and tl is not None:
            from ...engines.table import format_table

            print()
            print(format_table(tl, style=args.style))
    warn_deprecated(args, "ppverify import")  # after the output: a failed run keeps its one line
    return 0 if rep["valid"] else 1


COMMAND = Command(
    "import",
    "read a PyTorch pipelining CSV, show it and verify it",
    add_arguments,
    run_import,
    description=__doc__.split("\n\n", 1)[1] if __doc__ else "",
)
