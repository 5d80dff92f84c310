"""The findings map in words and tables: JSON (``--json``), plain text, and the Markdown section
with per-(p, model) boundaries, median margins and the bandwidths where each finding holds."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .grid import SUBJECTS, MapResult


def map_json(res: MapResult) -> dict[str, Any]:
    """The summaries as plain data (what ``--json`` prints).

    Example:
        >>> from ppverify.findings_map import MapGrid, summarize
        >>> v = pd.DataFrame({"finding": "chimera", "p": 4, "model": "x", "m_factor": [1, 1, 4, 4],
        ...                   "bandwidth_GBps": [1, 900, 1, 900], "latency_us": 1.0, "params_B": 1.3,
        ...                   "holds": [False, True, False, False], "margin": [-0.1, 0.2, -0.3, -0.05]})
        >>> grid = MapGrid(ps=(4,), m_factors=(1, 4), bandwidths_GBps=(1, 900), latencies_us=(1,), models=("x",))
        >>> res = MapResult(grid, "async", pd.DataFrame(), v, tuple(summarize(v)))
        >>> j = map_json(res)
        >>> j["level"], [(f["key"], f["holds"], f["points"]) for f in j["findings"]]
        ('async', [('chimera', 1, 4)])
        >>> j["findings"][0]["rule"]
        {'holds_inside': True, 'conditions': ['m = p', 'bandwidth = 900 GB/s'], 'matched': 4}
    """
    return {
        "grid": res.grid.describe(),
        "level": res.level,
        "findings": [
            {
                "key": f.key,
                "claim": f.claim,
                "holds": f.holds,
                "points": f.total,
                "boundary": f.sentence,
                "rule": {
                    "holds_inside": f.rule.holds_inside,
                    "conditions": [c.text for c in f.rule.conditions],
                    "matched": f.rule.matched,
                },
                "by_p_model": [
                    {"p": p, "model": md, "boundary": r.sentence(SUBJECTS[f.key][0])} for p, md, r in f.local
                ],
            }
            for f in res.findings
        ],
    }


def format_map(res: MapResult, local: bool = True) -> str:
    """The map in text: per finding, how often it holds, the fitted boundary and (``local``) the
    boundary per (p, model).

    Example:
        >>> from ppverify.findings_map import MapGrid, summarize
        >>> v = pd.DataFrame({"finding": "chimera", "p": 4, "model": "x", "m_factor": [1, 1, 4, 4],
        ...                   "bandwidth_GBps": [1, 900, 1, 900], "latency_us": 1.0, "params_B": 1.3,
        ...                   "holds": [False, True, False, False], "margin": [-0.1, 0.2, -0.3, -0.05]})
        >>> grid = MapGrid(ps=(4,), m_factors=(1, 4), bandwidths_GBps=(1, 900), latencies_us=(1,), models=("x",))
        >>> res = MapResult(grid, "async", pd.DataFrame(), v, tuple(summarize(v)))
        >>> print(format_map(res))  # doctest: +ELLIPSIS
        Where the seed paper's findings hold (async makespans; p in {4}, m in {p, 4p}, ...: 4 configurations)
        <BLANKLINE>
        1. [chimera] per point: Chimera's makespan below 1F1B's
           holds at 1 of 4 grid points (25%)
           => Chimera is faster than 1F1B when m = p and bandwidth = 900 GB/s (all 4 grid points agree)
           - p=4 x: Chimera is faster than 1F1B when m = p and bandwidth = 900 GB/s (all 4 grid points agree)
    """
    out = [f"Where the seed paper's findings hold ({res.level} makespans; {res.grid.describe()})", ""]
    for n, f in enumerate(res.findings, 1):
        share = f"{100 * f.holds / f.total:.0f}%" if f.total else "-"
        out.append(f"{n}. [{f.key}] per point: {f.claim}")
        out.append(f"   holds at {f.holds} of {f.total} grid points ({share})")
        out.append(f"   => {f.sentence}")
        if local:
            for p, md, r in f.local:
                out.append(f"   - p={p} {md}: {r.sentence(SUBJECTS[f.key][0])}")
    return "\n".join(out)


def bandwidth_ranges(verdicts: pd.DataFrame, key: str, latency_us: float) -> pd.DataFrame:
    """Per (p, model) and m/p, the grid bandwidths (GB/s) where finding ``key`` holds at one
    latency, as runs of consecutive grid values: ``">= 25"``, ``"<= 15"``, ``"7-15"``, ``"all"``,
    ``"none"``, ``"-"`` (no data).

    Example:
        >>> v = pd.DataFrame({"finding": "chimera", "p": 4, "model": "x", "params_B": 1.0, "m_factor": 1,
        ...                   "latency_us": 1.0, "bandwidth_GBps": [1, 10, 100, 900], "holds": [True, False, True, True]})
        >>> bandwidth_ranges(v, "chimera", 1.0).to_dict("records")
        [{'p': 4, 'model': 'x', 'm = p': '<= 1, >= 100'}]
    """
    v = verdicts[(verdicts["finding"] == key) & (verdicts["latency_us"] == latency_us)]
    out = []
    for (p, _, model), g in v.groupby(["p", "params_B", "model"], sort=True):
        row: dict[str, Any] = {"p": int(p), "model": model}
        for k, gm in g.groupby("m_factor", sort=True):
            gm = gm[gm["holds"].notna()].sort_values("bandwidth_GBps")
            holds, bws = gm["holds"].astype(bool).tolist(), gm["bandwidth_GBps"].tolist()
            runs, i = [], 0
            while i < len(holds):
                if not holds[i]:
                    i += 1
                    continue
                j = i
                while j + 1 < len(holds) and holds[j + 1]:
                    j += 1
                lo, hi = i == 0, j == len(holds) - 1
                runs.append(
                    "all"
                    if lo and hi
                    else f"<= {bws[j]:g}"
                    if lo
                    else f">= {bws[i]:g}"
                    if hi
                    else f"{bws[i]:g}"
                    if i == j
                    else f"{bws[i]:g}-{bws[j]:g}"
                )
                i = j + 1
            row["m = p" if k == 1 else f"m = {k}p"] = "-" if not holds else (", ".join(runs) or "none")
        out.append(row)
    return pd.DataFrame(out)


#: what ``margin`` measures for each finding (a fraction)
MARGINS = {
    "abstraction": "the largest makespan gap of an inverted pair",
    "gpipe-1f1b": "the GPipe-1F1B makespan difference",
    "chimera": "Chimera's advantage over 1F1B (1 - T_chimera / T_1f1b)",
    "hanayo": "Hanayo's advantage over 1F1B (1 - T_hanayo / T_1f1b)",
    "chimera-asym": "the asymmetric placement's gain over Chimera (1 - T_asym / T_chimera)",
}


def margin_table(verdicts: pd.DataFrame, key: str, min_bandwidth: float = 100.0) -> pd.DataFrame:
    """Median ``margin`` of finding ``key`` in % per p, by m/p over the points with bandwidth >=
    ``min_bandwidth`` (Hanayo, at m = p only: by bandwidth over all points).

    Example:
        >>> v = pd.DataFrame({"finding": "chimera", "p": 4, "m_factor": [1, 1, 2], "bandwidth_GBps": 100.0,
        ...                   "margin": [0.2, 0.3, 0.1]})
        >>> margin_table(v, "chimera").to_dict("records")
        [{'p': 4, 'm = p': 25.0, 'm = 2p': 10.0}]
    """
    v = verdicts[(verdicts["finding"] == key) & verdicts["margin"].notna()]
    if key == "hanayo":
        col, fmt = "bandwidth_GBps", (lambda x: f"{x:g} GB/s")
    else:
        v = v[v["bandwidth_GBps"] >= min_bandwidth]
        col, fmt = "m_factor", (lambda k: "m = p" if k == 1 else f"m = {k:g}p")
    med = v.groupby(["p", col])["margin"].median().unstack(col)
    out = [{"p": int(p), **{fmt(c): round(100 * float(x), 1) for c, x in row.items()}} for p, row in med.iterrows()]
    return pd.DataFrame(out)


def map_markdown(
    res: MapResult,
    images: dict[str, str] | None = None,
    seconds: float | None = None,
    command: str = "ppverify compare --findings --map",
) -> str:
    """The map as a Markdown section: per finding the claim, how often it holds, the fitted
    boundary, the phase diagram (``images``: finding -> relative path) and the boundary per
    (p, model), plus the bandwidth from which it holds at each m (middle latency of the grid).
    The same map gives the same Markdown: ``seconds`` (the run's wall time, which varies) is not
    written into it; the command prints it beside the summary instead.

    Example:
        >>> from ppverify.findings_map import MapGrid, summarize
        >>> v = pd.DataFrame({"finding": "chimera", "p": 4, "model": "x", "m_factor": [1, 1, 4, 4],
        ...                   "bandwidth_GBps": [1, 900, 1, 900], "latency_us": 1.0, "params_B": 1.3,
        ...                   "holds": [False, True, False, False], "margin": [-0.1, 0.2, -0.3, -0.05]})
        >>> grid = MapGrid(ps=(4,), m_factors=(1, 4), bandwidths_GBps=(1, 900), latencies_us=(1,), models=("x",))
        >>> res = MapResult(grid, "async", pd.DataFrame(), v, tuple(summarize(v)))
        >>> md = map_markdown(res, images={"chimera": "img/chimera.png"}, seconds=2)
        >>> md.splitlines()[0]  # doctest: +ELLIPSIS
        'Computed by `ppverify compare --findings --map` (async makespans; p in {4}, ...: 4 configurations).'
        >>> md == map_markdown(res, images={"chimera": "img/chimera.png"}, seconds=7)
        True
        >>> for line in md.splitlines():
        ...     if line.startswith(("###", "![", "|   4")):
        ...         print(line)
        ### 1. `chimera`
        ![chimera phase diagram](img/chimera.png)
        |   4 | x       | when m = p and bandwidth = 900 GB/s (all 4 grid points agree) |
        |   4 |      20 |       -5 |
        |   4 | x       | >= 900  | none     |
    """
    from tabulate import tabulate

    lat = sorted(res.grid.latencies_us)[len(res.grid.latencies_us) // 2]
    del seconds  # a wall time: the same map would give another file on every run
    out = [f"Computed by `{command}` ({res.level} makespans; {res.grid.describe()}).", ""]
    for n, f in enumerate(res.findings, 1):
        share = f"{100 * f.holds / f.total:.0f}%" if f.total else "-"
        out += [
            f"### {n}. `{f.key}`",
            "",
            f"Per grid point: {f.claim}. Holds at {f.holds} of {f.total} points ({share}).",
            "",
            f"**{f.sentence[:1].upper() + f.sentence[1:]}.**",
            "",
        ]
        if images and f.key in images:
            out += [f"![{f.key} phase diagram]({images[f.key]})", ""]
        rows = [(p, md, r.sentence("").strip()) for p, md, r in f.local]
        out += [tabulate(rows, headers=["p", "model", "holds (m, bandwidth, latency)"], tablefmt="github"), ""]
        mt = margin_table(res.verdicts, f.key)
        if len(mt):
            where = (
                "over all models and latencies"
                if f.key == "hanayo"
                else "at bandwidth >= 100 GB/s, over all models and latencies"
            )
            out += [
                f"Median of {MARGINS[f.key]}, in %, {where}:",
                "",
                tabulate(mt.values.tolist(), headers=list(mt.columns), tablefmt="github"),
                "",
            ]
        th = bandwidth_ranges(res.verdicts, f.key, lat)
        if f.key != "hanayo" and len(th):
            out += [
                f"Bandwidths (GB/s) where it holds, at {lat:g} µs:",
                "",
                tabulate(th.values.tolist(), headers=list(th.columns), tablefmt="github"),
                "",
            ]
    return "\n".join(out)


__all__ = ["MARGINS", "bandwidth_ranges", "format_map", "map_json", "map_markdown", "margin_table"]
