"""``ppverify plot`` draws one of two things, a FAMILY|FILE's Gantt chart or ``--crossover``'s
makespan curves; each ignores the other's options, so an option of the other drawing is refused
rather than dropped without a word."""

from __future__ import annotations

import argparse

from ..core.errors import ParameterError

#: the family options of a Gantt chart's FAMILY (``dest``, as spelled on the command line)
_FAMILY_OPTIONS = {
    "fam_units": "--units",
    "fam_offset": "--offset",
    "fam_down": "--down",
    "fam_waves": "--waves",
    "fam_v": "--v",
    "fam_order": "--order",
}


def check_plot_mode(args: argparse.Namespace) -> None:
    """Refuse an option the chosen drawing would ignore: a FAMILY|FILE, its family options or
    ``--comm-delay`` with ``--crossover`` (which draws ``--schedules`` over a swept delay), and
    ``--schedules`` or ``--range`` on a Gantt chart.

    Example:
        >>> from ppverify.cli.commands.plot import add_arguments
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> check_plot_mode(parser.parse_args(["1f1b", "--crossover", "latency", "-o", "c.png"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedule=1f1b: --crossover draws the schedules of --schedules (default: the comparison's), not a FAMILY|FILE: give --schedules 1f1b, or leave out --crossover for its Gantt chart
    """
    if args.crossover:
        if args.schedule:
            raise ParameterError(
                "schedule",
                args.schedule,
                "--crossover draws the schedules of --schedules (default: the comparison's), not a FAMILY|FILE: "
                f"give --schedules {args.schedule}, or leave out --crossover for its Gantt chart",
            )
        for dest, flag in _FAMILY_OPTIONS.items():
            if getattr(args, dest, None) is not None:
                raise ParameterError(
                    flag.lstrip("-"),
                    getattr(args, dest),
                    f"{flag} shapes a FAMILY's Gantt chart; --crossover draws the labels of --schedules "
                    "(e.g. interleaved-v2, hanayo-w2)",
                )
        if args.comm_delay is not None:
            raise ParameterError(
                "comm-delay",
                args.comm_delay,
                "--crossover sweeps the per-hop delay itself (--range): leave --comm-delay out",
            )
    else:
        if not args.schedule:
            raise ParameterError(
                "schedule", None, "give a FAMILY|FILE for a Gantt chart, or --crossover latency|bandwidth"
            )
        for dest, flag in (("schedules", "--schedules"), ("xrange", "--range")):
            if getattr(args, dest, None) is not None:
                raise ParameterError(
                    dest if dest != "xrange" else "range",
                    getattr(args, dest),
                    f"{flag} applies with --crossover latency|bandwidth; a Gantt chart draws one FAMILY|FILE",
                )
