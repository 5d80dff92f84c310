"""A timeline as text: numbers in their units, a device x time chart (text Gantt) and the
per-stage cost table of a model preset. Shared by the commands that print timelines."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from tabulate import tabulate

from .timeline import Timeline

GiB = 2**30


def fmt_time(x: float, unit: str) -> str:
    """A time in its unit; seconds are shown in s, ms or us.

    Example:
        >>> fmt_time(0.0123, "s"), fmt_time(2.5, "units"), fmt_time(4e-5, "s")
        ('12.300 ms', '2.5', '40.0 us')
    """
    if unit != "s":
        return f"{x:g}"
    a = abs(x)
    if a >= 1:
        return f"{x:.4f} s"
    if a >= 1e-3:
        return f"{x * 1e3:.3f} ms"
    return f"{x * 1e6:.1f} us"


def fmt_mem(x: float | None, unit: str) -> str:
    """Memory in GiB for bytes, as is for abstract activations.

    Example:
        >>> fmt_mem(3 * 2**30, "bytes"), fmt_mem(2.5, "activations"), fmt_mem(None, "bytes")
        ('3.00 GiB', '2.5', '-')
    """
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x / GiB:.2f} GiB" if unit == "bytes" else f"{x:g}"


def fmt_number(x: float | None, digits: int = 4) -> str:
    """A table value: integers without a point, others with ``digits`` significant digits
    (small ones without trailing zeros); ``-`` for none.

    Example:
        >>> fmt_number(14.0), fmt_number(0.25), fmt_number(123.456), fmt_number(None)
        ('14', '0.25', '123.5', '-')
    """
    if x is None:
        return "-"
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}g}" if abs(x) >= 10 else f"{x:.{digits}f}".rstrip("0").rstrip(".")


def gantt(timeline: Timeline, width: int = 100) -> str:
    """A device x time chart of a timeline: each column is ``makespan / width`` long and shows the
    kind of the op running at its middle (``F``, ``B``, ``I``, ``W``; ``.`` idle). The time axis
    names the timeline's unit (``units``, ``steps``; seconds show as s, ms or us).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> print(gantt(run(build("gpipe", p=2, m=1)), width=4))
        time    0 .. 4 units, 1 per column
        dev 0  F..B
        dev 1  .FB.
        >>> print(gantt(run(build("gpipe", p=2, m=1), semantics="torch"), width=6))  # every action one step
        time    0 .. 6 steps, 1 per column
        dev 0  F....B
        dev 1  ..FB..
    """
    ms = timeline.makespan
    width = max(1, int(width))
    if ms <= 0:
        return "(empty timeline)"
    step, unit = ms / width, timeline.time_unit
    mids = (np.arange(width) + 0.5) * step
    lines = [f"time    0 .. {fmt_time(ms, unit)}{'' if unit == 's' else f' {unit}'}, {fmt_time(step, unit)} per column"]
    kinds = np.array([o.kind for o in timeline.ops] or ["."])
    for d in range(timeline.p):
        sel = np.flatnonzero(timeline.device == d)
        row = np.full(width, ".", dtype="<U1")
        if len(sel):
            s, e = timeline.start[sel], timeline.end[sel]
            order = np.argsort(s, kind="stable")
            s, e, k = s[order], e[order], kinds[sel][order]
            idx = np.searchsorted(s, mids, side="right") - 1
            ok = (idx >= 0) & (e[np.maximum(idx, 0)] > mids)
            row[ok] = k[idx[ok]]
        lines.append(f"dev {d:<2} " + "".join(row.tolist()))
    return "\n".join(lines)


def stage_table(sc: Any) -> str:
    """Per-stage costs derived from a model (a :class:`~ppverify.systems.llm.StageCosts`): layers,
    parameters, op times, bytes.

    Example:
        >>> from ppverify.systems.llm import Training, load_llm, stage_costs
        >>> lines = stage_table(stage_costs(load_llm("gpt3-1.3b"), 989e12, 2, Training())).splitlines()
        >>> lines[0].split()[:4], len(lines), lines[2].split()[:3]
        (['stage', 'layers', 'params', 'F'], 4, ['0', '12', '0.71'])
    """
    rows = []
    for st in range(len(sc.layers)):
        rows.append(
            [
                st,
                sc.layers[st],
                f"{sc.params[st] / 1e9:.2f} B",
                *(fmt_time(sc.duration[k][st], "s") for k in ("F", "B", "I", "W")),
                fmt_mem(sc.activation[st], "bytes"),
                fmt_mem(sc.weight_bytes[st], "bytes"),
                f"{sc.boundary_bytes[st] / 1e6:.1f} MB" if st < len(sc.boundary_bytes) else "-",
            ]
        )
    return tabulate(
        rows,
        headers=["stage", "layers", "params", "F", "B", "I", "W", "activations/mb", "weights+opt", "to next"],
        tablefmt="simple",
        stralign="right",
        disable_numparse=True,
    )
