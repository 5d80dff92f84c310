"""``ppverify report``'s options that a page would ignore (kept out of the command module so that
stays thin): with ``--from`` the rows are the file's, and a ``design`` result's page is its frontier."""

from __future__ import annotations

import argparse

from ..core.errors import ParameterError

#: what only a comparison run reads (``dest``: the flag as the user spells it): with ``--from`` the
#: rows come from the file, so these would be ignored
RUN_ONLY = {
    "schedules": "--schedules",
    "systems": "--systems",
    "models": "--models",
    "ps": "-p",
    "ms": "-m",
    "levels": "--levels",
    "mfu": "--mfu",
    "microbatch_size": "--microbatch-size",
    "seq_len": "--seq-len",
    "tp": "--tp",
    "ranks_per_node": "--ranks-per-node",
    "measured": "--measured",
    "measured_trace": "--measured-trace",
    "costs": "--costs",
    "comm_delay": "--comm-delay",
    "memory_cap": "--memory-cap",
    "out": "--out",
    "json": "--json",
    "findings": "--findings",
    "no_verify": "--no-verify",
}
#: what the page of comparison rows reads and a design's frontier page does not
ROWS_ONLY = {
    "time_limit": "--time-limit",
    "max_opt_ops": "--max-opt-ops",
    "findings_json": "--findings-json",
    "findings_map": "--findings-map",
    "max_chart_ops": "--max-chart-ops",
}


def check_report_options(args: argparse.Namespace, design_file: bool, default: dict[str, object]) -> None:
    """Refuse, with ``--from``, an option the page would ignore: a comparison's own (the rows are
    the file's) and, for a ``design`` result, the comparison page's (its page is the frontier).
    ``--report`` is refused either way: this command writes ``-o``. ``default`` holds the
    parser's defaults (an option differing from its default was given).

    Example:
        >>> from ppverify.cli.commands.report import add_arguments
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> default = vars(parser.parse_args([]))
        >>> check_report_options(parser.parse_args(["--from", "r.csv", "--time-limit", "5"]), False, default)
        >>> check_report_options(parser.parse_args(["--from", "r.csv", "-p", "8"]), False, default)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter p=8: -p chooses what a comparison runs; with --from the rows are r.csv's: leave it out, or leave out --from to run a new comparison
        >>> check_report_options(parser.parse_args(["--from", "d.json", "--time-limit", "5"]), True, default)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter time-limit=5.0: --time-limit shapes a comparison's page; d.json is a design result, whose page is its frontier: leave it out
    """
    if args.report is not None:
        raise ParameterError(
            "report", args.report, f"this command writes its page to -o/--output: give -o {args.report}"
        )
    if not args.from_file:
        return
    for dest in [d for d in (*RUN_ONLY, *ROWS_ONLY) if getattr(args, d, None) != default[d]]:
        if dest in RUN_ONLY:
            raise ParameterError(
                RUN_ONLY[dest].lstrip("-"),
                getattr(args, dest),
                f"{RUN_ONLY[dest]} chooses what a comparison runs; with --from the rows are {args.from_file}'s: "
                "leave it out, or leave out --from to run a new comparison",
            )
        if design_file:
            raise ParameterError(
                ROWS_ONLY[dest].lstrip("-"),
                getattr(args, dest),
                f"{ROWS_ONLY[dest]} shapes a comparison's page; {args.from_file} is a design result, whose page "
                "is its frontier: leave it out",
            )
