"""``ppverify compare``: the same schedules at every abstraction level, side by side.

With no arguments it runs the built-in default comparison (the seed paper's seven schedules and
1F1B with a split backward, on five systems, two models and three microbatch counts) and prints
one table per configuration.

Exit status: 0, or 1 when a row has status error (a schedule file that deadlocks, say: the table
is printed first, and one line on stderr counts those rows); 2 for a bad option.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ...compare.options import REPORT_OPTIONS, RUN_OPTIONS, SELECTION_OPTIONS, add_options, request_from_options
from ...compare.outcome import format_outcome, outcome_json
from ...compare.request import run_request
from ...compare.run import error_exit
from .. import Command
from ..common import print_json
from ..presets_args import add_preset_option_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Selections (schedules, systems, models, p, m, levels), solver budget and outputs (the
    options themselves are data in :mod:`ppverify.compare.options`).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["--schedules", "gpipe,1f1b", "-p", "4", "--levels", "slot,async"])
        >>> ns.schedules, ns.ps, ns.ms, ns.levels, ns.time_limit
        ('gpipe,1f1b', '4', None, 'slot,async', None)
    """
    from ..findings_map_cli import add_map_arguments

    add_options(parser, SELECTION_OPTIONS)
    add_preset_option_arguments(parser)
    add_options(parser, RUN_OPTIONS)
    add_map_arguments(parser)
    add_options(parser, REPORT_OPTIONS)


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
    from ...compare.optimum import wall_factor
    from ..findings_map_cli import check_map_options

    t0 = time.perf_counter()
    wall_factor()  # PPVERIFY_WALL_FACTOR checked once, now: a bad one would become error rows
    check_map_options(args)  # the map's options without --map, a report page with it
    mapped = getattr(args, "map", False)  # the map sweeps its own grid and refuses the selections itself
    req = request_from_options(vars(args), mapped)  # every option checked once; bad ones fail before any run
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
    return error_exit(outcome.rows, "ppverify compare")  # 1 when a point failed (status error)


COMMAND = Command(
    "compare",
    "rank schedules under every abstraction level (formula, slot, async, contention, CP-SAT)",
    add_arguments,
    run,
    description=__doc__.replace("``", ""),
)
