"""``ppverify report``'s options that a page would ignore (kept out of the command module so that
stays thin): with ``--from`` the rows are the file's, and a ``design`` result's page is its frontier."""

from __future__ import annotations

import argparse

from ..core.errors import ParameterError
from ..core.limits import MAX_NUMBER

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


def check_solver_budget(time_limit: float | None, max_opt_ops: int | None) -> None:
    """Refuse a solver budget the page cannot use, with compare's words: a ``--time-limit`` not
    > 0 (``nan`` included) or not finite (``inf``, ``1e300``: a solve that may never end), and a
    negative ``--max-opt-ops``. With ``--from`` each optimum chart is solved again under them, so
    a budget no solve can take dropped every optimum chart while the table kept its numbers.
    ``None``: left out (compare's defaults).

    Example:
        >>> check_solver_budget(None, None), check_solver_budget(0.5, 0)
        (None, None)
        >>> check_solver_budget(float("nan"), None)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter time-limit=nan: must be > 0 seconds
        >>> check_solver_budget(float("inf"), None)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter time-limit=inf: must be > 0 seconds and at most 1e+15 (a finite budget)
        >>> check_solver_budget(None, -5)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter max-opt-ops=-5: must be an integer >= 0 (0: no optimum is solved)
    """
    if time_limit is not None and not time_limit > 0:
        raise ParameterError("time-limit", time_limit, "must be > 0 seconds")
    if time_limit is not None and not time_limit <= MAX_NUMBER:
        raise ParameterError(
            "time-limit", time_limit, f"must be > 0 seconds and at most {MAX_NUMBER:g} (a finite budget)"
        )
    if max_opt_ops is not None and max_opt_ops < 0:
        raise ParameterError("max-opt-ops", max_opt_ops, "must be an integer >= 0 (0: no optimum is solved)")
