"""``ppverify verify FAMILY|FILE``: prove a schedule correct with Z3, or explain why not.

Prints VALID with the properties proven, or INVALID with every violation in words and the
minimal set of ops (a minimized Z3 unsat core) that explains it. Exit code 0 valid, 1 invalid,
2 bad input. ``--memory-cap`` is read as every command reads it (``docs/memory.md``): a plain
number counts activations of one microbatch on a device's whole share of layers, ``8MF`` stage
activations, a size such as ``40GiB`` bytes (with ``--system/--model``). A timing claim is timed
as ``simulate`` times it (collectives per ``--sync``/``--dp-allreduce``, a saved file's settings):
the least T ``--makespan-le`` accepts is ``simulate``'s makespan. A PyTorch CSV is also held to the
two rules of PyTorch's runtime (``pytorch-loss-order``, ``pytorch-message-order``; a crossed file's
SEND/RECV matched in posting order, as the runtime matches them), and a compute_only one is checked
with its SEND/RECV where PyTorch's lowering places them, as ``import`` checks it (a family or a
ppverify JSON file: the derived policy); any other one-pipe schedule whose last stage runs its
forwards out of microbatch order keeps its verdict and gets a note. A CSV given an ``-m`` above
the microbatches it names is read at that ``m``, its missing ops reported (INVALID), as ``import``
reads it.
"""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import replace

from ...core.errors import ParameterError
from ...core.memory_cap import MEMORY_CAP_HELP
from ...io.json_format import ScheduleDocument
from ...io.torch_csv import MicrobatchesBeyondFile
from ...verify import COMM_SEMANTICS, properties, verify
from .. import Command
from ..common import (
    ScheduleSource,
    add_cost_arguments,
    add_schedule_arguments,
    check_file_options,
    check_nonnegative,
    print_json,
    read_document,
)
from ..file_settings import add_collective_arguments
from ..presets_args import add_preset_arguments, refuse_sync_without_replicas
from ..run_request import request_timing, run_request


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule, costs/presets, the properties' parameters and output options.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["1f1b", "-p", "4", "--memory-cap", "4"])
        >>> ns.schedule, ns.memory_cap, ns.comm_semantics, ns.max_violations
        ('1f1b', '4', 'buffered', 20)
    """
    add_schedule_arguments(parser, placement=True)  # a text table's --placement too
    add_cost_arguments(parser)
    add_preset_arguments(parser)
    parser.epilog = "properties, checked in this order:\n" + textwrap.indent(properties.listing(), "  ")
    g = parser.add_argument_group("properties")
    g.add_argument(
        "--list-properties", action=_ListProperties, help="print the properties verify checks, in order, and exit"
    )
    g.add_argument(
        "--memory-cap",
        default=None,
        metavar="N|NMF|SIZE|none",
        help=MEMORY_CAP_HELP,
    )
    g.add_argument(
        "--makespan-le",
        type=float,
        metavar="T",
        help="timing claim: the programs and their collectives can finish by T under the cost model, "
        "as simulate times them (answered with a witness timeline or a proof that none exists). T is in "
        "the costs' unit: seconds with presets (--system/--model; simulate prints ms: 379.860 ms is "
        "--makespan-le 0.37986), units with abstract costs (--costs, --comm-delay)",
    )
    add_collective_arguments(g)  # --sync, --dp-allreduce: the timing claim's collectives
    g.add_argument(
        "--comm-semantics",
        choices=COMM_SEMANTICS,
        default="buffered",
        help="point-to-point semantics for deadlock freedom: buffered (sends never block; "
        "default) or rendezvous (NCCL-style blocking send/recv). A timing claim (--makespan-le) is timed "
        "by the async engine with buffered sends either way, and says so under rendezvous",
    )
    g.add_argument(
        "--ungrouped",
        action="store_true",
        help="rendezvous: post each SEND/RECV on its own instead of grouping consecutive ones (batch_isend_irecv)",
    )
    g.add_argument(
        "--max-violations", type=int, default=20, help="stop looking for order violations after this many (default 20)"
    )
    g.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="give up (exit 2, no verdict) after this many seconds, loading included",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the verdict as JSON")


class _ListProperties(argparse.Action):
    """``--list-properties``: print the registry and exit 0, as ``--help`` does (no schedule needed)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=str(kwargs.get("help", "")))

    def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object, option_string=None) -> None:
        print(properties.listing())
        parser.exit(0)


