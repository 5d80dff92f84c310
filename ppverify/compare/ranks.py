"""Ranks of comparison rows: by makespan within one configuration and one level (1 = fastest;
makespans within a relative 1e-9 tie and share the lower rank; a schedule that does not fit device
memory has none), the rank changes between levels and the gap to bound.

A rank change is marked when a schedule's order against the schedules ranked at both levels differs
from the previous level that produced numbers (formula -> slot -> async -> contention -> optimum):
a schedule ranked at one of them only moves no one, so a printed rank may change unmarked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

import pandas as pd

from .config import ALL_LEVELS
from .crossover import TIE
from .results import COLUMNS


def over_cap(family_peak: object, cap: object) -> bool:
    """Whether a family's own peak (its async row) is above the cap its optimum was solved at: the
    optimum and its bound then hold for other schedules (those within the cap), so the family
    gets no gap to bound. A missing cap or peak (unlimited memory, no timeline) is never over.

    Example:
        >>> over_cap(4.0, 2.0), over_cap(4.0, 4.0), over_cap(4.0, None), over_cap(float("nan"), 2.0)
        (True, False, False, False)
    """
    if family_peak is None or cap is None or pd.isna(family_peak) or pd.isna(cap):
        return False
    peak, limit = float(family_peak), float(cap)  # type: ignore[arg-type]
    return peak > limit + 1e-9 * max(1.0, abs(limit))  # bytes or activations: a relative tolerance


def oom_devices_of(cell: object) -> list[int]:
    """The devices a row's ``oom_devices`` names (JSON text or a list; missing or empty: none).

    Example:
        >>> oom_devices_of("[0, 1]"), oom_devices_of(None), oom_devices_of(float("nan")), oom_devices_of("")
        ([0, 1], [], [], [])
    """
    if cell is None or cell is pd.NA or (isinstance(cell, float) and math.isnan(cell)):
        return []
    if isinstance(cell, str):
        return [int(d) for d in json.loads(cell)] if cell.strip() else []
    return [int(d) for d in cell]  # type: ignore[attr-defined]


def does_not_fit(df: pd.DataFrame) -> pd.Series:
    """Per row, whether its schedule does not fit device memory (``oom_devices`` names a device):
    every level but the optimum times the same schedule, so one of their rows out of memory puts
    all of them out (a closed form or a measured run of a schedule that cannot run on the system
    is no more a contender than its simulation); the optimum, another op order, by its own row.
    Rows without the column (stored by an older ppverify) fit.

    Example:
        >>> df = pd.DataFrame({"config": "k", "schedule": ["a", "a", "a", "b"], "level": ["formula", "async", "optimum", "async"],
        ...                    "oom_devices": [None, "[0]", "[]", "[]"]})
        >>> does_not_fit(df).tolist()
        [True, True, False, False]
    """
    if "oom_devices" not in df:
        return pd.Series(False, index=df.index)
    own = df["oom_devices"].map(lambda cell: bool(oom_devices_of(cell))).astype(bool)
    timed = df["level"] != "optimum"
    out_keys = set(zip(df["config"][own & timed], df["schedule"][own & timed]))
    shared = pd.Series([(c, s) in out_keys for c, s in zip(df["config"], df["schedule"])], index=df.index)
    return own | (shared & timed)


def _less(a: float, b: float) -> bool:
    """``a`` faster than ``b`` by more than a relative :data:`~.crossover.TIE` (float noise is a tie)."""
    return b - a > TIE * max(abs(a), abs(b))


def tie_ranks(values: Iterable[float]) -> list[float]:
    """Ranks by value, 1 = lowest, values within a relative :data:`~.crossover.TIE` of each
    other tied (sharing the lower rank: 1 + the number of values lower by more than that); NaN
    stays unranked. The crossings and the findings treat such makespans as equal, so ranks do too.

    Example:
        >>> # 0.07297859948275805 and ...832346 differ by 7.6e-11 relative: a tie, both rank 1; 0.08 is third
        >>> tie_ranks([0.07297859948832346, 0.07297859948275805, 0.08, float("nan")])
        [1.0, 1.0, 3.0, nan]
    """
    vals = list(values)
    return [
        float("nan") if math.isnan(x) else float(1 + sum(not math.isnan(o) and _less(o, x) for o in vals)) for x in vals
    ]


def add_ranks(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``rank`` (by makespan within config and level, makespans within a relative
    :data:`~.crossover.TIE` tied: :func:`tie_ranks`; a schedule that does not fit device memory,
    :func:`does_not_fit`, has none), ``rank_change`` (``"2->3"`` when it differs
    from the previous level with numbers, both ranks taken among the schedules both levels rank: a
    closed form that is only a bound has no rank, and its family ranked at the next level alone
    moves no one), ``gap_to_bound`` (async rows: ``(makespan - bound) /
    makespan``, the bound being the CP-SAT optimum of the same placement at the optimum's memory, or
    its proven lower bound; none for a family whose own peak is over that memory, see
    :func:`over_cap`) and ``optimum_peak`` (async rows: the highest per-device activation peak
    of that optimum's schedule).

    Example:
        >>> rows = [("a", "slot", 10.0), ("b", "slot", 12.0), ("c", "slot", 10.0),
        ...         ("a", "async", 11.0), ("b", "async", 10.0), ("c", "async", 13.0)]
        >>> df = pd.DataFrame([{**dict.fromkeys(COLUMNS), "config": "k", "schedule": s, "level": lv, "makespan": t}
        ...                    for s, lv, t in rows])
        >>> add_ranks(df)[["schedule", "level", "rank", "rank_change"]].values.tolist()
        [['a', 'slot', 1, ''], ['b', 'slot', 3, ''], ['c', 'slot', 1, ''], ['a', 'async', 2, '1->2'], ['b', 'async', 1, '3->1'], ['c', 'async', 3, '1->3']]
        >>> # z has no rank under the formula (a bound) and is fastest under slot: a and b keep their order
        >>> rows = [("a", "formula", 5.0, True), ("b", "formula", 6.0, True), ("z", "formula", 4.0, False),
        ...         ("a", "slot", 5.0, True), ("b", "slot", 6.0, True), ("z", "slot", 4.5, True)]
        >>> df = pd.DataFrame([{**dict.fromkeys(COLUMNS), "config": "k", "schedule": s, "level": lv, "makespan": t,
        ...                     "exact": e} for s, lv, t, e in rows])
        >>> add_ranks(df)[["schedule", "level", "rank", "rank_change"]].values.tolist()[3:]
        [['a', 'slot', 2, ''], ['b', 'slot', 3, ''], ['z', 'slot', 1, '']]
    """
    df = df.copy()
    key = ["config", "level"]
    ms = pd.to_numeric(df["makespan"], errors="coerce").astype(float)
    # a closed form that is only a bound is not a prediction: it gets no rank
    ms[(df["level"] == "formula") & (df["exact"] == False)] = float("nan")  # noqa: E712 (object column)
    ms[does_not_fit(df).to_numpy()] = float("nan")  # it cannot run on the system: no contender
    ranks = pd.Series(float("nan"), index=df.index)
    for idx in ms.groupby([df[k] for k in key], sort=False).groups.values():
        ranks[idx] = tie_ranks(ms[idx])
    df["rank"] = ranks.astype("Int64")
    order = {lv: n for n, lv in enumerate(ALL_LEVELS)}
    ranked: dict[tuple, dict] = {}  # (config, level) -> {schedule: makespan} of the ranked rows
    for idx in ms.index[ms.notna()]:
        ranked.setdefault((df.at[idx, "config"], df.at[idx, "level"]), {})[df.at[idx, "schedule"]] = ms[idx]
    changes = [""] * len(df)
    gaps: list[float | None] = [None] * len(df)
    opt_peaks: list[float | None] = [None] * len(df)
    for (config, sched), grp in df.groupby(["config", "schedule"], sort=False):
        prev = None
        for idx in sorted(grp.index, key=lambda i: order[df.at[i, "level"]]):
            if pd.isna(df.at[idx, "rank"]):
                continue
            level = df.at[idx, "level"]
            if prev is not None:
                before, now = ranked[(config, prev)], ranked[(config, level)]
                common = before.keys() & now.keys()  # the same field at both levels

                def rank(at: dict) -> int:
                    return 1 + sum(_less(at[o], at[sched]) for o in common)

                if rank(before) != rank(now):
                    changes[df.index.get_loc(idx)] = f"{rank(before)}->{rank(now)}"
            prev = level
        opt = grp[grp["level"] == "optimum"]
        asy = grp[grp["level"] == "async"]
        if len(opt) and len(asy) and asy["makespan"].notna().all():
            ref = opt["makespan"].iloc[0] if opt["status"].iloc[0] == "optimal" else opt["lower_bound"].iloc[0]
            value = float(asy["makespan"].iloc[0])
            fits = not over_cap(asy["peak_activation"].iloc[0], opt["memory_cap"].iloc[0])
            if ref is not None and not pd.isna(ref) and value > 0 and fits:
                gaps[df.index.get_loc(asy.index[0])] = (value - float(ref)) / value
            peak = opt["peak_activation"].iloc[0]
            if peak is not None and not pd.isna(peak):
                opt_peaks[df.index.get_loc(asy.index[0])] = float(peak)
    df["rank_change"] = changes
    df["gap_to_bound"] = gaps
    df["optimum_peak"] = opt_peaks
    return df[list(COLUMNS)]


def rank_changes(df: pd.DataFrame) -> list[str]:
    """One line per rank change: ``config: schedule a->b under level``.

    Example:
        >>> df = pd.DataFrame({"config": "k", "schedule": ["a", "b", "a", "b"], "level": ["slot"] * 2 + ["async"] * 2,
        ...                    "rank_change": ["", "", "1->2", "2->1"]})
        >>> rank_changes(df)
        ['k: a 1->2 under async', 'k: b 2->1 under async']
    """
    sel = df[df["rank_change"] != ""]
    return [f"{r.config}: {r.schedule} {r.rank_change} under {r.level}" for r in sel.itertuples()]


__all__ = ["add_ranks", "does_not_fit", "oom_devices_of", "over_cap", "rank_changes", "tie_ranks"]
