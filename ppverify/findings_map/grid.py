"""Where each of the seed paper's findings holds: a map over bandwidth, latency, microbatches and
model size, instead of one word per finding.

The grid (:class:`MapGrid`) spans point-to-point bandwidth and latency of a network where every
pipeline hop crosses it (one H100 per node, the ``ethernet-100g`` layout with the link varied),
microbatches ``m = k p``, the shipped LLM presets and ``p``. It runs through the sweep machinery
(:func:`ppverify.sweep.executor.run_sweep`: resumable JSON-lines store, process pool or Ray), one system
preset file per (bandwidth, latency) written next to the store. Each finding then gets a verdict
per grid point (:func:`point_verdicts`), and a boundary in words fitted to those verdicts
(:mod:`.boundary`).

Per-point claims (all makespans and memory peaks under one simulated ``level``, ``async`` by
default; the seed paper is "A Tabular Schedule Abstraction for Communication-Aware Evaluation of
Pipeline-Parallel LLM Training", arXiv 2605.24006):

* ``abstraction``: two schedules are ranked one way by their closed-form bubble ratio (families
  whose formula is exact) and the other way by makespan, the makespans at least 1 % apart;
* ``gpipe-1f1b``: GPipe and 1F1B take equal time (within 1 %) and 1F1B's per-device activation
  peaks are no higher and lower in total;
* ``chimera``: Chimera is faster than 1F1B;
* ``hanayo``: at m = p, Hanayo (the faster of W = 1 and W = 2) is faster than 1F1B;
* ``chimera-asym``: the asymmetric placement does not lower Chimera's global activation peak and
  gains at most 5 % runtime (nothing at p > 4).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..compare.config import Config
from ..compare.findings import FINDINGS_SCHEDULES, MATERIAL, REL_TOL, SMALL_GAIN
from ..core.errors import ParameterError
from ..core.files import atomic_write, output_target
from ..engines.registry import names as engine_names
from ..sweep.config import SweepSpec
from ..sweep.executor import run_sweep
from ..systems.llm import load_llm
from .boundary import MAP_AXES, Axis, Rule, fit_rule

#: the compute side of every map system: one H100 SXM5 per node (as the shipped presets)
DEVICE = {"name": "H100 SXM5 80GB", "peak_TFLOPs": 989, "memory_GiB": 80}
#: "equal runtime" of GPipe and 1F1B: within this fraction
EQUAL_WITHIN = MATERIAL


@dataclass(frozen=True)
class MapGrid:
    """The grid of a findings map.

    Example:
        >>> QUICK_GRID.num_configs, DEFAULT_GRID.num_configs
        (48, 2520)
    """

    ps: tuple[int, ...] = (4, 8)
    m_factors: tuple[int, ...] = (1, 2, 3, 4, 6, 8)
    bandwidths_GBps: tuple[float, ...] = (1, 2, 3, 5, 7, 10, 15, 25, 35, 50, 100, 200, 450, 900)
    latencies_us: tuple[float, ...] = (1, 10, 100)
    models: tuple[str, ...] = ("gpt3-1.3b", "llama2-7b", "gpt3-13b", "llama2-70b", "gpt3-175b")
    mfu: float = 0.4

    @property
    def num_configs(self) -> int:
        """Configurations (grid points) of the map."""
        return (
            len(self.ps) * len(self.m_factors) * len(self.bandwidths_GBps) * len(self.latencies_us) * len(self.models)
        )

    def describe(self) -> str:
        """One line naming every axis.

        Example:
            >>> MapGrid(ps=(4,), m_factors=(1,), bandwidths_GBps=(900,), latencies_us=(1,), models=("x",)).describe()
            'p in {4}, m in {p}, bandwidth 900 GB/s, latency {1} us, models x, MFU 0.4: 1 configuration'
        """
        bw = sorted(set(self.bandwidths_GBps))
        bws = f"{bw[0]:g} GB/s" if len(bw) == 1 else f"{bw[0]:g}-{bw[-1]:g} GB/s ({len(bw)} values)"
        return (
            f"p in {{{', '.join(map(str, self.ps))}}}, m in {{{', '.join(f'{k}p' if k > 1 else 'p' for k in self.m_factors)}}}, "
            f"bandwidth {bws}, latency "
            f"{{{', '.join(f'{x:g}' for x in self.latencies_us)}}} us, models {', '.join(self.models)}, "
            f"MFU {self.mfu:g}: {self.num_configs} configuration{'s' if self.num_configs != 1 else ''}"
        )


DEFAULT_GRID = MapGrid()
#: the --quick map: corners and a middle of every axis
QUICK_GRID = MapGrid(
    m_factors=(1, 4), bandwidths_GBps=(1, 25, 900), latencies_us=(1, 100), models=("gpt3-1.3b", "gpt3-175b")
)

#: finding key -> (subject of the boundary sentence, the per-point claim)
SUBJECTS: dict[str, tuple[str, str]] = {
    "abstraction": (
        "the closed-form bubble-ratio ranking and the simulated ranking disagree",
        "some pair of schedules is ordered one way by closed-form bubble ratio and the other way by "
        "makespan (>= 1% apart)",
    ),
    "gpipe-1f1b": (
        "GPipe and 1F1B take equal time (within 1%) with 1F1B's activation peak lower",
        "GPipe and 1F1B makespans within 1%, 1F1B's per-device peaks no higher and lower in total",
    ),
    "chimera": ("Chimera is faster than 1F1B", "Chimera's makespan below 1F1B's"),
    "hanayo": (
        "Hanayo (m = p, best of W = 1, 2) is faster than 1F1B",
        "at m = p, the faster Hanayo (W = 1 or 2) below 1F1B's makespan",
    ),
    "chimera-asym": (
        f"the asymmetric Chimera placement does not lower Chimera's memory peak and gains at most {SMALL_GAIN:.0%}",
        f"asymmetric Chimera: global peak not below Chimera's, runtime gain <= {SMALL_GAIN:.0%} (none at p > 4)",
    ),
}


def system_yaml(bandwidth_GBps: float, latency_us: float) -> str:
    """A system preset whose every pipeline hop crosses one link of this bandwidth and latency.

    Example:
        >>> from ppverify.systems.presets import parse_preset
        >>> parse_preset("systems", system_yaml(25, 10))["inter_node"]["bandwidth_GBps"]
        25
    """
    return (
        f"description: one {DEVICE['name']} per node, every hop on a {bandwidth_GBps:g} GB/s, {latency_us:g} us link\n"
        "source: ppverify findings map (synthetic link)\n"
        f"device: {{name: {DEVICE['name']}, peak_TFLOPs: {DEVICE['peak_TFLOPs']}, memory_GiB: {DEVICE['memory_GiB']}}}\n"
        "gpus_per_node: 1\nnics_per_node: 1\n"
        f"inter_node: {{name: link, latency_us: {latency_us:g}, bandwidth_GBps: {bandwidth_GBps:g}}}\n"
    )


def systems_folder(store: str | Path) -> Path:
    """The folder of a map's system presets, beside its store (``<store name>.systems``).

    Example:
        >>> systems_folder("out/fm.results.jsonl").as_posix()
        'out/fm.systems'
    """
    store = Path(store)
    return store.parent / (store.name.split(".")[0] + ".systems")


def _system_path(folder: Path, bandwidth_GBps: float, latency_us: float) -> Path:
    return folder / f"link-bw{bandwidth_GBps:g}-lat{latency_us:g}.yaml"


def write_systems(grid: MapGrid, folder: str | Path) -> dict[str, tuple[float, float]]:
    """Write one system preset per (bandwidth, latency) of ``grid`` into ``folder``; returns
    ``{path: (bandwidth_GBps, latency_us)}`` (paths absolute, so a resumed map finds its rows).

    Example:
        >>> import tempfile
        >>> sorted(write_systems(QUICK_GRID, tempfile.mkdtemp()).values())[:2]
        [(1, 1), (1, 100)]
    """
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for bw in grid.bandwidths_GBps:
        for lat in grid.latencies_us:
            path = _system_path(folder, bw, lat)
            text = system_yaml(bw, lat)
            if not path.exists() or path.read_text(encoding="utf-8", errors="replace") != text:
                atomic_write(path, text, "--store")
            out[str(path)] = (bw, lat)
    return out


def kept_rows(grid: MapGrid, store: str | Path, level: str = "async") -> int:
    """Rows of the map ``grid`` (at ``level``) that ``store`` holds: what a resumed run keeps, the
    count an interrupted map reports. Reads only; 0 when the store or its presets are not there yet.

    Example:
        >>> import tempfile, os
        >>> kept_rows(QUICK_GRID, os.path.join(tempfile.mkdtemp(), "m.jsonl"))
        0
    """
    from ..sweep.executor import grid_rows

    store = Path(store)
    folder = systems_folder(store).resolve()
    systems = {
        str(_system_path(folder, bw, lat)): (bw, lat) for bw in grid.bandwidths_GBps for lat in grid.latencies_us
    }
    if not store.is_file() or not all(Path(p).is_file() for p in systems):
        return 0
    return grid_rows(map_spec(grid, systems, level), store)


def map_spec(grid: MapGrid, systems: dict[str, tuple[float, float]], level: str = "async") -> SweepSpec:
    """The sweep of a map: the findings' schedules at every grid point, levels formula and
    ``level``; no Z3 proof per point (the schedules do not depend on the network). The slot table
    is left out: it would cost five times the simulation and the closed forms of every family but
    the asymmetric placement are exact.

    Example:
        >>> import tempfile
        >>> spec = map_spec(QUICK_GRID, write_systems(QUICK_GRID, tempfile.mkdtemp()))
        >>> len(spec.configs), spec.levels, spec.verify
        (48, ('formula', 'async'), False)
    """
    opts = (("mfu", grid.mfu),)
    configs = tuple(
        Config(p, k * p, path, model, options=opts)
        for model in grid.models
        for path in systems
        for p in grid.ps
        for k in grid.m_factors
    )
    levels = tuple(dict.fromkeys(("formula", level)))
    return SweepSpec("findings-map", FINDINGS_SCHEDULES, configs, levels, time_limit=0.5, max_opt_ops=0, verify=False)


def _faster(a: float, b: float) -> bool:
    return a < b * (1 - REL_TOL)


def _verdicts_of_config(rows: list[dict], level: str, p: int) -> dict[str, tuple[bool | None, float | None]]:
    """finding -> (holds, margin) at one configuration (its rows of every level and schedule)."""
    sim = {r["schedule"]: r for r in rows if r["level"] == level and r["makespan"] is not None}
    t = {k: float(r["makespan"]) for k, r in sim.items()}
    out: dict[str, tuple[bool | None, float | None]] = {}
    # abstraction: closed-form bubble-ratio order against the simulated order (a bound is no prediction)
    ratios = {
        r["schedule"]: float(r["bubble_ratio"])
        for r in rows
        if r["level"] == "formula" and r["bubble_ratio"] is not None and r["exact"] is True
    }
    common = [x for x in ratios if x in t]
    worst = 0.0
    for i, a in enumerate(common):
        for b in common[i + 1 :]:
            db, dm = ratios[a] - ratios[b], t[a] - t[b]
            rel = abs(dm) / min(t[a], t[b])
            if abs(db) > REL_TOL and rel >= MATERIAL and (db > 0) != (dm > 0):
                worst = max(worst, rel)
    out["abstraction"] = (worst > 0, worst) if len(common) >= 2 else (None, None)
    # gpipe-1f1b
    if "gpipe" in t and "1f1b" in t:
        pg, p1 = json.loads(sim["gpipe"]["peak_activations"]), json.loads(sim["1f1b"]["peak_activations"])
        diff = abs(t["gpipe"] - t["1f1b"]) / min(t["gpipe"], t["1f1b"])
        mem_ok = all(a <= b * (1 + REL_TOL) for a, b in zip(p1, pg)) and sum(p1) < sum(pg) * (1 - REL_TOL)
        out["gpipe-1f1b"] = (diff <= EQUAL_WITHIN and mem_ok, diff)
    else:
        out["gpipe-1f1b"] = (None, None)
    # chimera and hanayo against 1F1B
    out["chimera"] = (
        (_faster(t["chimera"], t["1f1b"]), 1 - t["chimera"] / t["1f1b"])
        if "chimera" in t and "1f1b" in t
        else (None, None)
    )
    han = [t[x] for x in ("hanayo-w1", "hanayo-w2") if x in t]
    out["hanayo"] = (_faster(min(han), t["1f1b"]), 1 - min(han) / t["1f1b"]) if han and "1f1b" in t else (None, None)
    # asymmetric against symmetric Chimera
    if "chimera" in t and "chimera-asym" in t:
        ms, ma = float(sim["chimera"]["peak_activation"]), float(sim["chimera-asym"]["peak_activation"])
        gain = 1 - t["chimera-asym"] / t["chimera"]
        ok = ma >= ms * (1 - REL_TOL) and gain <= SMALL_GAIN and (p <= 4 or gain <= REL_TOL)
        out["chimera-asym"] = (ok, gain)
    else:
        out["chimera-asym"] = (None, None)
    return out


def point_verdicts(
    results: pd.DataFrame, systems: dict[str, tuple[float, float]], level: str = "async"
) -> pd.DataFrame:
    """One row per (finding, grid point): ``holds`` (True / False / None = no data) and ``margin``
    (the finding's number there: Chimera's or Hanayo's advantage over 1F1B, the asymmetric gain,
    the GPipe-1F1B difference, the largest rank inversion), with the grid coordinates.

    ``results`` is the sweep's result frame; ``systems`` maps its system column to (bandwidth,
    latency).

    Example:
        >>> r = pd.DataFrame({"system": "s", "model": "gpt3-1.3b", "p": 4, "m": 4,
        ...                   "schedule": ["gpipe", "1f1b", "chimera"] * 2, "level": ["formula"] * 3 + ["async"] * 3,
        ...                   "makespan": [None, None, None, 16.0, 16.0, 12.0],
        ...                   "bubble_ratio": [0.5, 0.5, 0.4, None, None, None], "exact": True, "peak_activation": 4.0,
        ...                   "peak_activations": [None] * 3 + ["[4, 4, 4, 4]", "[4, 3, 2, 1]", "[3, 4, 4, 3]"]})
        >>> v = point_verdicts(r, {"s": (900, 1)})
        >>> v[["finding", "holds", "margin"]].values.tolist()
        [['abstraction', False, 0.0], ['gpipe-1f1b', True, 0.0], ['chimera', True, 0.25], ['hanayo', None, nan], ['chimera-asym', None, nan]]
        >>> v[["m_factor", "bandwidth_GBps", "latency_us", "params_B"]].to_dict("records")[0]
        {'m_factor': 1, 'bandwidth_GBps': 900.0, 'latency_us': 1.0, 'params_B': 1.3}
    """
    params = {md: load_llm(md).total_params() / 1e9 for md in results["model"].unique()}
    cols = [
        "system",
        "model",
        "p",
        "m",
        "schedule",
        "level",
        "makespan",
        "bubble_ratio",
        "exact",
        "peak_activation",
        "peak_activations",
    ]
    recs = results[cols].astype(object).where(results[cols].notna(), None).to_dict(orient="records")
    groups: dict[tuple, list[dict]] = {}
    for r in recs:
        groups.setdefault((r["system"], r["model"], int(r["p"]), int(r["m"])), []).append(r)
    rows = []
    for (sysname, model, p, m), g in groups.items():
        bw, lat = systems[sysname]
        base = {
            "p": p,
            "m": m,
            "m_factor": m // p,
            "bandwidth_GBps": float(bw),
            "latency_us": float(lat),
            "model": model,
            "params_B": round(params[model], 1),
        }
        for key, (holds, margin) in _verdicts_of_config(g, level, p).items():
            if key == "hanayo" and m != p:
                continue  # Hanayo's regime is m = p
            rows.append({"finding": key, **base, "holds": holds, "margin": margin})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class FindingMap:
    """One finding over the grid: where it holds, the fitted global boundary and one per
    (p, model) over m, bandwidth and latency."""

    key: str
    claim: str
    holds: int
    total: int
    rule: Rule
    local: tuple[tuple[int, str, Rule], ...] = field(default=())

    @property
    def sentence(self) -> str:
        """The global boundary in words."""
        return self.rule.sentence(SUBJECTS[self.key][0])


def _model_fmt(names: dict[float, str]) -> Callable[[float], str]:
    # the params_B axis names each size's model; a closure of its own keeps this finding's names
    return lambda x: f"{x:g}B ({names.get(x, '?')})"


def summarize(verdicts: pd.DataFrame) -> list[FindingMap]:
    """Fit the boundary of every finding, globally and per (p, model).

    Example:
        >>> v = pd.DataFrame({"finding": "chimera", "p": 4, "model": "x", "m_factor": [1, 1, 4, 4],
        ...                   "bandwidth_GBps": [1, 900, 1, 900], "latency_us": 1.0, "params_B": 1.3,
        ...                   "holds": [False, True, False, False]})
        >>> f = summarize(v)[0]
        >>> f.holds, f.total, f.sentence
        (1, 4, 'Chimera is faster than 1F1B when m = p and bandwidth = 900 GB/s (all 4 grid points agree)')
    """
    out = []
    for key in SUBJECTS:
        v = verdicts[verdicts["finding"] == key]
        if v.empty:
            continue
        known = v[v["holds"].notna()]
        names = dict(zip(v["params_B"], v["model"]))
        axes = [
            a if a.column != "params_B" else Axis(a.column, a.name, _model_fmt(names))
            for a in MAP_AXES
            if not (key == "hanayo" and a.column == "m_factor")
        ]
        local = []
        for (p, model), g in v.groupby(["p", "model"], sort=False):
            local.append(
                (
                    int(p),
                    str(model),
                    fit_rule(g, axes=[a for a in axes if a.column in ("m_factor", "bandwidth_GBps", "latency_us")]),
                )
            )
        out.append(
            FindingMap(
                key,
                SUBJECTS[key][1],
                int(known["holds"].astype(bool).sum()),
                len(known),
                fit_rule(v, axes=axes),
                tuple(local),
            )
        )
    return out


@dataclass(frozen=True)
class MapResult:
    """A computed map: the grid, the semantics, the sweep's rows, the per-point verdicts and the
    per-finding summaries."""

    grid: MapGrid
    level: str
    results: pd.DataFrame
    verdicts: pd.DataFrame
    findings: tuple[FindingMap, ...]


def run_map(
    grid: MapGrid = DEFAULT_GRID,
    store: str | Path = "findings-map.results.jsonl",
    level: str = "async",
    executor: str = "local",
    workers: int | None = None,
    batch: int = 8,
    progress: bool = False,
) -> MapResult:
    """Run (or resume) the map's sweep and evaluate every finding at every grid point. The system
    presets go to ``STORE``'s folder, in ``<store name>.systems/``.

    Example:
        >>> import tempfile, os
        >>> g = MapGrid(ps=(4,), m_factors=(1,), bandwidths_GBps=(900,), latencies_us=(1,), models=("gpt3-1.3b",))
        >>> r = run_map(g, os.path.join(tempfile.mkdtemp(), "m.jsonl"), workers=1)  # doctest: +SKIP
        >>> [(f.key, f.holds, f.total) for f in r.findings][2]  # doctest: +SKIP
        ('chimera', 1, 1)
    """
    engines = engine_names(levels_only=True)
    if level not in engines:
        raise ParameterError("level", level, f"the map's makespans come from one of {', '.join(engines)}")
    output_target(store, "--store")  # a folder or a device: refused before the presets are written beside it
    store = Path(store)
    systems = write_systems(grid, systems_folder(store))
    spec = map_spec(grid, systems, level)
    results = run_sweep(spec, store, executor, workers, batch, progress=progress, ranks=False)
    verdicts = point_verdicts(results, systems, level)
    return MapResult(grid, level, results, verdicts, tuple(summarize(verdicts)))


__all__ = [
    "DEFAULT_GRID",
    "QUICK_GRID",
    "SUBJECTS",
    "FindingMap",
    "MapGrid",
    "MapResult",
    "kept_rows",
    "map_spec",
    "point_verdicts",
    "run_map",
    "summarize",
    "system_yaml",
    "write_systems",
]
