"""The x axis of a crossover plot (makespan against per-hop latency or link bandwidth): the
values swept, from a ``LO,HI[,N]`` range, in the units the timing models take."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import ParameterError

#: default ranges: preset latency in µs, preset bandwidth in GB/s, abstract per-hop delay
DEFAULT_RANGES = {"latency": (1.0, 1e4, 13), "bandwidth": (1.0, 1e3, 13), "abstract": (0.0, 2.0, 9)}


def parse_range(text: str | None, default: tuple[float, float, int]) -> tuple[float, float, int]:
    """``LO,HI`` or ``LO,HI,N`` (``default`` when not given), checked: ``0 <= LO < HI <= 1e15``
    and ``2 <= N <= 1000`` (N simulations per schedule).

    Example:
        >>> parse_range("1,100", (1.0, 10.0, 5)), parse_range(None, (1.0, 10.0, 5))
        ((1.0, 100.0, 5), (1.0, 10.0, 5))
        >>> parse_range("5,1", (1.0, 10.0, 5))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter range=5,1: need 0 <= LO < HI <= 1e15 and 2 <= N <= 1000
        >>> parse_range("1,100,5,7", (1.0, 10.0, 5))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter range=1,100,5,7: expected LO,HI or LO,HI,N (two or three numbers), e.g. 1,1000,13
    """
    if not text:
        return default
    parts = text.split(",")
    if len(parts) not in (2, 3):  # a fourth number would be dropped unread
        raise ParameterError("range", text, "expected LO,HI or LO,HI,N (two or three numbers), e.g. 1,1000,13")
    try:
        lo, hi = float(parts[0]), float(parts[1])
        n = int(parts[2]) if len(parts) > 2 else default[2]
    except (ValueError, IndexError):
        raise ParameterError(
            "range", text, "expected LO,HI or LO,HI,N (N a whole number of points), e.g. 1,1000,13"
        ) from None
    if not (0 <= lo < hi <= 1e15) or not 2 <= n <= 1000:
        raise ParameterError("range", text, "need 0 <= LO < HI <= 1e15 and 2 <= N <= 1000")
    return lo, hi, n


def axis_values(axis: str, text: str | None, preset: bool) -> np.ndarray:
    """The x values of a crossover plot along ``axis`` (``latency`` or ``bandwidth``). With
    presets they are log-spaced and given in µs (latency, returned in seconds) or GB/s
    (bandwidth, returned in bytes/s); abstract costs have only a latency axis, the per-hop delay,
    linearly spaced.

    Example:
        >>> [round(float(x) * 1e6, 9) for x in axis_values("latency", "1,100,3", preset=True)]
        [1.0, 10.0, 100.0]
        >>> axis_values("latency", None, preset=False).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]
    """
    if preset:
        lo, hi, n = parse_range(text, DEFAULT_RANGES[axis])
        if lo <= 0:
            raise ParameterError("range", text, "a log-spaced preset range needs LO > 0")
        return np.logspace(np.log10(lo), np.log10(hi), n) * (1e-6 if axis == "latency" else 1e9)
    if axis != "latency":
        raise ParameterError(
            "crossover",
            axis,
            "abstract costs only have a latency (per-hop delay) axis; give --system and --model for bandwidth",
        )
    lo, hi, n = parse_range(text, DEFAULT_RANGES["abstract"])
    return np.linspace(lo, hi, n)


def swept_config(cfg: Any, axis: str) -> str:
    """The configuration ``cfg`` (a :class:`~ppverify.compare.Config`) named without the value
    the crossover sweeps along ``axis``: its label would claim one latency (or delay c) or
    bandwidth that the x axis varies.

    Example:
        >>> from ppverify.compare import Config
        >>> swept_config(Config(4, 8, costs=(("F", 1.0), ("B", 2.0))), "latency")
        'p=4 m=8 F=1,B=2'
    """
    what = (
        f"{cfg.label_parts()}, {axis} varied"
        if not cfg.abstract
        else ",".join(f"{k}={v:g}" for k, v in cfg.costs or ())
    )
    return f"p={cfg.p} m={cfg.m} {what}"


def axis_unit(axis: str, preset: bool) -> tuple[str, float]:
    """The unit ``--range`` takes along ``axis`` and the factor from the curves' values (seconds,
    bytes/s, or abstract units) to it.

    Example:
        >>> axis_unit("latency", True), axis_unit("bandwidth", True), axis_unit("latency", False)
        (('us', 1000000.0), ('GB/s', 1e-09), ('units', 1.0))
    """
    if not preset:
        return "units", 1.0
    return ("us", 1e6) if axis == "latency" else ("GB/s", 1e-9)


def crossover_title(cfg: Any, axis: str, semantics: str) -> str:
    """The title of a crossover plot of the configuration ``cfg`` (a
    :class:`~ppverify.compare.Config`): the swept axis replaces the configuration's own latency
    (or delay c) or bandwidth, so the configuration is named without it and the title does not
    claim one value of what the x axis varies.

    Example:
        >>> from ppverify.compare import Config
        >>> crossover_title(Config(4, 8, costs=(("F", 1.0), ("B", 2.0))), "latency", "async")
        'p=4 m=8 F=1,B=2: makespan vs per-hop delay under async (x = order swaps)'
    """
    return (
        f"{swept_config(cfg, axis)}: makespan vs {'per-hop delay' if cfg.abstract else axis} "
        f"under {semantics} (x = order swaps)"
    )
