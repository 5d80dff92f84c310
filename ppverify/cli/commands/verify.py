"""``ppverify verify FAMILY|FILE``: prove a schedule correct with Z3, or explain why not.

Prints VALID with the properties proven, or INVALID with every violation in words and the
minimal set of ops (a minimized Z3 unsat core) that explains it. Exit code 0 valid, 1 invalid,
2 bad input. Memory caps are in the cost model's unit: activations per device share for
``--costs`` (one microbatch over a whole device share is 1), bytes with ``--system/--model``, where
a size such as ``40GiB`` also works (parsed as ``optimize --memory-cap`` parses it). A timing
claim is timed as ``simulate`` times it (collectives per ``--sync``/``--dp-allreduce``, a saved
file's settings): the least T ``--makespan-le`` accepts is ``simulate``'s makespan.
"""

from __future__ import annotations

import argparse
import textwrap

from ...verify import COMM_SEMANTICS, properties, verify
from .. import Command
from ..common import add_cost_arguments, add_schedule_arguments, check_nonnegative, print_json, schedule_from_args
from ..file_settings import add_collective_arguments, timing_from_file
from ..presets_args import add_preset_arguments, preset_context_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule, costs/presets, the properties' parameters and output options."""
    add_schedule_arguments(parser)
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
        metavar="N|SIZE",
        help="activation memory cap per device: a number in the cost model's unit (share units "
        "for --costs, bytes with --system/--model) or, with --system/--model, a size such "
        "as 40GiB or 80GB",
    )
    g.add_argument(
        "--makespan-le",
        type=float,
        metavar="T",
        help="timing claim: the programs and their collectives can finish by T under the cost model, "
        "as simulate times them (answered with a witness timeline or a proof that none exists)",
    )
    add_collective_arguments(g)  # --sync, --dp-allreduce: the timing claim's collectives
    g.add_argument(
        "--comm-semantics",
        choices=COMM_SEMANTICS,
        default="buffered",
        help="point-to-point semantics for deadlock freedom: buffered (sends never block; "
        "default) or rendezvous (NCCL-style blocking send/recv)",
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
    """Verify and print; 0 valid, 1 invalid."""
    from ...limits import time_limit

    check_nonnegative("makespan-le", args.makespan_le)
    # an interrupted proof is no verdict: exit 2, never 0 or 1; Z3's simplifier ignores interrupts,
    # so the process is stopped outright at 8 % past the limit
    hard_stop = "ppverify verify" if getattr(args, "_own_process", False) else None
    with time_limit(args.time_limit, hard_stop=hard_stop):
        schedule = schedule_from_args(args)
        timing = timing_from_file(args, schedule, preset_context_from_args(args, schedule))
        ctx = timing.ctx
        cap = memory_cap(args.memory_cap, ctx.costs.memory_unit)
        report = verify(
            schedule,
            ctx.costs,
            ctx.comm,
            memory_cap=cap,
            makespan_le=args.makespan_le,
            comm_semantics=args.comm_semantics,
            group=not args.ungrouped,
            max_violations=max(1, args.max_violations),
            sync=timing.sync,  # the collectives as simulate takes them (options, saved file)
            dp_allreduce=timing.dp_allreduce,
        )
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.to_text())
    return 0 if report.valid else 1


def memory_cap(text: str | None, unit: str) -> float | None:
    """The cap in the cost model's unit: a size (``40GiB``) when the model counts bytes, else a
    plain number (the one size parser :func:`ppverify.sizes.parse_size`, as ``optimize``).

    Example:
        >>> memory_cap("40GiB", "bytes"), memory_cap("2.5", "activations")
        (42949672960.0, 2.5)
    """
    from ...errors import ParameterError
    from ...sizes import parse_size

    if text is None:
        return None
    size = parse_size(text, "memory-cap")
    if size.is_bytes and unit != "bytes":
        raise ParameterError(
            "memory-cap",
            text,
            f"a size needs --system/--model (bytes); this cost model counts {unit}, so give a plain number",
        )
    check_nonnegative("memory-cap", float(size.value))
    return float(size.value)


COMMAND = Command(
    "verify",
    "prove a schedule correct with Z3, or name every violation with a minimal core",
    add_arguments,
    run,
    description=__doc__ or "",
)
