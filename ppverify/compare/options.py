"""The options of ``ppverify compare`` as data the command adds to its parser, and the one function
that reads their parsed values into a :class:`~.request.CompareRequest` (kept here, in the library,
so the command module stays thin).

Each option is ``(flags, argparse keyword arguments)``; the command adds :data:`SELECTION_OPTIONS`,
then the preset options, then :data:`RUN_OPTIONS`, then the findings map's, then
:data:`REPORT_OPTIONS`, the order ``--help`` lists them in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .config import DEFAULT_M, DEFAULT_MODELS, DEFAULT_SCHEDULES, DEFAULT_SYSTEMS, LEVELS
from .request import PRESET_OPTIONS, CompareRequest, compare_request

#: an option: its flags and its ``add_argument`` keyword arguments
Option = tuple[tuple[str, ...], dict[str, Any]]

#: what is compared: schedules, systems, models, sizes and levels
SELECTION_OPTIONS: tuple[Option, ...] = (
    (
        ("--schedules",),
        dict(
            help="comma-separated schedule labels or families "
            f"(default: {','.join(e.label for e in DEFAULT_SCHEDULES)})"
        ),
    ),
    (("--systems",), dict(help=f"comma-separated system presets (default: {','.join(DEFAULT_SYSTEMS)})")),
    (("--models",), dict(help=f"comma-separated model presets (default: {','.join(DEFAULT_MODELS)})")),
    (("-p",), dict(dest="ps", help="pipeline devices, comma-separated (default 4)")),
    (("-m",), dict(dest="ms", help=f"microbatches, comma-separated (default {','.join(map(str, DEFAULT_M))})")),
    (
        ("--levels", "--semantics"),
        dict(dest="levels", help=f"abstraction levels / semantics, comma-separated (default: {','.join(LEVELS)})"),
    ),
)

#: the measured level, abstract mode, the solver's budget and the outputs
RUN_OPTIONS: tuple[Option, ...] = (
    (
        ("--measured",),
        dict(
            action="store_true",
            help="add the measured level: every schedule run in PyTorch's pipeline runtime on this "
            "machine, ops sleeping their durations (1 abstract unit = 10 ms); p <= 4 only",
        ),
    ),
    (
        ("--measured-trace",),
        dict(
            nargs="+",
            metavar="DIR|FILE",
            help="the measured level read from a profiler trace (see import-trace) for the schedule it ran",
        ),
    ),
    (("--costs",), dict(help="abstract mode: op costs per device share, e.g. F=1,B=2 (no presets)")),
    (("--comm-delay",), dict(help="abstract mode: per-hop delays, comma-separated (default 0)")),
    (
        ("--time-limit",),
        dict(
            type=float,
            default=None,  # given or not: without the optimum level it is refused, not ignored
            help="CP-SAT work per solver point, in its deterministic seconds (default 0.5; the same table on a "
            "loaded machine; the wall clock stops a solve at 4x); larger points get a bound only",
        ),
    ),
    (
        ("--max-opt-ops",),
        dict(
            type=int,
            default=None,
            help="solve the optimum only for schedules with at most this many ops (default 256)",
        ),
    ),
    (
        ("--memory-cap",),
        dict(
            default=None,
            metavar="N|NMF|SIZE|none",
            help="the optimum level's per-device activation memory cap, the same for every schedule (the other "
            "levels are not capped): N activations of one microbatch on a device's whole share of layers (1F1B's "
            "first device peaks at p) or NMF stage activations, both counted on the linear pipeline of p devices "
            "(whose stage is a device's share), so every schedule gets the same bytes; a size such as 64GiB with "
            "presets; or none (unlimited memory) (default: each schedule's own peak)",
        ),
    ),
    (("--out",), dict(help="write one row per (schedule, configuration, level) to .csv or .parquet")),
    (("--json",), dict(action="store_true", help="print the rows (and findings) as JSON")),
    (
        ("--findings",),
        dict(action="store_true", help="check the seed paper's findings (reproduced / not, under which semantics)"),
    ),
    (
        ("--no-verify",),
        dict(action="store_true", help="skip proving each schedule valid with the Z3 verifier (the Z3 column)"),
    ),
    (("--no-progress",), dict(action="store_true", help="no progress bar on stderr")),
)

#: the run's HTML page
REPORT_OPTIONS: tuple[Option, ...] = (
    (
        ("--report",),
        dict(metavar="HTML", help="also write this run's self-contained HTML report (ppverify report)"),
    ),
)

#: the selections the findings map sweeps itself (``--map`` refuses them on its own)
SELECTIONS = ("schedules", "systems", "models", "ps", "ms", "costs", "comm_delay")


def add_options(group: Any, options: tuple[Option, ...]) -> None:
    """Add ``options`` (:data:`SELECTION_OPTIONS`, :data:`RUN_OPTIONS`, :data:`REPORT_OPTIONS`) to a
    parser or an argument group.

    Example:
        >>> import argparse
        >>> parser = argparse.ArgumentParser()
        >>> add_options(parser, SELECTION_OPTIONS)
        >>> ns = parser.parse_args(["-p", "4,8", "--semantics", "slot"])
        >>> ns.ps, ns.levels, ns.schedules
        ('4,8', 'slot', None)
    """
    for flags, kwargs in options:
        group.add_argument(*flags, **kwargs)


def request_from_options(values: Mapping[str, Any], mapped: bool = False) -> CompareRequest:
    """The :class:`~.request.CompareRequest` of the parsed options ``values`` (``vars(args)``: a
    name missing reads as not given), every option parsed and checked once by
    :func:`~.request.compare_request` so a bad one fails before anything runs. ``mapped`` (the
    findings map runs) drops the :data:`SELECTIONS`, which the map sweeps itself; the points are
    kept when ``report`` asks for a page.

    Example:
        >>> req = request_from_options({"ps": "2", "ms": "4", "systems": "dgx-h100", "levels": "slot",
        ...                             "tp": 2, "no_progress": True, "report": "run.html"})
        >>> req.systems, req.ps, req.ms, req.levels, req.options, req.progress, req.keep_points
        (('dgx-h100',), (2,), (4,), ('slot',), (('tp', 2),), False, True)
        >>> request_from_options({"levels": "slot", "time_limit": 1.0})
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter time-limit=1.0: budgets the CP-SAT optimum, a level this run leaves out: add optimum to --levels, or leave it out
    """
    given: dict[str, Any] = {k: None if mapped else values.get(k) for k in SELECTIONS}
    for k in ("levels", "time_limit", "out", "max_opt_ops", "memory_cap", "measured_trace"):
        given[k] = values.get(k)
    return compare_request(
        **given,
        findings=bool(values.get("findings")),
        measured=bool(values.get("measured")),
        options=tuple((k, values[k]) for k in PRESET_OPTIONS if values.get(k) is not None),
        verify=not values.get("no_verify"),
        progress=not values.get("no_progress"),
        keep_points=bool(values.get("report")),
    )
