"""The cost options every schedule command shares: ``--costs`` (abstract op costs per device
share) and ``--comm-delay``, read once and checked before any schedule is built."""

from __future__ import annotations

import argparse
import math
from typing import Any

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


def costs_beside_trace(ctx: Any, given_costs: bool) -> Any:
    """The timing of ``simulate --measured-trace`` (a ``PresetContext``), in seconds as the trace's
    step is: seconds already (presets, a file's preset costs) as they are; ``--costs`` (and
    ``--comm-delay``) as seconds per device share, as ``measure`` sleeps them; else abstract units (the
    default ``F=1,B=2,I=1,W=1``, a file's own) at :data:`~ppverify.compare.measured.UNIT_S` (10 ms) each, the fixed delay with them,
    as ``compare --measured-trace`` counts them (before, a unit was read as 1 s: 9 s beside a 97 ms step).

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.placement import linear
        >>> from ppverify.systems.preset_models import PresetContext
        >>> ctx = PresetContext(CostModel.abstract(linear(2)), FixedDelay(0.5))
        >>> c = costs_beside_trace(ctx, given_costs=False)
        >>> c.costs.duration["B"], c.costs.time_unit, c.costs.label, c.comm.delay
        ((0.02, 0.02), 's', 'F=0.01,B=0.02,I=0.01,W=0.01', 0.005)
        >>> c = costs_beside_trace(ctx, given_costs=True)
        >>> c.costs.duration["B"], c.costs.time_unit, c.comm.delay
        ((2.0, 2.0), 's', 0.5)
    """
    from dataclasses import replace

    from ..compare.measured import UNIT_S
    from ..core.comm import FixedDelay
    from ..core.costs import in_seconds

    costs = ctx.costs
    if costs.time_unit == "s":
        return ctx
    if given_costs:
        return replace(ctx, costs=replace(costs, time_unit="s"))
    seconds = replace(in_seconds(costs, UNIT_S), label=_scaled_label(costs.label))
    comm = FixedDelay(ctx.comm.delay * UNIT_S) if isinstance(ctx.comm, FixedDelay) else ctx.comm
    return replace(ctx, costs=seconds, comm=comm)


def _scaled_label(label: str) -> str:
    """``F=1,B=2`` as seconds at 10 ms a unit (``F=0.01,B=0.02``; decimal, so 0.3 x 0.01 reads
    0.003); a label that names no costs says the scale instead."""
    from decimal import Decimal

    from ..compare.measured import UNIT_S
    from ..core.costs import number_text, parse_costs

    try:
        costs = parse_costs(label)
    except ParameterError:
        return f"{label} at {UNIT_S * 1e3:g} ms a unit"
    unit = Decimal(repr(UNIT_S))
    return ",".join(f"{k}={number_text(float(Decimal(repr(v)) * unit))}" for k, v in costs.items())
