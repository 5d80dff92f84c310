"""Pictures: a Gantt chart of a timeline (ops per device, colored by kind, microbatch labels,
transfers drawn between device rows, memory curve beneath) and comparison plots of makespan against
latency or bandwidth that mark where rankings cross. Matplotlib with the Agg backend (no display);
the file extension (``.png``/``.svg``/``.pdf``) picks the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist

from ..core.errors import ParameterError
from ..core.memory_unit import printed_unit
from ..core.timeline import Timeline
from ..views.memory_units import in_activations

#: one color per op kind (F forward, B full backward, I input-grad, W weight-grad)
KIND_COLORS = {"F": "#4C72B0", "B": "#55A868", "I": "#C44E52", "W": "#DD8452"}
KIND_NAMES = {"F": "F forward", "B": "B backward", "I": "I input-grad", "W": "W weight-grad"}
TRANSFER_COLORS = {"activation": "#4C72B0", "gradient": "#55A868", "allreduce": "#8172B2", "dp-allreduce": "#937860"}
FORMATS = (".png", ".svg", ".pdf")
#: above this many ops, labels are dropped (they would not be readable)
MAX_LABELLED_OPS = 400
MAX_DRAWN_TRANSFERS = 3000


def check_plot_path(path: str | Path, option: str = "-o") -> Path:
    """Refuse, before any drawing or run, a plot path matplotlib could not write: not a regular
    file, not ``.png``/``.svg``/``.pdf``, or in a missing folder; errors name ``option``.

    Example:
        >>> check_plot_path("frontier.png").name
        'frontier.png'
        >>> check_plot_path("x.txt", "--plot")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --plot=x.txt: expected a file ending in .png, .svg, .pdf
    """
    from ..core.files import check_output_folder, output_target

    output_target(path, option)  # a trailing '/', a FIFO, a device: refused before drawing
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise ParameterError(option, str(path), f"expected a file ending in {', '.join(FORMATS)}")
    check_output_folder(path, option)  # a missing folder (a link's too), /proc, a read-only mount
    return p


def save_figure(fig: Any, path: str | Path, option: str = "-o") -> None:
    """Write ``fig`` to ``path`` in the format its suffix names, atomically (a reader never sees
    half an image); a failure names ``option``, the option the path came from.

    Example:
        >>> import os, tempfile
        >>> fig = plt.figure()
        >>> out = os.path.join(tempfile.mkdtemp(), "f.png")
        >>> save_figure(fig, out, "--plot"); os.path.getsize(out) > 0
        True
    """
    from ..core.files import atomic_path

    with atomic_path(path, option) as tmp:
        fig.savefig(tmp, dpi=130, format=Path(path).suffix.lstrip(".").lower() or None)


def wrap_title(text: str, fig_width_in: float, fontsize: float = 10.0) -> str:
    """``text`` broken into lines that fit a figure ``fig_width_in`` inches wide (the plotting
    area is about 80% of it), so a long title is never clipped at the figure's edge.

    Example:
        >>> wrap_title("a " * 60, 5.0).count("\\n") >= 1, wrap_title("short", 8.0)
        (True, 'short')
    """
    import textwrap

    chars = max(20, int(0.8 * fig_width_in * 72 / (0.55 * fontsize)))
    text = text.strip()
    if len(text) > 4 * chars:  # a hostile name: at most four lines, not a page of glyphs to draw
        text = text[: 4 * chars - 3] + "..."
    return textwrap.fill(text, width=chars, break_on_hyphens=False)


def op_lanes(device: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[list[int], list[int]]:
    """For each op, its lane within its device's row and the lanes of its group: ops whose times
    overlap on one device (an overlapped F&B slot) get lanes 0, 1, ... of the same group.

    Example:
        >>> op_lanes(np.array([0, 0, 0, 1]), np.array([0.0, 1.0, 1.0, 0.0]), np.array([1.0, 3.0, 3.0, 1.0]))
        ([0, 0, 1, 0], [1, 2, 2, 1])
    """
    n = len(device)
    lane, lanes = [0] * n, [1] * n
    eps = 1e-9 * max(float(np.max(end)) if n else 1.0, 1.0)
    for d in set(np.asarray(device).tolist()):
        idx = sorted(np.flatnonzero(device == d).tolist(), key=lambda i: (start[i], end[i]))
        group: list[int] = []
        group_end = -np.inf
        free: list[float] = []  # end time of the last op in each lane of the current group
        for i in idx + [None]:
            if i is None or start[i] >= group_end - eps:
                for j in group:
                    lanes[j] = len(free)
                if i is None:
                    break
                group, free, group_end = [], [], -np.inf
            k = next((k for k, e in enumerate(free) if e <= start[i] + eps), len(free))
            if k == len(free):
                free.append(end[i])
            else:
                free[k] = end[i]
            lane[i] = k
            group.append(i)
            group_end = max(group_end, end[i])
    return lane, lanes


def _time_scale(unit: str) -> tuple[float, str]:
    return (1e3, "ms") if unit == "s" else (1.0, unit)


def gantt(
    timeline: Timeline,
    path: str | Path,
    title: str | None = None,
    memory: bool = True,
    measured_memory: Any = None,
    option: str = "-o",
) -> Path:
    """Write a Gantt chart of ``timeline``: one row per device, one bar per op (color = kind,
    label = microbatch, hatched = second pipe), transfers as lines from the sender's row at their
    start to the receiver's row at their end, and per-device memory beneath (a measured run's own
    curve, per device ``(times, bytes)``, when ``measured_memory`` is given); a failed write names
    ``option``, the option ``path`` came from.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> out = gantt(run(build("1f1b", p=2, m=2), semantics="slot"), os.path.join(tempfile.mkdtemp(), "g.svg"))
        >>> out.stat().st_size > 1000
        True
    """
    path = check_plot_path(path, option)
    scale, unit = _time_scale(timeline.time_unit)
    p = timeline.p
    sched = timeline.schedule
    n = len(timeline.ops)
    fig_w = min(22.0, max(8.0, 0.12 * n / max(p, 1) + 6))
    if memory:
        fig, (ax, axm) = plt.subplots(
            2, 1, figsize=(fig_w, 1.0 + 0.55 * p + 2.4), sharex=True, gridspec_kw={"height_ratios": [max(p, 2), 2.2]}
        )
    else:
        fig, ax = plt.subplots(figsize=(fig_w, 1.0 + 0.55 * p))
        axm = None
    starts, ends = timeline.start * scale, timeline.end * scale
    label = n <= MAX_LABELLED_OPS
    lane, lanes = op_lanes(timeline.device, starts, ends)
    labels: list[tuple[object, float, float, str]] = []  # (text artist, bar width, bar height, text)
    for i, op in enumerate(timeline.ops):
        d = int(timeline.device[i])
        pipe = sched.pipe_of_mb[op.mb] if op.mb < len(sched.pipe_of_mb) else 0
        w = ends[i] - starts[i]
        # ops overlapped on one device (F&B slots) share the row, one lane each, so none hides another
        h = 0.8 / lanes[i]
        y = d - 0.4 + (lane[i] + 0.5) * h
        ax.barh(
            y,
            w,
            left=starts[i],
            height=h,
            color=KIND_COLORS.get(op.kind, "#999999"),
            edgecolor="black",
            linewidth=0.4,
            hatch="//" if pipe == 1 else None,
        )
        if label:
            # stage and microbatch as PyTorch writes the op (4F1: stage 4, microbatch 1), so the
            # chunks of one device read apart; sized to its bar once the layout is known
            text = str(op)
            labels.append(
                (
                    ax.text(
                        starts[i] + w / 2, y, text, ha="center", va="center", fontsize=7, color="white", clip_on=True
                    ),
                    w,
                    h,
                    text,
                )
            )
    tr = timeline.transfers
    if 0 < len(tr) <= MAX_DRAWN_TRANSFERS:
        for k in range(len(tr)):
            color = TRANSFER_COLORS.get(tr.kind[k], "gray")
            t0, t1 = tr.start[k] * scale, tr.end[k] * scale
            if tr.src_op[k] < 0:
                # a collective: a thin bar under both devices' rows for its whole duration
                for d in {tr.src_dev[k], tr.dst_dev[k]}:
                    ax.barh(d + 0.45, t1 - t0, left=t0, height=0.08, color=color, alpha=0.8, linewidth=0)
            elif tr.src_dev[k] != tr.dst_dev[k]:
                # point to point: from the sender's row at its start to the receiver's row at its end
                ax.plot([t0, t1], [tr.src_dev[k], tr.dst_dev[k]], color=color, linewidth=0.7, alpha=0.6)
    ax.set_yticks(range(p))
    ax.set_yticklabels([f"dev {d}" for d in range(p)])
    ax.set_ylim(p - 0.45, -0.55)
    # only the kinds this schedule runs: a split-backward one (zb-h1) has no B to explain
    present = [k for k in KIND_COLORS if any(op.kind == k for op in timeline.ops)]
    handles: list[Artist] = [plt.Rectangle((0, 0), 1, 1, color=KIND_COLORS[k]) for k in present]
    names = [KIND_NAMES[k] for k in present]
    if len(tr):
        kinds = sorted(set(tr.kind))
        handles += [plt.Line2D([0], [0], color=TRANSFER_COLORS.get(k, "gray")) for k in kinds]
        names += [f"{k} (bar under the rows)" if k in ("allreduce", "dp-allreduce") else f"{k} transfer" for k in kinds]
    if sched.placement.num_pipes > 1:
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="//"))
        names.append("pipe 1")
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ms = timeline.makespan * scale
    ax.set_title(
        wrap_title(
            title
            or f"{sched.describe()} · {timeline.semantics} · makespan {ms:.4g} {unit} · "
            f"bubble {timeline.bubble_ratio:.3f} (idle/total)",
            fig_w,
        ),
        fontsize=10,
    )
    ax.set_xlim(0, ms * 1.01 if ms > 0 else 1)
    if axm is not None:
        mscale, munit = (
            (1 / 2**30, "GiB") if timeline.costs.memory_unit == "bytes" else (1.0, timeline.costs.memory_unit)
        )
        # activations as every command prints them: one is the largest device's share (4/3 units on 0,1,1)
        one = printed_unit(timeline.costs, sched.placement)
        styles = ["-", "--", ":", "-."]
        if measured_memory is not None:
            mscale, munit = 1.0, "bytes saved, measured"
        for d in range(p):
            t, mem = (
                _shown_events(timeline.memory_events(d), one)
                if measured_memory is None
                else (np.asarray(measured_memory[d][0], dtype=float), np.asarray(measured_memory[d][1], dtype=float))
            )
            if len(t):
                # several events at one instant: keep the level after the last of them
                keep = np.append(t[1:] != t[:-1], True)
                t, mem = t[keep], mem[keep]
                tt = np.concatenate(([0.0], t * scale, [ms]))
                mm = np.concatenate(([0.0], mem * mscale, [mem[-1] * mscale]))
                axm.step(
                    tt,
                    mm,
                    where="post",
                    label=f"dev {d}",
                    linewidth=1.6 if d < 4 else 1.0,
                    linestyle=styles[d % 4],
                    alpha=0.85,
                )
        # the unit alone when it already says activations (abstract costs), not "activations (activations)"
        axis_label = munit if munit.startswith("activation") else f"activations\n({munit})"
        axm.set_ylabel(axis_label, fontsize=9)
        axm.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        axm.grid(alpha=0.3)
        axm.set_xlabel(f"time ({unit})")
    else:
        ax.set_xlabel(f"time ({unit})")
    fig.tight_layout()
    _fit_labels(fig, ax, labels)
    save_figure(fig, path, option)
    plt.close(fig)
    return path


def _fit_labels(fig, ax, labels: list) -> None:
    """Shrink each bar label to its bar (at most 7 pt); drop those under 4 pt (unreadable)."""
    if not labels:
        return
    box = ax.get_window_extent()
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    pt_x = box.width / fig.dpi * 72 / abs(x1 - x0)  # points per time unit
    pt_y = box.height / fig.dpi * 72 / abs(y1 - y0)  # points per row
    for artist, w, h, text in labels:
        size = min(7.0, 0.8 * w * pt_x / (0.66 * len(text)), 0.8 * h * pt_y)
        if size < 4.0:
            artist.remove()
        else:
            artist.set_fontsize(size)


#: an axis turns logarithmic when its positive values span more than this factor (a decade)
LOG_SPAN = 10.0


def _shown_events(events: tuple[np.ndarray, np.ndarray], one: Any) -> tuple[np.ndarray, np.ndarray]:
    """A device's memory events ``(times, amounts)`` with the amounts divided by ``one`` (the
    printed unit, :func:`~ppverify.core.memory_cap.printed_unit`; 1 for bytes)."""
    t, mem = events
    return t, np.asarray(in_activations(np.asarray(mem, dtype=float).tolist(), one), dtype=float)


def spans_decades(values: Sequence[float] | np.ndarray | pd.Series) -> bool:
    """True when every value is positive and the largest is more than :data:`LOG_SPAN` times the
    smallest: such an axis reads better on a log scale (a linear one crushes the small values).

    Example:
        >>> spans_decades([1e-6, 1e-4]), spans_decades([2.0, 19.0]), spans_decades([0.0, 100.0])
        (True, False, False)
    """
    arr = np.asarray(values, dtype=float)
    return bool(arr.size and (arr > 0).all() and arr.max() > LOG_SPAN * arr.min())


def _fastest(makespans: pd.Series) -> tuple[str, ...]:
    """The schedules of least makespan at one sample, all of them where several tie (within
    :data:`~ppverify.compare.crossover.TIE`, the crossings' rule): naming one of equals
    "fastest" told a reader the others were slower.

    Example:
        >>> _fastest(pd.Series({"1f1b": 9.0, "gpipe": 9.0, "zbv": 10.0}))
        ('1f1b', 'gpipe')
    """
    from ..compare.crossover import TIE

    best = float(makespans.min())
    return tuple(str(k) for k, v in makespans.items() if v <= best + TIE * abs(best))


def crossover_plot(curves: pd.DataFrame, axis: str, path: str | Path, title: str = "") -> Path:
    """Makespan of each schedule against ``axis`` (``latency`` or ``bandwidth``); each axis is
    logarithmic where its values span more than a decade (:func:`spans_decades`). The background is banded by the fastest schedule at each value (its
    name on top), and every point where two curves cross is marked with an ``x``.

    Example:
        >>> import tempfile, os
        >>> df = pd.DataFrame({"schedule": ["a", "a", "b", "b"], "x": [1e-6, 1e-4, 1e-6, 1e-4],
        ...                    "makespan": [1.0, 3.0, 2.0, 2.0], "time_unit": "s"})
        >>> crossover_plot(df, "latency", os.path.join(tempfile.mkdtemp(), "c.png")).suffix
        '.png'
    """
    from ..compare.crossover import crossings

    path = check_plot_path(path)
    if not len(curves):
        raise ParameterError("curves", "empty", "no schedule produced a makespan to plot")
    unit = curves["time_unit"].iloc[0] if "time_unit" in curves else "units"
    scale, tunit = _time_scale(unit)
    xfac = 1e6 if axis == "latency" and unit == "s" else 1e-9 if axis == "bandwidth" else 1.0
    fig, ax = plt.subplots(figsize=(9, 5.2))
    colors = {}
    for name, grp in curves.groupby("schedule", sort=False):
        g = grp.sort_values("x")
        (line,) = ax.plot(g["x"] * xfac, g["makespan"] * scale, marker="o", markersize=3, label=name, linewidth=1.5)
        colors[name] = line.get_color()
    logx = spans_decades(curves["x"])
    if logx:
        ax.set_xscale("log")
    if spans_decades(curves["makespan"]):
        ax.set_yscale("log")
    wide = curves.pivot_table(index="x", columns="schedule", values="makespan").sort_index()
    xs = list(wide.index)
    winners = [_fastest(wide.loc[x]) for x in xs]
    # band edges halfway (geometrically when log x) between sample points
    mids = [np.sqrt(a * b) if logx else (a + b) / 2 for a, b in zip(xs, xs[1:])]
    edges = [xs[0]] + mids + [xs[-1]]
    ytop = curves["makespan"].max() * scale
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and winners[j + 1] == winners[i]:
            j += 1
        lo, hi = edges[i] * xfac, edges[j + 1] * xfac
        color = colors[winners[i][0]] if len(winners[i]) == 1 else "#888888"
        ax.axvspan(lo, hi, color=color, alpha=0.10, linewidth=0)
        ax.text(
            np.sqrt(lo * hi) if logx and lo > 0 else (lo + hi) / 2,
            ytop,
            ("fastest:\n" if len(winners[i]) == 1 else "tie:\n") + "\n".join(winners[i]),
            ha="center",
            va="top",
            fontsize=7,
            color=color,
        )
        i = j + 1
    for a, b, x0, x1 in crossings(curves):
        ya0, ya1 = wide.at[x0, a], wide.at[x1, a]
        yb0, yb1 = wide.at[x0, b], wide.at[x1, b]
        t = (yb0 - ya0) / ((ya1 - ya0) - (yb1 - yb0))
        xc = np.exp(np.log(x0) + t * (np.log(x1) - np.log(x0))) if logx else x0 + t * (x1 - x0)
        ax.plot([xc * xfac], [(ya0 + t * (ya1 - ya0)) * scale], marker="x", color="black", markersize=6)
    ax.set_xlabel(
        {
            "latency": "per-hop latency (µs)" if unit == "s" else "per-hop delay (units)",
            "bandwidth": "link bandwidth per direction (GB/s)",
        }[axis]
    )
    ax.set_ylabel(f"makespan ({tunit})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    ax.set_title(
        wrap_title(title or f"makespan vs {axis}; x = two schedules swap order, bands = fastest schedule", 9.0),
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path
