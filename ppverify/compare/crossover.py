"""Makespan of several schedules as one network parameter varies, and where their ranking crosses.

``axis="latency"`` scales the per-hop latency, ``axis="bandwidth"`` the per-direction bandwidth of
every link tier of a preset system (both tiers set to the same value, so the curve isolates the
parameter); in abstract mode the per-hop delay ``c`` is the latency axis.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import pandas as pd

from ..core.comm import CommModel, FixedDelay
from ..core.errors import ParameterError
from .config import Config, ScheduleEntry
from .resolve import build_entry, resolve

AXES = ("latency", "bandwidth")


def _vary(comm: CommModel, axis: str, value: float) -> CommModel:
    if isinstance(comm, FixedDelay):
        if axis != "latency":
            raise ParameterError("axis", axis, "abstract costs (a fixed per-hop delay) only have a latency axis")
        return FixedDelay(value)
    from ..systems.system import LinkTier, System

    if not isinstance(comm, System):  # a preset's system is the only other model a config resolves to
        raise TypeError(f"cannot vary the links of a {type(comm).__name__} communication model")

    def vary(t: LinkTier) -> LinkTier:
        return LinkTier(t.name, value, t.bandwidth_Bps) if axis == "latency" else LinkTier(t.name, t.latency_s, value)

    return replace(comm, intra=None if comm.intra is None else vary(comm.intra), inter=vary(comm.inter))


def makespan_curves(
    entries: Sequence[ScheduleEntry],
    config: Config,
    axis: str,
    values: Collection[float],  # a list or a NumPy array (axis_values)
    semantics: str = "async",
) -> pd.DataFrame:
    """Makespan of each entry at each value of ``axis`` (seconds for latency, bytes/s for
    bandwidth; abstract units for an abstract config); columns ``schedule, x, makespan``.

    Example:
        >>> from ppverify.compare.config import Config, ScheduleEntry
        >>> cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)))
        >>> df = makespan_curves([ScheduleEntry("gpipe", "gpipe")], cfg, "latency", [0, 1], "async")
        >>> df["makespan"].tolist()   # (m+p-1)(tF+tB) + 2(p-1)c
        [21.0, 27.0]
    """
    from ..engines import run

    if axis not in AXES:
        raise ParameterError("axis", axis, f"expected one of {', '.join(AXES)}")
    rows = []
    for e in entries:
        if not e.applies(config.p, config.m):
            continue
        s = build_entry(e, config.p, config.m)
        res = resolve(config, s)
        for x in values:
            tl = run(s, res.costs, _vary(res.comm, axis, float(x)), semantics=semantics)
            rows.append({"schedule": e.label, "x": float(x), "makespan": float(tl.makespan), "time_unit": tl.time_unit})
    return pd.DataFrame(rows, columns=["schedule", "x", "makespan", "time_unit"])


def crossings(curves: pd.DataFrame) -> list[tuple[str, str, float, float]]:
    """Pairs of schedules whose order flips between consecutive x values:
    ``(faster before, faster after, x before, x after)``.

    Example:
        >>> df = pd.DataFrame({"schedule": ["a", "a", "b", "b"], "x": [0, 1, 0, 1], "makespan": [1, 3, 2, 2]})
        >>> crossings(df)
        [('a', 'b', 0.0, 1.0)]
    """
    wide = curves.pivot_table(index="x", columns="schedule", values="makespan").sort_index()
    names = list(wide.columns)
    out = []
    xs = list(wide.index)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for x0, x1 in zip(xs, xs[1:]):
                d0 = wide.at[x0, a] - wide.at[x0, b]
                d1 = wide.at[x1, a] - wide.at[x1, b]
                if d0 * d1 < 0:
                    first, second = (a, b) if d0 < 0 else (b, a)
                    out.append((first, second, float(x0), float(x1)))
    return out
