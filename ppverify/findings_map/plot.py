"""Phase diagrams of the findings map: one PNG per finding, green where it holds, red where it
fails, grey where it has no data (a schedule does not apply there).

Layout: one row of panels per model size; columns per (p, latency) with bandwidth on x and m/p on
y, except Hanayo (evaluated at m = p only), whose panels put latency on y with one column per p.
The fitted boundary sentence is the figure's caption.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from ..core.files import atomic_path
from .grid import FindingMap, MapResult

#: fails, holds, no data
COLORS = ("#d65f5f", "#6acc65", "#d9d9d9")


def _panel(ax, v: pd.DataFrame, ycol: str, xs: list[float], ys: list[float], ylab) -> None:
    grid = np.full((len(ys), len(xs)), 2.0)
    for _, r in v.iterrows():
        if pd.notna(r["holds"]):
            grid[ys.index(r[ycol]), xs.index(r["bandwidth_GBps"])] = 1.0 if r["holds"] else 0.0
    ax.imshow(grid, origin="lower", aspect="auto", cmap=ListedColormap(COLORS), vmin=0, vmax=2, interpolation="nearest")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([f"{x:g}" for x in xs], fontsize=6, rotation=90)
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([ylab(y) for y in ys], fontsize=7)
    ax.set_xticks(np.arange(len(xs) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(ys) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=0.6)
    ax.tick_params(which="minor", length=0)


def plot_finding(res: MapResult, finding: FindingMap, path: str | Path) -> Path:
    """Write the phase diagram of one finding to ``path`` (PNG, SVG or PDF by extension).

    Example:
        >>> import tempfile, os
        >>> from ppverify.findings_map import QUICK_GRID, run_map
        >>> r = run_map(QUICK_GRID, os.path.join(tempfile.mkdtemp(), "q.jsonl"), workers=1)  # doctest: +SKIP
        >>> plot_finding(r, r.findings[2], "chimera.png").stat().st_size > 1000  # doctest: +SKIP
        True
    """
    path = Path(path)
    v = res.verdicts[res.verdicts["finding"] == finding.key]
    models = sorted(v["model"].unique(), key=lambda md: float(v[v["model"] == md]["params_B"].iloc[0]))
    xs = sorted(v["bandwidth_GBps"].unique())
    hanayo = finding.key == "hanayo"
    if hanayo:
        cols = [(p, None) for p in sorted(v["p"].unique())]
        ycol, ys, ylab, yname = "latency_us", sorted(v["latency_us"].unique()), (lambda y: f"{y:g}"), "latency (µs)"
    else:
        cols = [(p, lat) for p in sorted(v["p"].unique()) for lat in sorted(v["latency_us"].unique())]
        ycol, ys, ylab, yname = (
            "m_factor",
            sorted(v["m_factor"].unique()),
            (lambda y: "p" if y == 1 else f"{y:g}p"),
            "m",
        )
    nr, nc = len(models), len(cols)
    width = max(7.0, 1.9 * nc + 1.3)
    share = f"{100 * finding.holds / finding.total:.0f}%" if finding.total else "-"
    head = textwrap.fill(
        f"[{finding.key}] {finding.claim}: holds at {finding.holds} of {finding.total} points "
        f"({share}), {res.level} makespans",
        width=int(width * 12),
    )
    caption = textwrap.fill(finding.sentence[:1].upper() + finding.sentence[1:], width=int(width * 13))
    # inches above the panels (title lines, column titles) and below (tick labels, caption, legend)
    top_in = 0.45 + 0.17 * (head.count("\n") + 1)
    bottom_in = 0.75 + 0.15 * (caption.count("\n") + 1) + 0.3
    height = 1.35 * nr + top_in + bottom_in
    fig, axes = plt.subplots(nr, nc, figsize=(width, height), squeeze=False, sharex=True, sharey=True)
    for i, md in enumerate(models):
        for j, (p, lat) in enumerate(cols):
            ax = axes[i][j]
            sel = v[(v["model"] == md) & (v["p"] == p)]
            if lat is not None:
                sel = sel[sel["latency_us"] == lat]
            _panel(ax, sel, ycol, xs, ys, ylab)
            if i == 0:
                ax.set_title(f"p={p}" + (f", {lat:g} µs" if lat is not None else ", m=p"), fontsize=8)
            if j == 0:
                ax.set_ylabel(f"{md}\n{yname}", fontsize=8)
            if i == nr - 1:
                ax.set_xlabel("bandwidth (GB/s)", fontsize=7)
    fig.suptitle(head, fontsize=9, y=1 - 0.08 / height, va="top")
    fig.text(0.01, 0.3 / height + 0.04 / height, caption, fontsize=8, ha="left", va="bottom")
    fig.legend(
        handles=[
            Patch(color=COLORS[1], label="holds"),
            Patch(color=COLORS[0], label="fails"),
            Patch(color=COLORS[2], label="no data"),
        ],
        loc="lower left",
        bbox_to_anchor=(0.0, 0.0),
        fontsize=7,
        ncol=3,
        frameon=False,
    )
    fig.subplots_adjust(
        left=1.0 / width,
        right=1 - 0.1 / width,
        top=1 - top_in / height,
        bottom=bottom_in / height,
        wspace=0.08,
        hspace=0.12,
    )
    with atomic_path(path, "--plots") as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path


def plot_map(res: MapResult, folder: str | Path, prefix: str = "findings-map") -> list[Path]:
    """One PNG per finding in ``folder`` (``PREFIX-<finding>.png``); returns their paths.

    Example:
        >>> import tempfile
        >>> from ppverify.findings_map import MapGrid, summarize
        >>> v = pd.DataFrame({"finding": "chimera", "p": 4, "model": "x", "m_factor": [1, 1, 4, 4],
        ...                   "bandwidth_GBps": [1, 900, 1, 900], "latency_us": 1.0, "params_B": 1.3,
        ...                   "holds": [False, True, False, False], "margin": [-0.1, 0.2, -0.3, -0.05]})
        >>> grid = MapGrid(ps=(4,), m_factors=(1, 4), bandwidths_GBps=(1, 900), latencies_us=(1,), models=("x",))
        >>> res = MapResult(grid, "async", pd.DataFrame(), v, tuple(summarize(v)))
        >>> paths = plot_map(res, tempfile.mkdtemp())
        >>> [x.name for x in paths], paths[0].stat().st_size > 1000
        (['findings-map-chimera.png'], True)
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [plot_finding(res, f, folder / f"{prefix}-{f.key}.png") for f in res.findings]
