"""Makespan of several schedules as one network parameter varies, and where their ranking crosses.

``axis="latency"`` scales the per-hop latency, ``axis="bandwidth"`` the per-direction bandwidth of
every link tier of a preset system (both tiers set to the same value, so the curve isolates the
parameter); in abstract mode the per-hop delay ``c`` is the latency axis.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

import pandas as pd

from ..core.comm import CommModel, FixedDelay
from ..core.errors import ParameterError, PPVerifyError, ScheduleFileError
from ..core.limits import LimitError
from .config import Config, ScheduleEntry, distinct_entries
from .resolve import build_entry, resolve

AXES = ("latency", "bandwidth")
#: makespans within this relative difference are equal: a tie, not an order (rounding noise)
TIE = 1e-9


def _note(text: str) -> None:
    print(f"ppverify: note: {text}", file=sys.stderr)


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
    note: Callable[[str], None] | None = _note,
) -> pd.DataFrame:
    """Makespan of each entry at each value of ``axis`` (seconds for latency, bytes/s for
    bandwidth; abstract units for an abstract config); columns ``schedule, x, makespan``.

    An entry that does not apply at the configuration (Hanayo outside m = p, Chimera at odd p, a
    model with too few layers for the stages) is left out, as ``compare`` reports it not
    applicable, and ``note`` is told which and why (default: one line on stderr); when no entry
    applies, a :class:`ParameterError` names each with its reason.

    Example:
        >>> from ppverify.compare.config import Config, ScheduleEntry
        >>> cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)))
        >>> df = makespan_curves([ScheduleEntry("gpipe", "gpipe")], cfg, "latency", [0, 1], "async")
        >>> df["makespan"].tolist()   # (m+p-1)(tF+tB) + 2(p-1)c
        [21.0, 27.0]
        >>> makespan_curves([ScheduleEntry("chimera", "chimera")], Config(3, 3, costs=(("F", 1.0),)), "latency", [0, 1])
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedules=chimera: none applies at p=3 m=3: chimera: parameter p=3: chimera needs an even number of devices (two pipes of p/2 microbatches per basic unit)
    """
    from ..engines import run

    if axis not in AXES:
        raise ParameterError("axis", axis, f"expected one of {', '.join(AXES)}")
    rows = []
    skipped: list[str] = []
    entries = distinct_entries(entries)
    for e in entries:
        if not e.applies(config.p, config.m):
            skipped.append(f"{e.label}: evaluated in its regime m = p only")
            continue
        try:
            s = build_entry(e, config.p, config.m)
            res = resolve(config, s)
        except (ScheduleFileError, LimitError):
            raise  # a broken file or a limit is an error, not a schedule outside its regime
        except PPVerifyError as exc:
            skipped.append(f"{e.label}: {exc}")
            continue
        for x in values:
            tl = run(s, res.costs, _vary(res.comm, axis, float(x)), semantics=semantics)
            rows.append({"schedule": e.label, "x": float(x), "makespan": float(tl.makespan), "time_unit": tl.time_unit})
    if not rows:
        raise ParameterError(
            "schedules",
            ",".join(e.label for e in entries),
            f"none applies at p={config.p} m={config.m}: " + "; ".join(skipped),
        )
    if note is not None:
        for why in skipped:
            note(f"left out {why}")
    return pd.DataFrame(rows, columns=["schedule", "x", "makespan", "time_unit"])


def crossings(curves: pd.DataFrame) -> list[tuple[str, str, float, float]]:
    """Pairs of schedules whose order flips along x: ``(faster before, faster after, x before,
    x after)``, where ``x before`` is the last sample with the first one strictly faster and
    ``x after`` the first with the second strictly faster; their makespans become equal in between
    (at any sample between the two, where they tie). Makespans within a relative :data:`TIE` are a
    tie, so rounding noise between two equal schedules is no crossing, and a tie followed by a
    divergence is none either: the order never flipped.

    Example:
        >>> df = pd.DataFrame({"schedule": ["a", "a", "b", "b"], "x": [0, 1, 0, 1], "makespan": [1, 3, 2, 2]})
        >>> crossings(df)
        [('a', 'b', 0.0, 1.0)]
        >>> tie = pd.DataFrame({"schedule": ["a"] * 3 + ["b"] * 3, "x": [0, 1, 2] * 2, "makespan": [1, 2, 3, 2, 2, 2]})
        >>> crossings(tie)   # equal at x = 1: a faster before, b after
        [('a', 'b', 0.0, 2.0)]
    """
    wide = curves.pivot_table(index="x", columns="schedule", values="makespan").sort_index()
    names = list(wide.columns)
    out = []
    xs = list(wide.index)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            last: tuple[bool, float] | None = None  # (a strictly faster, x) at the last sample they differ
            for x in xs:
                ta, tb = float(wide.at[x, a]), float(wide.at[x, b])
                if not (math.isfinite(ta) and math.isfinite(tb)) or abs(ta - tb) <= TIE * max(abs(ta), abs(tb)):
                    continue  # no value, or a tie: the samples either side decide the order
                a_first = ta < tb
                if last is not None and last[0] != a_first:
                    out.append((a, b, last[1], float(x)) if last[0] else (b, a, last[1], float(x)))
                last = (a_first, float(x))
    return out