def run(args: argparse.Namespace) -> int:
    """Verify and print; 0 valid, 1 invalid.

    Example:
        A two-device file whose device 0 runs a backward before its forward:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "swapped.csv")
        >>> with open(path, "w") as f:
        ...     print("0B0,0F0,0F1,0B1", file=f)
        ...     print("1F0,1B0,1F1,1B1", file=f)
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args([path]))  # doctest: +ELLIPSIS
        INVALID: swapped.csv p=2 m=2 format=compute_only placement=linear
        ...
          VIOLATED dependencies: device 0 runs 0B0 before 0F0, which it needs [backward after its forward; core: 0B0 0F0]
        ...
        1
    """
    from ...core.memory_cap import resolve_memory_cap
    from ...core.time_limit import time_limit

    check_nonnegative("makespan-le", args.makespan_le)
    refuse_unused_options(args)
    # an interrupted proof is no verdict: exit 2, never 0 or 1; Z3's simplifier ignores interrupts,
    # so the process is stopped outright at 8 % past the limit
    with time_limit(args.time_limit, hard_stop="ppverify verify" if getattr(args, "_own_process", False) else None):
        request = run_request(args)  # costs and cap read once, before the build
        refuse_unread_costs(args)
        doc, kind = _read(request.source)  # by its content; a text table with its --placement
        schedule = doc.schedule
        refuse_sync_without_replicas(request.sync, schedule.placement, schedule.pipe_of_mb)  # else unread
        timing = request_timing(request, schedule)
        spec = request.memory_cap
        cap = None if spec is None else resolve_memory_cap(spec, timing.ctx.costs, schedule.placement)
        report = verify(
            schedule,
            timing.ctx.costs,
            timing.ctx.comm,
            memory_cap=None if cap is None else cap.value,
            makespan_le=args.makespan_le,
            comm_semantics=args.comm_semantics,
            group=not args.ungrouped,
            max_violations=args.max_violations,
            sync=timing.sync,  # the collectives as simulate takes them (options, saved file)
            dp_allreduce=timing.dp_allreduce,
            pytorch=kind == "csv",  # PyTorch's runtime rules are properties of its own files only
        )
    if cap is not None and cap.unlimited:  # `none` was given: not "no memory cap given"
        why = "--memory-cap none: unlimited memory, nothing to check"
        report = replace(report, unchecked=tuple((p, why if p == "memory" else w) for p, w in report.unchecked))
    if args.json:
        # time_unit: of T, the witness's start times and the statements' times (s with presets)
        out = dict(report.to_dict(), time_unit=timing.ctx.costs.time_unit)
        print_json(dict(out, **({"memory_cap": cap.to_dict()} if cap is not None else {})))
    else:
        print(report.to_text())
        if cap is not None and cap.two_units and not cap.unlimited:  # the proof states one unit; add the other
            print(f"  memory {cap.describe()}")
    return 0 if report.valid else 1


def _read(source: ScheduleSource) -> tuple[ScheduleDocument, str]:
    """:func:`read_document`, but a CSV given an ``-m`` above the microbatches it names is read at
    that ``m``: verify reports the missing ops (INVALID), as ``import`` does, where a command that
    runs the step refuses it.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "m1.csv")
        >>> with open(path, "w") as f:
        ...     print("0F0,0B0", file=f)
        >>> _read(ScheduleSource(path, 4, 2))[0].schedule.m
        2
    """
    try:
        return read_document(source)
    except MicrobatchesBeyondFile as exc:
        if exc.schedule is None:
            raise
        return ScheduleDocument(check_file_options(source, exc.schedule)), "csv"


def refuse_unused_options(args: argparse.Namespace) -> None:
    """Refuse an option this run would ignore: the transfer times and collectives of a timing
    claim without ``--makespan-le`` (and :func:`refuse_unread_costs`), ``--ungrouped`` outside rendezvous semantics (a buffered SEND
    never blocks), and ``--max-violations`` below 1 (it once read as 1 without a word).

    Example:
        >>> ns = argparse.Namespace(max_violations=20, ungrouped=False, comm_semantics="buffered",
        ...     makespan_le=None, comm_delay=1.0, sync=None, dp_allreduce=0)
        >>> refuse_unused_options(ns)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter comm-delay=1.0: only a timing claim uses it (the transfer times and collectives of --makespan-le T), and this run makes none: give --makespan-le T, or leave it out
    """
    if args.max_violations < 1:
        raise ParameterError("max-violations", args.max_violations, "must be >= 1 (order violations to find)")
    if args.ungrouped and args.comm_semantics != "rendezvous":  # a buffered SEND never blocks: nothing to group
        why = "--ungrouped posts each rendezvous SEND/RECV on its own: it changes nothing under buffered semantics"
        raise ParameterError("comm-semantics", args.comm_semantics, f"{why}; give rendezvous, or leave --ungrouped out")
    timing_only = {"comm-delay": args.comm_delay, "sync": args.sync, "dp-allreduce": args.dp_allreduce or None}
    for flag, value in timing_only.items():
        if value is not None and args.makespan_le is None:
            why = "only a timing claim uses it (the transfer times and collectives of --makespan-le T), and this run makes none"
            raise ParameterError(flag, value, f"{why}: give --makespan-le T, or leave it out")


def refuse_unread_costs(args: argparse.Namespace) -> None:
    """Refuse ``--costs``, ``--system`` and ``--model`` without a timing claim or a ``--memory-cap``:
    durations time a claim and a model's bytes size a cap; a verdict on order reads neither (called
    after the request read ``--costs``, so a bad one is named for its own rule first).

    Example:
        >>> refuse_unread_costs(argparse.Namespace(costs="F=1,B=3", makespan_le=None, memory_cap=None))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=F=1,B=3: only a timing claim or a memory cap uses it (--makespan-le T, --memory-cap), and this run gives neither: give one, or leave it out
    """
    if args.makespan_le is not None or getattr(args, "memory_cap", None) is not None:
        return
    for flag in ("costs", "system", "model"):
        value = getattr(args, flag, None)
        if value is not None:
            why = "only a timing claim or a memory cap uses it (--makespan-le T, --memory-cap), and this run gives neither"
            raise ParameterError(flag, value, f"{why}: give one, or leave it out")


COMMAND = Command(
    "verify",
    "prove a schedule correct with Z3, or name every violation with a minimal core",
    add_arguments,
    run,
    description=__doc__ or "",
    ends_on_signal=True,  # nothing half-written: a signal ends it within seconds, whatever Z3 does
)
