"""The outputs of a command that prints one measured timeline (``measure``, ``import-trace``):
``--json``, ``--trace``, ``--frame``, ``--plot``, ``--no-table`` and ``--width``; the paths checked
before any work, the files written after it, and the lines saying where they went. The chart's
``--width`` is read the same way by ``simulate`` and ``optimize``."""

from __future__ import annotations

import argparse
from typing import Any

#: the file outputs, in the order they are written
FILE_OUTPUTS = ("trace", "frame", "plot")
#: the timeline chart's columns when ``--width`` is not given, and the most it takes (the chart
#: allocates devices x columns cells)
DEFAULT_WIDTH, MAX_WIDTH = 100, 10_000
WIDTH_HELP = f"columns of the timeline chart, and of the slot table (simulate; optimize --table) (default {DEFAULT_WIDTH}, at most {MAX_WIDTH})"


def chart_width(args: argparse.Namespace, chartless: tuple[str, ...] = ("no_table", "json")) -> int:
    """The chart's columns: ``--width`` checked (1..10000), or the default when not given; a
    ``--width`` beside an option that prints no chart (``chartless``) is refused, not ignored.

    Example:
        >>> chart_width(argparse.Namespace(width=None, no_table=False, json=False))
        100
        >>> chart_width(argparse.Namespace(width=60, no_table=True, json=False))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter width=60: --no-table prints no chart: drop --width
    """
    from ..core.errors import ParameterError

    if args.width is None:
        return DEFAULT_WIDTH
    if not 1 <= args.width <= MAX_WIDTH:
        raise ParameterError("width", args.width, f"must be in 1..{MAX_WIDTH} columns")
    check_width_shown(args, chartless)
    return int(args.width)


def check_width_shown(args: argparse.Namespace, hiding: tuple[str, ...], shown: str = "chart") -> None:
    """Refuse a given ``--width`` beside an option of ``hiding`` that prints no ``shown`` (the
    chart here, ``show``'s table there): it would be ignored.

    Example:
        >>> check_width_shown(argparse.Namespace(width=60, json=True), ("json",), "table")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter width=60: --json prints no table: drop --width
    """
    from ..core.errors import ParameterError

    for flag in hiding:
        if args.width is not None and getattr(args, flag, False):
            raise ParameterError("width", args.width, f"--{flag.replace('_', '-')} prints no {shown}: drop --width")


def add_timeline_outputs(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The ``output`` group with the options of the module docstring (more can be added to it).

    Example:
        >>> p = argparse.ArgumentParser()
        >>> _ = add_timeline_outputs(p)
        >>> ns = p.parse_args(["--plot", "g.png"])
        >>> ns.plot, ns.json, ns.width
        ('g.png', False, None)
    """
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    out.add_argument("--trace", metavar="OUT.json", default=None, help="write a Chrome/Perfetto trace")
    out.add_argument("--frame", metavar="OUT.csv", default=None, help="write every op and transfer as rows")
    out.add_argument("--plot", metavar="OUT.png", default=None, help="write a Gantt chart (.png, .svg, .pdf)")
    out.add_argument("--no-table", action="store_true", help="print the figures only")
    out.add_argument("--width", type=int, default=None, metavar="COLUMNS", help=WIDTH_HELP)
    return out


def add_measured_trace(group: Any) -> None:
    """``simulate --measured-trace DIR...``, its costs' unit said (``compare`` reads a unit as 10 ms).

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_measured_trace(p)
        >>> p.parse_args(["--measured-trace", "prof"]).measured_trace
        ['prof']
    """
    group.add_argument(
        "--measured-trace",
        nargs="+",
        metavar="DIR",
        help="also the step of these profiler traces, beside the simulated one (--costs read as seconds per "
        "device share, as measure sleeps them; without --costs a unit counts 10 ms, as in compare --measured-trace)",
    )


def check_timeline_outputs(args: argparse.Namespace) -> int:
    """Refuse an unwritable output path or a ``--width`` the chart cannot take now (bad input),
    not after the run; returns the chart's width. A command without one of the outputs (``simulate``
    draws no ``--plot``) has it checked as not given.

    Example:
        >>> check_timeline_outputs(argparse.Namespace(trace=None, frame=None, plot=None, width=None))
        100
    """
    from ..core.files import check_output_path
    from ..report.plots import check_plot_path

    width = chart_width(args)
    for flag in FILE_OUTPUTS:
        if getattr(args, flag, None):
            check_output_path(getattr(args, flag), f"--{flag}")
    trace = getattr(args, "trace", None)
    if trace and str(trace).lower().endswith((".csv", ".txt")):  # a reader would take it for a schedule
        from ..core.errors import ParameterError

        raise ParameterError("--trace", trace, "this writes a Chrome/Perfetto trace (JSON): name it .json")
    if getattr(args, "plot", None):  # its format too: measure ran the whole job, then refused x.txt
        check_plot_path(args.plot, "--plot")
    return width


def write_timeline_outputs(args: argparse.Namespace, timeline: Any, rep: dict[str, Any], memory: Any = None) -> None:
    """Write the requested files of ``timeline`` and name each in ``rep``; ``memory`` (a measured
    run's memory record, ``MeasureResult.memory``) adds its curves to the trace and the plot and
    its rows to the frame.

    Example:
        >>> rep = {}
        >>> write_timeline_outputs(argparse.Namespace(trace=None, frame=None, plot=None), None, rep)
        >>> rep
        {}
    """
    from ..core.trace import write_trace
    from ..views.run_report import write_frame

    curves = memory.curves if memory is not None else None
    for flag, write in (
        ("trace", lambda tl, path: write_trace(tl, path, measured_memory=curves)),
        ("frame", lambda tl, path: write_frame(tl, path, memory.to_frame() if memory is not None else None)),
        ("plot", lambda tl, path: _plot(tl, path, curves)),
    ):
        if getattr(args, flag):
            write(timeline, getattr(args, flag))
            rep[flag] = getattr(args, flag)


def written_lines(args: argparse.Namespace) -> list[str]:
    """``<flag> written to <path>`` for each file written.

    Example:
        >>> written_lines(argparse.Namespace(trace="t.json", frame=None, plot=None))
        ['trace         written to t.json']
    """
    return [f"{flag:<13} written to {getattr(args, flag)}" for flag in FILE_OUTPUTS if getattr(args, flag)]


def _plot(timeline: Any, path: str, curves: Any = None) -> None:
    from ..report.plots import gantt as plot_gantt

    plot_gantt(timeline, path, measured_memory=curves, option="--plot")
