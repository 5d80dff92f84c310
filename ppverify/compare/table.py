"""Comparison results as a table: one row per (schedule, configuration, abstraction level) and the
printed per-configuration tables; the ranks, rank changes and gaps to bound are :mod:`.ranks`'.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

import pandas as pd
from tabulate import tabulate

from ..views.table_report import exact_number, plain_number
from .config import ALL_LEVELS, LEVEL_SEMANTICS, MEASURED_TRACE_SEMANTICS
from .optimum import UNLIKE
from .ranks import add_ranks, does_not_fit, over_cap
from .results import COLUMNS, DERIVED, LevelResult, PointResult


def _cut_words(note: str) -> str:
    """The clock's part of an optimum row's note (its parts are joined by "; ").

    Example:
        >>> _cut_words("unlike ops: x; wall-clock limit reached in: search")
        'wall-clock limit reached in: search'
    """
    return next(part for part in note.split("; ") if " limit reached in: " in part)


def to_frame(points: Iterable[PointResult]) -> pd.DataFrame:
    """Flatten point results to the result frame, then add ranks, rank changes and gaps.

    Example:
        >>> from ppverify.compare.config import Config, ScheduleEntry
        >>> from ppverify.compare.evaluate import evaluate_point
        >>> cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.0)
        >>> df = to_frame([evaluate_point(ScheduleEntry(n, n), cfg, ("slot",)) for n in ("gpipe", "1f1b")])
        >>> df[["schedule", "makespan", "peak_activation", "rank"]].values.tolist()
        [['gpipe', 21.0, 4.0, 1], ['1f1b', 21.0, 4.0, 1]]
    """
    df = pd.DataFrame(point_rows(points), columns=[c for c in COLUMNS if c not in DERIVED])
    return add_ranks(df)


def point_rows(points: Iterable[PointResult]) -> list[dict]:
    """One plain dict per (point, level): the frame's columns except the ranks and gaps (what a
    sweep stores; cheaper than building a frame per point).

    Example:
        >>> from ppverify.compare.config import Config, ScheduleEntry
        >>> from ppverify.compare.evaluate import evaluate_point
        >>> cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.0)
        >>> [(r["schedule"], r["makespan"]) for r in point_rows([evaluate_point(ScheduleEntry("gpipe", "gpipe"), cfg, ("slot",))])]
        [('gpipe', 21.0)]
    """
    rows = []
    for pt in points:
        for r in pt.results:
            peaks = list(r.peak_activations) if r.peak_activations is not None else None
            rows.append(
                {
                    **pt.config.key(),
                    "schedule": pt.entry.label,
                    "family": pt.entry.family,
                    "params": json.dumps(pt.entry.params, sort_keys=True),
                    "level": r.level,
                    "semantics": MEASURED_TRACE_SEMANTICS if _from_trace(r) else LEVEL_SEMANTICS[r.level],
                    "status": r.status,
                    "makespan": r.makespan,
                    "time_unit": pt.time_unit,
                    "bubble_ratio": r.bubble_ratio,
                    "peak_activation": max(peaks) if peaks else None,
                    "peak_activations": json.dumps(peaks) if peaks is not None else None,
                    "memory_unit": pt.memory_unit,
                    "lower_bound": r.lower_bound,
                    "exact": r.exact,
                    "verified": pt.verified,
                    "note": r.note,
                    "seconds": r.seconds,
                    "memory_cap": r.memory_cap,
                    # as peak_activations: JSON text, one cell in a CSV (None: no capacity known)
                    "oom_devices": None if r.oom_devices is None else json.dumps(list(r.oom_devices)),
                }
            )
    return rows


def fmt_time(x: float, unit: str) -> str:
    """A makespan as the tables print it: seconds in ms to 4 significant digits, abstract units as
    ``show`` prints them (their values are exact sums of the costs given); never in scientific
    notation, whose ``1.2e+04`` hid everything past the second digit of a long step.

    Example:
        >>> # 49.4503 s is 49450.3 ms: all five integer digits; 12004.5 units stays exact
        >>> fmt_time(49.4503, "s"), fmt_time(0.0822, "s"), fmt_time(12004.5, "units"), fmt_time(16.5, "units")
        ('49450', '82.2', '12004.5', '16.5')
    """
    if unit != "s":
        return exact_number(x)
    ms = x * 1e3
    if ms == 0 or not math.isfinite(ms):
        return f"{ms:g}"
    return plain_number(ms, 4)


def _fmt_mem(x: float, unit: str) -> str:
    if unit in ("bytes", "B"):
        return f"{x / 2**30:.3g}"
    return f"{x:.3g}"


def _inexact(exact: object) -> bool:
    return exact is not None and not pd.isna(exact) and not bool(exact)


def format_config_table(df: pd.DataFrame, config: str) -> str:
    """One configuration's table: per schedule, the makespan and rank under each level (``*``
    marks a rank change, see :func:`add_ranks`; ``OOM`` a schedule that does not fit device
    memory, unranked), bubble ratio, peak activation memory and gap to bound; below it a line
    per reason a level gave ``error``.

    Example:
        >>> from ppverify.compare.config import Config, ScheduleEntry
        >>> from ppverify.compare.evaluate import evaluate_point
        >>> cfg = Config(2, 2, costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.0)
        >>> df = to_frame([evaluate_point(ScheduleEntry(n, n), cfg, ("slot",)) for n in ("gpipe", "1f1b")])
        >>> print(format_config_table(df, cfg.label))
        == p=2 m=2 F=1,B=2 c=0 ==  (time in units, memory in activations)
        schedule    slot    bubble (slot)    peak act. (slot)
        ----------  ------  ---------------  ------------------
        gpipe       9 (1)   0.333            2
        1f1b        9 (1)   0.333            2
    """
    sub = df[df["config"] == config]
    levels = [lv for lv in ALL_LEVELS if lv in set(sub["level"])]
    shown = [lv for lv in levels if sub[(sub["level"] == lv)]["makespan"].notna().any()]
    sim = next((lv for lv in ("async", "contention", "slot", "formula") if lv in shown), None)
    valued = sub[sub["makespan"].notna()]
    tu = (valued if len(valued) else sub)["time_unit"].iloc[0]
    mu = (valued if len(valued) else sub)["memory_unit"].iloc[0]
    tu_txt = "ms" if tu == "s" else tu
    mu_txt = "GiB" if mu in ("bytes", "B") else mu
    headers = ["schedule"] + shown
    if sim:
        headers += [f"bubble ({sim})", f"peak act. ({sim})"]
    # the measured level's own peaks (the saved activations of the real run), beside the model's
    has_measured_peak = "measured" in shown and sub[sub["level"] == "measured"]["peak_activation"].notna().any()
    if has_measured_peak:
        headers.append("peak act. (measured)")
    over = {  # families whose own peak is above their optimum's cap: no gap, and a note says why
        sched: over_cap(
            g[g["level"] == "async"]["peak_activation"].iloc[0], g[g["level"] == "optimum"]["memory_cap"].iloc[0]
        )
        for sched, g in sub.groupby("schedule", sort=False)
        if {"async", "optimum"} <= set(g["level"])
    }
    has_gap = sub["gap_to_bound"].notna().any() or any(over.values())
    if has_gap:
        headers += ["peak act. (opt.)", "gap to bound"]
    has_z3 = "verified" in sub and (sub["verified"].fillna("") != "").any()
    if has_z3:
        headers.append("Z3")
    rows = []
    notes: list[str] = []
    out_of_memory = does_not_fit(sub)
    errors: dict[tuple[str, str], list[str]] = {}  # (level, reason) -> schedules: one footnote per reason
    for sched in dict.fromkeys(sub["schedule"]):
        srow = sub[sub["schedule"] == sched].set_index("level")
        oom = dict(zip(srow.index, out_of_memory[sub["schedule"] == sched]))
        all_blank = not shown or all(pd.isna(srow.loc[lv]["makespan"]) for lv in shown)
        row = [sched]
        for lv in shown:
            r = srow.loc[lv]
            if pd.isna(r["makespan"]):
                row.append(r["status"])
                if r["status"] == "error":  # docs/comparison.md: each reason a level gave `error` is a line
                    errors.setdefault((lv, str(r["note"])), []).append(str(sched))
                continue
            cell = f"{fmt_time(r['makespan'], tu)} ({'-' if pd.isna(r['rank']) else r['rank']})"
            if lv == "formula" and _inexact(r["exact"]):
                cell = "~" + cell
            if r["rank_change"]:
                cell += "*"
            if oom[lv]:
                cell += " OOM"
            if lv == "optimum" and r["status"] == "feasible" and not pd.isna(r["lower_bound"]):
                cell += f" lb {fmt_time(r['lower_bound'], tu)}"
            if lv == "optimum" and " limit reached in: " in str(r["note"]):
                # the clock, not the work count, stopped it: a rerun on a quieter machine may differ
                notes.append(f"{sched}: optimum {_cut_words(str(r['note']))} (a rerun may differ)")
            row.append(cell)
        if sim:
            r = srow.loc[sim]
            # a closed form that is only a bound gives bounds here too: marked as its makespan is
            bound = "~" if sim == "formula" and _inexact(r["exact"]) else ""
            row.append("-" if pd.isna(r["bubble_ratio"]) else f"{bound}{r['bubble_ratio']:.3f}")
            row.append("-" if pd.isna(r["peak_activation"]) else bound + _fmt_mem(r["peak_activation"], mu))
        if has_measured_peak:
            r = srow.loc["measured"]
            row.append("-" if pd.isna(r["peak_activation"]) else _fmt_mem(r["peak_activation"], mu))
        if has_gap:
            g = srow.loc["async"]["gap_to_bound"] if "async" in srow.index else None
            opt = srow.loc["optimum"] if "optimum" in srow.index else None
            row.append("-" if opt is None or pd.isna(opt["peak_activation"]) else _fmt_mem(opt["peak_activation"], mu))
            if over.get(sched) and opt is not None:
                row.append("over cap")
                notes.append(
                    f"{sched}: its own peak {_fmt_mem(srow.loc['async']['peak_activation'], mu)} is over the cap "
                    f"{_fmt_mem(opt['memory_cap'], mu)}; the optimum and its bound hold for the schedules within "
                    "the cap: no gap to state"
                )
            elif g is None or pd.isna(g) or opt is None:
                row.append("-")
            else:
                # against a proven bound only: the true gap is at most this
                cell = ("" if opt["status"] == "optimal" else "<=") + f"{100 * max(g, 0.0):.1f}%"
                # the optimum level writes UNLIKE first in its note (a row carries no other marker)
                row.append(cell + ("+" if str(opt["note"]).startswith(UNLIKE) else ""))
        if has_z3:
            v = str(srow.iloc[0]["verified"] or "")
            row.append(
                "valid" if v == "valid" else ("INVALID" if v.startswith("INVALID") else ("-" if not v else "n/a"))
            )
            if v.startswith("INVALID"):
                notes.append(f"{sched}: {v}")
        rows.append(row)
        if all_blank and srow.iloc[0]["status"] not in ("not applicable", "error"):  # an error has its line
            notes.append(f"{sched}: {srow.iloc[0]['status']} ({srow.iloc[0]['note']})")
    merged: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # one reason at several levels: one line
    for (lv, why), scheds in errors.items():
        merged.setdefault((why, tuple(scheds)), []).append(lv)
    notes += [f"{', '.join(lvs)} error for {', '.join(sc)}: {why}" for (why, sc), lvs in merged.items()]
    title = f"== {config} ==  (time in {tu_txt}, memory in {mu_txt})"
    out = [title, tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)]
    # levels missing here but present elsewhere get a note; levels missing everywhere are
    # summarised once by :func:`unavailable_levels`
    anywhere = set(df[df["makespan"].notna()]["level"])
    missing = [lv for lv in levels if lv not in shown and lv in anywhere]
    for lv in missing:
        note = sub[sub["level"] == lv]["note"].iloc[0]
        out.append(f"  {lv}: no numbers ({sub[sub['level'] == lv]['status'].iloc[0]}: {note})")
    out.extend(f"  {n}" for n in notes)
    return "\n".join(out)


def unavailable_levels(df: pd.DataFrame) -> dict[str, str]:
    """Levels that produced no number anywhere, with the first reason given.

    Example:
        >>> import pandas as pd
        >>> unavailable_levels(pd.DataFrame({"level": ["slot", "async"], "makespan": [1.0, None],
        ...                                  "status": ["ok", "unavailable"], "note": ["", "engine missing"]}))
        {'async': 'unavailable: engine missing'}
    """
    out = {}
    for lv, grp in df.groupby("level", sort=False):
        if grp["makespan"].isna().all():
            out[lv] = f"{grp['status'].iloc[0]}: {grp['note'].iloc[0]}"
    return out


def never_applicable(df: pd.DataFrame) -> dict[str, str]:
    """Schedules outside their rules in every configuration of a run, with the first reason: their
    rows say only "not applicable", so without this a file at another p and m, or Chimera at an
    odd p, would never say why it has no numbers.

    Example:
        >>> rows = {"schedule": ["a", "b", "b"], "status": ["ok", "not applicable", "not applicable"],
        ...         "note": ["", "needs an even p", "needs an even p"]}
        >>> never_applicable(pd.DataFrame(rows))
        {'b': 'needs an even p'}
    """
    out = {}
    for sched, grp in df.groupby("schedule", sort=False):
        if (grp["status"] == "not applicable").all():
            out[str(sched)] = str(grp["note"].iloc[0])
    return out


def _from_trace(r: LevelResult) -> bool:
    # fill_from_trace's note: the measured number is a recorded step, not a run here
    return bool(r.level == "measured" and str(r.note).startswith("profiler trace"))


def format_legend(
    levels: Iterable[str],
    memory: str = "each schedule's own peak",
    verified: bool = True,
    from_trace: bool = False,
    measured_peak: bool = True,
    oom: bool = False,
) -> str:
    """Which semantics produced each column, what the marks mean and at what memory the optimum
    was solved (``memory``: "each schedule's own peak", "unlimited memory" or a cap). Only the
    columns and marks a run prints are explained: ``*`` with two levels or more, ``bubble`` with a
    level that times the table (formula, slot, async, contention), ``~`` with the formula, the
    optimum's ``lb`` with ``optimum``, its peak and the gap with ``optimum`` and ``async`` (the gap
    is the async makespan's), and ``Z3`` when the schedules were ``verified``. ``from_trace``: the
    measured column was read from profiler traces; ``measured_peak``: it has its peak column;
    ``oom``: some schedule does not fit device memory (its cells marked ``OOM``).

    Example:
        >>> format_legend(["optimum"]).splitlines()[1]
        "  optimum    CP-SAT: best op order for the same placement, costs, transfers, replica all-reduce (async timing), at each schedule's own peak"
        >>> "gap to bound" in format_legend(["slot"]), "Z3" in format_legend(["slot"], verified=False)
        (False, False)
        >>> # the optimum alone prints no bubble, no formula, no gap and no rank change to explain
        >>> [line.split()[0] for line in format_legend(["optimum"], verified=False).splitlines()[1:]]
        ['optimum', 'lb']
    """
    levels = list(levels)
    lines = ["Columns: makespan (rank by makespan, 1 = fastest) under each abstraction level:"]
    semantics = dict(LEVEL_SEMANTICS, measured=MEASURED_TRACE_SEMANTICS) if from_trace else LEVEL_SEMANTICS
    lines += [f"  {lv:<10} {semantics[lv]}" + (f", at {memory}" if lv == "optimum" else "") for lv in levels]
    if len(levels) > 1:
        lines.append(
            "  *          order changed from the previous level's: the schedule overtook or fell behind one both rank"
        )
    if {"formula", "slot", "async", "contention"} & set(levels):  # the bubble column's sources
        lines.append("  bubble     idle/total = (makespan - busy) / makespan per device, averaged")
    if "formula" in levels:
        lines.append("  ~ (-)      the closed form is only a bound for this family here: shown, not ranked")
    if oom:
        lines.append(
            "  OOM (-)    does not fit device memory: weights, gradients, optimizer state and activations over the"
        )
        lines.append(
            "             device's capacity (ppverify simulate names the devices): shown, not ranked; the others"
        )
        lines.append("             are ranked among themselves")
    if {"optimum", "async"} <= set(levels):  # the gap compares the two: both columns or neither
        lines.append("  peak act. (opt.)  the optimum schedule's highest per-device activation peak")
        lines.append(
            "  gap to bound  (async makespan - bound) / async makespan, the bound being the CP-SAT optimum of the"
        )
        lines.append(f"             same placement at {memory}; <= when measured against the")
        lines.append(
            "             proven lower bound (an upper bound on the true gap); the replica gradient all-reduce of"
        )
        lines.append("             two-pipe schedules is in both; + the family runs ops the solver does not model")
        lines.append("             (overlapped F&B slots, B mixed with I/W): unlike steps, read with care")
    if "optimum" in levels:
        lines.append("  lb         CP-SAT stopped at its time limit: best schedule found and its proven lower bound")
    if verified:
        lines.append(
            "  Z3         the verifier proved completeness, placement, dependencies, exclusivity and deadlock freedom"
        )
    if "measured" in levels and measured_peak:
        lines.append(
            "  peak act. (measured)  highest device's activations autograd saved in the real run, each stage's"
        )
        lines.append(
            "             measured bytes counted as that stage's activation (docs/measure.md, Memory measured)"
        )
    return "\n".join(lines)
