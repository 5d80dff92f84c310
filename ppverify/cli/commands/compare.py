"""``ppverify compare``: the same schedules at every abstraction level, side by side.

With no arguments it runs the built-in default comparison (the seed paper's seven schedules and
1F1B with a split backward, on five systems, two models and three microbatch counts) and prints
one table per configuration.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ...compare import DEFAULT_M, DEFAULT_MODELS, DEFAULT_SCHEDULES, DEFAULT_SYSTEMS, LEVELS
from ...compare.request import (
    PRESET_OPTIONS,
    compare_request,
    format_outcome,
    outcome_json,
    run_request,
)
from .. import Command
from ..common import print_json
from ..presets_args import add_preset_option_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Selections (schedules, systems, models, p, m, levels), solver budget and outputs.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["--schedules", "gpipe,1f1b", "-p", "4", "--levels", "slot,async"])
        >>> ns.schedules, ns.ps, ns.ms, ns.levels, ns.time_limit
        ('gpipe,1f1b', '4', None, 'slot,async', None)
    """
    parser.add_argument(
        "--schedules",
        help=f"comma-separated schedule labels or families (default: {','.join(e.label for e in DEFAULT_SCHEDULES)})",
    )
    parser.add_argument("--systems", help=f"comma-separated system presets (default: {','.join(DEFAULT_SYSTEMS)})")
    parser.add_argument("--models", help=f"comma-separated model presets (default: {','.join(DEFAULT_MODELS)})")
    parser.add_argument("-p", dest="ps", help="pipeline devices, comma-separated (default 4)")
    parser.add_argument(
        "-m", dest="ms", help=f"microbatches, comma-separated (default {','.join(map(str, DEFAULT_M))})"
    )
    parser.add_argument(
        "--levels",
        "--semantics",
        dest="levels",
        help=f"abstraction levels / semantics, comma-separated (default: {','.join(LEVELS)})",
    )
    add_preset_option_arguments(parser)
    parser.add_argument(
        "--measured",
        action="store_true",
        help="add the measured level: every schedule run in PyTorch's pipeline runtime on this "
        "machine, ops sleeping their durations (1 abstract unit = 10 ms); p <= 4 only",
    )
    parser.add_argument(
        "--measured-trace",
        nargs="+",
        metavar="DIR|FILE",
        help="the measured level read from a profiler trace (see import-trace) for the schedule it ran",
    )
    parser.add_argument("--costs", help="abstract mode: op costs per device share, e.g. F=1,B=2 (no presets)")
    parser.add_argument("--comm-delay", help="abstract mode: per-hop delays, comma-separated (default 0)")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,  # given or not: without the optimum level it is refused, not ignored
        help="CP-SAT work per solver point, in its deterministic seconds (default 0.5; the same table on a "
        "loaded machine; the wall clock stops a solve at 4x); larger points get a bound only",
    )
    parser.add_argument(
        "--max-opt-ops",
        type=int,
        default=None,
        help="solve the optimum only for schedules with at most this many ops (default 256)",
    )
    parser.add_argument(
        "--memory-cap",
        default=None,
        metavar="N|NMF|SIZE|none",
        help="the optimum level's per-device activation memory cap, the same for every schedule (the other "
        "levels are not capped): N activations of one microbatch on a device's whole share of layers (1F1B's "
        "first device peaks at p), NMF stage activations, a size such as 64GiB with presets, or none "
        "(unlimited memory) (default: each schedule's own peak)",
    )
    parser.add_argument("--out", help="write one row per (schedule, configuration, level) to .csv or .parquet")
    parser.add_argument("--json", action="store_true", help="print the rows (and findings) as JSON")
    parser.add_argument(
        "--findings",
        action="store_true",
        help="check the seed paper's findings (reproduced / not, under which semantics)",
    )
    parser.add_argument(
        "--no-verify", action="store_true", help="skip proving each schedule valid with the Z3 verifier (the Z3 column)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    from ..findings_map_cli import add_map_arguments

    add_map_arguments(parser)
    parser.add_argument(
        "--report", metavar="HTML", help="also write this run's self-contained HTML report (ppverify report)"
    )


def run(args: argparse.Namespace) -> int:
    """Run the comparison (or the findings, or their map) and print tables or JSON.

    Example:
        Every option is checked before anything runs:

        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["--levels", "slot,nosuch"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter levels=nosuch: unknown level; expected some of formula, slot, async, contention, optimum, measured
    """
    from ..findings_map_cli import check_map_options

    t0 = time.perf_counter()
    check_map_options(args)  # the map's options without --map, a report page with it
    selections = ("schedules", "systems", "models", "ps", "ms", "costs", "comm_delay")
    mapped = getattr(args, "map", False)  # the map sweeps its own grid and refuses these itself
    given: dict[str, Any] = {k: None if mapped else getattr(args, k) for k in selections}  # argparse's values
    given |= {k: getattr(args, k, None) for k in ("levels", "time_limit", "out", "max_opt_ops", "findings")}
    given |= {k: getattr(args, k, None) for k in ("memory_cap", "measured_trace")}
    req = compare_request(  # every option parsed and checked once, here; bad ones fail before anything runs
        **given,
        measured=getattr(args, "measured", False),
        options=tuple((k, getattr(args, k)) for k in PRESET_OPTIONS if getattr(args, k, None) is not None),
        verify=not args.no_verify,
        progress=not args.no_progress,
        keep_points=bool(args.report),
    )
    if args.report:
        from ...report.build import check_output

        check_output(args.report, "--report")
    if mapped:
        from ..findings_map_cli import run_map_command

        return run_map_command(args)
    outcome = run_request(req)
    if args.out:
        print(f"wrote {len(outcome.rows)} rows to {Path(args.out)}", file=sys.stderr)
    if args.json:
        print_json(outcome_json(outcome))
    else:
        print(format_outcome(outcome, time.perf_counter() - t0, args.out))
    if args.report:  # the HTML report of this run (ppverify report)
        from ...report.build import report_from_run

        extra = (getattr(args, k, None) for k in ("findings_map", "title", "max_chart_ops", "findings_json"))
        st = report_from_run(outcome.rows, list(outcome.points), args.report, outcome.findings, *extra)
        print(
            f"report written to {args.report} ({len(st.points)} charted points, {st.num_ops_drawn} ops)",
            file=sys.stderr if args.json else sys.stdout,
        )
    return 0


COMMAND = Command(
    "compare",
    "rank schedules under every abstraction level (formula, slot, async, contention, CP-SAT)",
    add_arguments,
    run,
    description=__doc__.replace("``", ""),
)
