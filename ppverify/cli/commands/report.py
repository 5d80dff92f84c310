"""``ppverify report``: one self-contained HTML page that shows a study.

Either runs a comparison (the same options as ``ppverify compare``) or reads the rows a run already
wrote (``--from`` a ``compare --out/--json`` file or a ``sweep`` store), then writes one HTML file:
the comparison tables with every level side by side, each schedule's Gantt charts at every level on
one zoomable time axis with transfers and memory, the Z3 verdicts (an INVALID schedule's minimal
core outlined) and the findings. Every script, style and datum is inlined: it opens offline.
"""

from __future__ import annotations

import argparse

from .. import Command
from . import compare


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The compare options, the output and the results file to read instead of running.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["--from", "results.csv", "--title", "study"])
        >>> ns.from_file, ns.output, ns.title, ns.levels
        ('results.csv', 'ppverify-report.html', 'study', None)
    """
    from ...report.study import DEFAULT_MAX_CHART_OPS

    compare.add_arguments(parser)
    g = parser.add_argument_group("report")
    g.add_argument(
        "-o", "--output", default="ppverify-report.html", help="HTML file to write (default ppverify-report.html)"
    )
    g.add_argument(
        "--from",
        dest="from_file",
        metavar="RESULTS",
        help="build the page from a results file (.csv/.parquet of compare --out, .json of compare --json, "
        ".jsonl sweep store) instead of running; timelines are recomputed from its rows",
    )
    g.add_argument(
        "--findings-json", metavar="JSON", help="findings to show: the output of `ppverify compare --findings --json`"
    )
    g.add_argument(
        "--findings-map",
        metavar="PNG|DIR",
        help="findings map image(s) to embed: a .png, or the folder of `compare --findings --map --plots DIR`",
    )
    g.add_argument("--title", help="page title")
    g.add_argument(
        "--max-chart-ops",
        type=int,
        default=DEFAULT_MAX_CHART_OPS,
        help=f"ops embedded with charts over all points and levels (default {DEFAULT_MAX_CHART_OPS}); "
        "further points appear in the tables only",
    )


def run(args: argparse.Namespace) -> int:
    """Run the comparison with a report, or build the report from a results file.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["--from", "results.csv", "--max-chart-ops", "0"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter max-chart-ops=0: must be >= 1
    """
    from ...compare.optimum import wall_factor
    from ...core.errors import ParameterError
    from ..findings_map_cli import check_map_options
    from ..report_options import check_report_options, check_solver_budget

    wall_factor()  # PPVERIFY_WALL_FACTOR checked once, before any row is solved (as compare does)

    if args.map:
        raise ParameterError(
            "map",
            True,
            "the findings map is not a report page: run `ppverify compare --findings --map --plots DIR`, "
            "then `ppverify report --findings-map DIR` to embed its plots",
        )
    check_map_options(args)  # the map's other options: nothing here reads them
    if args.max_chart_ops < 1:
        raise ParameterError("max-chart-ops", args.max_chart_ops, "must be >= 1")
    from ...design.output import is_design_result

    design_file = bool(args.from_file) and is_design_result(args.from_file)
    defaults = argparse.ArgumentParser()
    add_arguments(defaults)
    check_report_options(args, design_file, vars(defaults.parse_args([])))
    # with or without --from (whose optimum charts are solved again under it): refused alike
    check_solver_budget(args.time_limit, args.max_opt_ops)
    from ...report.build import check_output

    # every page this command writes (a run's, a results file's, a design's) is -o's: named so
    check_output(args.output, "-o")
    if not args.from_file:
        args.report = args.output
        return compare.run(args)
    if design_file:  # a `design` result: its frontier page
        from ...design.output import load_design
        from ...design.page import write_design_page

        write_design_page(load_design(args.from_file), args.output, args.title, "-o")
        print(f"report written to {args.output} (the design's frontier)")
        return 0
    from ...report.build import report_from_file

    st = report_from_file(
        args.from_file,
        args.output,
        args.time_limit,
        args.max_opt_ops,
        args.findings_json,
        args.findings_map,
        args.title,
        args.max_chart_ops,
    )
    print(
        f"report written to {args.output} ({len(st.rows)} rows, {len(st.points)} charted points, "
        f"{st.num_ops_drawn} ops)"
    )
    return 0


COMMAND = Command(
    "report",
    "write one self-contained HTML page of a study (tables, Gantt charts, verdicts, findings)",
    add_arguments,
    run,
    description=__doc__.replace("``", ""),
)
