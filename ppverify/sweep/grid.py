"""Sweeps: a YAML grid (schedules x p x m x systems x models x levels) expanded into points, run
on a local process pool or a Ray cluster (:mod:`ppverify.sweep.executor`), with results stored
incrementally so an interrupted sweep resumes without losing or duplicating a row.

Storage is a JSON-lines file: one line per (schedule, configuration, level) row, carrying the
content hash of its point (``point`` column: SHA-256 of the canonical JSON of schedule entry,
configuration, level, solver budget and the content of every file the point reads: its schedule
file, its system and model presets, shipped or given as paths; a file by its name and content, never
by the path it was reached by, so the same config run from another folder, or a moved store, finds
its rows). Editing a preset or schedule file
between a sweep and its resume therefore changes the hash of every point that reads it, and those
points are computed again; the others resume. A line is written, flushed and fsynced as soon as its
task returns. On resume, a torn last line (the process died mid-write) is dropped, the file is
rewritten with the intact lines, and every point whose hash is present is skipped.

The config file and its keys: :mod:`ppverify.sweep.config`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..compare.config import LEVEL_SEMANTICS, Config, ScheduleEntry, input_digests
from ..core.memory_cap import CapSpec
from .config import SweepSpec

if TYPE_CHECKING:
    import pandas as pd

    from ..compare.results import PointResult

#: bump when the meaning of a stored row changes (old rows then no longer match new points)
STORE_VERSION = 1


@dataclass(frozen=True)
class Task:
    """One unit of work: one configuration, with each schedule entry's levels still missing.

    Entries of one configuration travel together so schedules sharing a placement share its
    CP-SAT optimum.
    """

    config: Config
    items: tuple[tuple[ScheduleEntry, tuple[str, ...], tuple[str, ...]], ...]  # (entry, levels, hashes)
    time_limit: float
    max_opt_ops: int
    verify: bool = True
    memory_cap: CapSpec | None = None

    @property
    def num_rows(self) -> int:
        """Rows this task produces."""
        return sum(len(levels) for _, levels, _ in self.items)


def preset_identity(name: str | None) -> str | None:
    """What a point's key holds of a system or model preset: a shipped preset's name as given,
    and for a preset file (``.yaml``, or a name with a folder in it) only its file name, its
    content being keyed by its digest: the path it was reached by (the config's folder as typed on
    the command line, a store's folder after a move) is no part of the point.

    Example:
        >>> preset_identity("dgx-h100"), preset_identity("/abs/grid/sys.yaml"), preset_identity("sys.yaml")
        ('dgx-h100', 'file sys.yaml', 'file sys.yaml')
    """
    from pathlib import PurePath

    if name is None or not (name.lower().endswith((".yaml", ".yml")) or "/" in name or "\\" in name):
        return name
    return f"file {PurePath(name.replace(chr(92), '/')).name}"


def point_hash(
    entry: ScheduleEntry,
    config: Config,
    level: str,
    time_limit: float,
    max_opt_ops: int,
    verify: bool = True,
    memory_cap: CapSpec | None = None,
    digests: dict[str, str | None] | None = None,
) -> str:
    """Content hash of one point (what a stored row is keyed by): the entry, the configuration,
    the level, the solver budget and the content of every file the point reads
    (:func:`input_digests`, computed when ``digests`` is not given).

    Example:
        >>> e, c = ScheduleEntry("gpipe", "gpipe"), Config(4, 4, costs=(("F", 1.0),))
        >>> h = point_hash(e, c, "slot", 0.5, 96)
        >>> len(h), h == point_hash(e, c, "slot", 0.5, 96), h == point_hash(e, c, "async", 0.5, 96)
        (16, True, False)
    """
    # the optimum's memory is part of its point: rows solved at another cap (or, before caps, with
    # unlimited memory) are recomputed
    budget = (
        {
            "time_limit": time_limit,
            "max_opt_ops": max_opt_ops,
            "memory_cap": memory_cap.text if memory_cap else "own peak",
        }
        if level == "optimum"
        else {}
    )
    # keyed by the content of the files read, so editing one invalidates the rows that read it; a
    # preset file by its name and content, not by the path it was reached by (a config run from
    # another folder, a moved store: the same points)
    files = input_digests(entry, config) if digests is None else digests
    content = files.get("file")
    presets = {k: v for k, v in files.items() if k != "file"}
    doc = {
        "v": STORE_VERSION,
        "entry": [entry.label, entry.family, [list(x) for x in entry.fixed], entry.only_m_eq_p, content],
        "config": [
            config.p,
            config.m,
            preset_identity(config.system),
            preset_identity(config.model),
            [list(x) for x in config.costs] if config.costs else None,
            config.comm_delay,
            [list(x) for x in config.options],
        ],
        "level": level,
        **budget,
        **({} if verify else {"verify": False}),
        **({"presets": presets} if presets else {}),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def pending_tasks(spec: SweepSpec, done: set[str]) -> list[Task]:
    """One task per configuration holding every (entry, levels) whose point hash is not in ``done``.

    Example:
        >>> from ppverify.sweep.config import parse_sweep
        >>> spec = parse_sweep({"schedules": ["gpipe", "1f1b"], "p": 2, "m": [1, 2], "costs": {"F": 1},
        ...                     "levels": ["slot", "async"]})
        >>> ts = pending_tasks(spec, set())
        >>> len(ts), ts[0].num_rows, ts[0].items[0][1]
        (2, 4, ('slot', 'async'))
        >>> pending_tasks(spec, {ts[0].items[0][2][0]})[0].num_rows
        3
    """
    out = []
    seen: dict[str, str | None] = {}  # each file read once per call
    for cfg in spec.configs:
        items = []
        for e in spec.entries:
            files = input_digests(e, cfg, seen)
            lv_h = [
                (lv, point_hash(e, cfg, lv, spec.time_limit, spec.max_opt_ops, spec.verify, spec.memory_cap, files))
                for lv in spec.levels
            ]
            todo = [(lv, h) for lv, h in lv_h if h not in done]
            if todo:
                items.append((e, tuple(lv for lv, _ in todo), tuple(h for _, h in todo)))
        if items:
            out.append(Task(cfg, tuple(items), spec.time_limit, spec.max_opt_ops, spec.verify, spec.memory_cap))
    return out


def run_task(task: Task) -> list[dict]:
    """Evaluate one task; one raw row (no ranks yet) per level, keyed by its point hash.

    Example:
        >>> from ppverify.sweep.config import parse_sweep
        >>> spec = parse_sweep({"schedules": ["gpipe", "1f1b"], "p": 2, "m": 4, "costs": {"F": 1, "B": 2},
        ...                     "levels": ["slot"]})
        >>> task = pending_tasks(spec, set())[0]
        >>> rows = run_task(task)  # (m+p-1)(tF+tB) = 15 each; GPipe holds m activations, 1F1B p
        >>> [(r["schedule"], r["makespan"], r["peak_activation"]) for r in rows]
        [('gpipe', 15.0, 4.0), ('1f1b', 15.0, 2.0)]
        >>> [r["point"] for r in rows] == [h for _, _, hs in task.items for h in hs]
        True
    """
    from ..compare.evaluate import evaluate_point
    from ..compare.table import point_rows

    cache: dict = {}
    points: list[PointResult] = []
    hashes: list[str] = []
    for entry, levels, hs in task.items:
        points.append(
            evaluate_point(
                entry,
                task.config,
                levels,
                task.time_limit,
                cache,
                task.max_opt_ops,
                verify=task.verify,
                memory_cap=task.memory_cap,
            )
        )
        hashes.extend(hs)
    # plain rows, no frame: building one per point cost more than evaluating cheap points
    rows = point_rows(points)
    for r, h in zip(rows, hashes):
        r["point"] = h
    return rows


def results_frame(rows: list[dict], spec: SweepSpec | None = None, ranks: bool = True) -> pd.DataFrame:
    """Rows of a store as the comparison frame (ranks, rank changes and gaps recomputed over the
    whole sweep unless ``ranks`` is False), restricted to the points of ``spec`` when given, and
    then in the grid's order (configurations, schedules, levels), whatever order the rows finished
    in: an interrupted and resumed sweep writes the same table as one run straight through.

    Example:
        >>> from ppverify.sweep.config import parse_sweep
        >>> grid = {"schedules": ["gpipe", "zb-h1"], "p": 2, "m": 4, "costs": {"F": 1, "B": 2}, "levels": ["slot"]}
        >>> rows = run_task(pending_tasks(parse_sweep(grid), set())[0])
        >>> results_frame(rows)[["schedule", "makespan", "rank"]].values.tolist()
        [['gpipe', 15.0, 2], ['zb-h1', 13.0, 1]]
        >>> only_gpipe = parse_sweep({**grid, "schedules": ["gpipe"]})
        >>> results_frame(rows, only_gpipe)["schedule"].tolist(), "rank" in results_frame(rows, ranks=False)
        (['gpipe'], False)
    """
    import pandas as pd

    from ..compare.ranks import add_ranks
    from ..compare.table import COLUMNS, DERIVED

    if spec is not None:
        points = [(h, task.config) for task in pending_tasks(spec, set()) for _, _, hs in task.items for h in hs]
        order = {h: n for n, (h, _) in enumerate(points)}
        rows = sorted((r for r in rows if r.get("point") in order), key=lambda r: order[r["point"]])
        # a row stored from another folder (or before the store moved) names its preset files by
        # the path they were reached by then: it takes this run's, so one configuration is one label
        key = {h: cfg.key() for h, cfg in points}
        rows = [{**r, **key[r["point"]]} for r in rows]
    base = [c for c in COLUMNS if c not in DERIVED]
    df = pd.DataFrame(rows, columns=base + ["point"])
    # a level's description, not a result: rows stored by an older ppverify keep their numbers but
    # show the current wording, so a resumed table reads as one run straight through
    df["semantics"] = [LEVEL_SEMANTICS.get(lv, s) for lv, s in zip(df["level"], df["semantics"])]
    if not ranks:
        return df
    out = add_ranks(df[base])
    out["point"] = df["point"].values
    return out


def iter_chunks(items: list, size: int) -> Iterator[list]:
    """Consecutive slices of ``items`` of at most ``size``.

    Example:
        >>> list(iter_chunks([1, 2, 3, 4, 5], 2))
        [[1, 2], [3, 4], [5]]
    """
    for i in range(0, len(items), size):
        yield items[i : i + size]
