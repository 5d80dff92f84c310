"""The cost options every schedule command shares: ``--costs`` (abstract op costs per device
share) and ``--comm-delay``, read once and checked before any schedule is built."""

from __future__ import annotations

import argparse
import math

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule


def check_costs_first(args: argparse.Namespace) -> None:
    """Refuse a bad ``--costs`` before the schedule is built or read: a build can take a minute,
    and ``--costs F=-1`` was refused only after it. The text is read once (:func:`parsed_costs`).

    Example:
        >>> check_costs_first(argparse.Namespace(costs="F=1,B=2"))
        >>> check_costs_first(argparse.Namespace(costs="F=-1"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=F=-1: F must be > 0, finite and at most 1e+15
    """
    parsed_costs(args)


def parsed_costs(args: argparse.Namespace) -> tuple[tuple[str, float], ...] | None:
    """``--costs`` read into ``(kind, cost)`` pairs, ``None`` when not given; ``args`` is left as
    parsed. A command reads it once, at its boundary, into its request (as
    :func:`ppverify.cli.run_request.run_request` does), and passes the pairs on.

    Example:
        >>> ns = argparse.Namespace(costs="F=1,B=2")
        >>> parsed_costs(ns), ns.costs
        ((('F', 1.0), ('B', 2.0)), 'F=1,B=2')
    """
    from ..core.costs import parse_costs

    value = getattr(args, "costs", None)
    if isinstance(value, str):
        value = tuple(parse_costs(value).items())
    return value or None


def add_cost_arguments(parser: argparse.ArgumentParser) -> None:
    """``--costs F=1,B=2`` (per device share; default ``F=1,B=2,I=1,W=1``) and ``--comm-delay``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_cost_arguments(parser)
        >>> ns = parser.parse_args(["--costs", "F=1,I=1,W=1", "--comm-delay", "0.5"])
        >>> ns.costs, ns.comm_delay
        ('F=1,I=1,W=1', 0.5)
        >>> vars(parser.parse_args([]))
        {'costs': None, 'comm_delay': None}
    """
    parser.add_argument(
        "--costs",
        default=None,
        help="abstract op costs per device share, e.g. F=1,B=2 or F=1,I=1,W=1 (default F=1,B=2,I=1,W=1: "
        "a split backward costs what a full one does)",
    )
    parser.add_argument(
        "--comm-delay",
        type=float,
        default=None,
        help="every cross-device transfer takes this fixed time (abstract units)",
    )


def costs_from_args(args: argparse.Namespace, schedule: Schedule) -> CostModel:
    """The cost model named by ``--costs`` (the default abstract costs ``F=1,B=2,I=1,W=1`` when
    absent: a split backward ``I + W`` costs what a full ``B`` does).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=2)
        >>> costs_from_args(argparse.Namespace(costs="F=1,B=2"), s).duration["B"]
        (2.0, 2.0)
        >>> costs_from_args(argparse.Namespace(costs=None), s).label
        'F=1,B=2,I=1,W=1'
    """
    given = parsed_costs(args)
    if not given:
        return CostModel.abstract(schedule.placement)
    return CostModel.abstract(schedule.placement, **dict(given))


def check_nonnegative(name: str, value: float | None) -> None:
    """Reject negative, non-finite or absurdly large numeric options (``1e308`` would overflow
    every sum into inf and NaN results).

    Example:
        >>> check_nonnegative("comm-delay", 1e308)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter comm-delay=1e+308: must be a finite number >= 0 and <= 1e+15
    """
    from ..core.limits import MAX_NUMBER

    if value is not None and (not math.isfinite(value) or value < 0 or value > MAX_NUMBER):
        raise ParameterError(name, value, f"must be a finite number >= 0 and <= {MAX_NUMBER:g}")
