"""What one report shows: the result rows, and per point (schedule x configuration) the timelines
of every level that has one, the verifier's verdict and, for an INVALID schedule, its minimal core.

Built either from a comparison run (:func:`study_from_points`: the timelines the levels computed)
or from a results file (:func:`study_from_rows`: the timelines are recomputed from the rows'
configuration and schedule; a level no engine can recompute, such as ``measured``, shows in the
table only).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..compare.config import DEFAULT_MAX_OPT_OPS, DEFAULT_TIME_LIMIT, LEVEL_SEMANTICS, LEVELS, Config, ScheduleEntry
from ..core.errors import PPVerifyError
from ..core.memory_cap import read_memory_cap
from ..core.ops import Op
from ..core.schedule import Schedule
from ..engines.registry import names as engine_names
from .payload import canonical_ops, program_payload, timeline_payload

#: ops embedded with charts, all points and levels together, by default (the rest: table only)
DEFAULT_MAX_CHART_OPS = 400_000
#: levels whose timelines a results file lets the report recompute
RECOMPUTABLE: tuple[str, ...] = (*engine_names(levels_only=True), "optimum")


@dataclass(frozen=True)
class PointView:
    """One schedule in one configuration, ready to draw: ops once, one payload per level."""

    config: str
    schedule: str
    p: int
    m: int
    ops: tuple[str, ...]
    levels: dict[str, dict[str, Any]]
    verdict: dict[str, Any] = field(default_factory=dict)
    #: the pipe of each op's microbatch (two-pipe placements; the page hatches pipe 1), else empty
    pipes: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The page's form of the point."""
        return {
            "config": self.config,
            "schedule": self.schedule,
            "p": self.p,
            "m": self.m,
            "ops": list(self.ops),
            "levels": self.levels,
            "verdict": self.verdict,
            "pipes": list(self.pipes),
        }


@dataclass(frozen=True)
class Study:
    """Everything one report page shows."""

    rows: pd.DataFrame
    points: tuple[PointView, ...]
    findings: tuple[dict[str, Any], ...] = ()
    #: findings map images: (name, PNG bytes)
    findings_maps: tuple[tuple[str, bytes], ...] = ()
    title: str = "ppverify study"
    notes: tuple[str, ...] = ()

    @property
    def num_ops_drawn(self) -> int:
        """Ops over every point and level the page draws."""
        return sum(len(lv["o"]) for pt in self.points for lv in pt.levels.values())


def level_order(levels: Iterable[str]) -> list[str]:
    """Known levels cheapest first, then any other (``measured`` ...) in the order given.

    Example:
        >>> level_order(["measured", "async", "slot"])
        ['slot', 'async', 'measured']
    """
    levels = list(dict.fromkeys(levels))
    return [lv for lv in LEVELS if lv in levels] + [lv for lv in levels if lv not in LEVELS]


def verdict_of(schedule: Schedule | None, verified: str, ops: list[Op]) -> dict[str, Any]:
    """The verdict panel of a point: ``valid``/``INVALID``/``""`` (not checked), the verifier's
    violations and, for INVALID, the indices in ``ops`` of every core op (from a fresh Z3 run).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> F0, B0, F1, B1 = (Op(k, 0, mb) for k, mb in (("F", 0), ("B", 0), ("F", 1), ("B", 1)))
        >>> bad = s.with_programs(((F0, B0, F1, B1), (F0._replace(stage=1), F1._replace(stage=1), B0._replace(stage=1), B1._replace(stage=1))))
        >>> v = verdict_of(bad, "INVALID: deadlock", canonical_ops(bad))
        >>> v["verdict"], [str(canonical_ops(bad)[i]) for i in v["core"]]
        ('INVALID', ['0B0', '0F1', '1F1', '1B0'])
    """
    text = str(verified or "")
    out: dict[str, Any] = {
        "verdict": "valid" if text == "valid" else ("INVALID" if text.startswith("INVALID") else ""),
        "text": text,
        "violations": [],
        "core": [],
    }
    if out["verdict"] != "INVALID" or schedule is None:
        return out
    from ..verify import verify

    try:
        rep = verify(schedule)
    except PPVerifyError as exc:
        out["violations"] = [{"property": "structure", "rule": "", "message": str(exc), "core": []}]
        return out
    out["violations"] = [v.to_dict() for v in rep.violations]
    core = {c for v in rep.violations for c in v.ops}
    out["core"] = [i for i, op in enumerate(ops) if str(op) in core]
    return out


def point_view(
    config: str, schedule_label: str, schedule: Schedule, timelines: dict[str, Any], verified: str
) -> PointView:
    """Draw data of one point: each level's timeline (any level, ``measured`` included), and the
    programs as written (level ``program``) when no level could run it or Z3 found it INVALID.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> s = build("gpipe", p=2, m=2)
        >>> pv = point_view("c", "gpipe", s, {"slot": run(s, semantics="slot")}, "valid")
        >>> len(pv.ops), list(pv.levels), pv.verdict["verdict"]
        (8, ['slot'], 'valid')
    """
    ops = canonical_ops(schedule)
    seen = set(ops)
    for tl in timelines.values():  # a level may run ops the programs do not hold (the solver's I+W for a B)
        for op in tl.ops:
            if op not in seen:
                seen.add(op)
                ops.append(op)
    levels = {lv: timeline_payload(timelines[lv], ops) for lv in level_order(timelines)}
    if not levels or str(verified).startswith("INVALID"):
        levels = {"program": program_payload(schedule), **levels}
    return PointView(
        config,
        schedule_label,
        schedule.p,
        schedule.m,
        tuple(str(o) for o in ops),
        levels,
        verdict_of(schedule, verified, ops),
        pipes_of(schedule, ops),
    )


def pipes_of(schedule: Schedule, ops: list[Op]) -> tuple[int, ...]:
    """The pipe of each op's microbatch on a placement with several pipes (empty with one): the
    report hatches pipe 1's bars, as the Gantt PNG does.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("chimera", p=2, m=2)
        >>> ops = list(s.ops())
        >>> sorted({o.mb: pipe for o, pipe in zip(ops, pipes_of(s, ops))}.items()), pipes_of(build("gpipe", p=2, m=2), ops)
        ([(0, 0), (1, 1)], ())
    """
    if schedule.placement.num_pipes < 2:
        return ()
    return tuple(int(schedule.pipe_of_mb[o.mb]) if 0 <= o.mb < schedule.m else 0 for o in ops)


def study_from_points(
    rows: pd.DataFrame,
    points: Iterable[Any],
    findings: Iterable[dict] = (),
    findings_maps: tuple[tuple[str, bytes], ...] = (),
    title: str = "ppverify study",
    max_chart_ops: int = DEFAULT_MAX_CHART_OPS,
) -> Study:
    """A study from a comparison run: ``rows`` its result frame, ``points`` its
    :class:`~ppverify.compare.PointResult` objects (their levels carry the timelines).

    Example:
        >>> from ppverify.compare import abstract_configs, run_comparison, ScheduleEntry
        >>> pts = []
        >>> df = run_comparison(abstract_configs({"F": 1, "B": 2}, (0.5,), (2,), (2,)), (ScheduleEntry("1f1b", "1f1b"),),
        ...                     ("slot", "async"), on_point=pts.append)
        >>> st = study_from_points(df, pts)
        >>> [(p.schedule, list(p.levels)) for p in st.points], st.num_ops_drawn
        ([('1f1b', ['slot', 'async'])], 16)
    """
    from ..compare.evaluate import build_entry

    views: list[PointView] = []
    notes: list[str] = []
    budget = max_chart_ops
    for pt in points:
        tls = {r.level: r.timeline for r in pt.results if getattr(r, "timeline", None) is not None}
        if not tls and all(r.status == "not applicable" for r in pt.results):
            continue
        sched = next((tl.schedule for lv, tl in tls.items() if lv != "optimum"), None)
        if sched is None:
            try:
                sched = build_entry(pt.entry, pt.config.p, pt.config.m)
            except PPVerifyError:
                continue
        n = sched.num_ops * max(1, len(tls))
        if n > budget:
            drawn = max_chart_ops - budget
            # the budget is the whole page's: name the ops already drawn when they are what tips it
            why = f"{drawn} ops already drawn + these {n} = {drawn + n}" if drawn else f"{n} ops"
            notes.append(
                f"{pt.entry.label} in {pt.config.label}: no chart ({why}, over the page's "
                f"{max_chart_ops} chart-op budget; --max-chart-ops)"
            )
            continue
        budget -= n
        views.append(point_view(pt.config.label, pt.entry.label, sched, tls, pt.verified))
    return Study(rows, tuple(views), tuple(findings), tuple(findings_maps), title, tuple(notes))


def config_of_row(row: dict[str, Any]) -> Config:
    """Rebuild the configuration of a result row from its columns (checked against its label).

    Example:
        >>> config_of_row({"config": "p=4 m=8 F=1,B=2 c=0.5", "p": 4, "m": 8, "system": "comm-delay=0.5", "model": "F=1,B=2"}).comm_delay
        0.5
        >>> config_of_row({"config": "p=4 m=8 dgx-h100 gpt3-13b mfu=0.5", "p": 4, "m": 8, "system": "dgx-h100", "model": "gpt3-13b"}).options
        (('mfu', 0.5),)
    """
    p, m, system, model = int(row["p"]), int(row["m"]), str(row["system"]), str(row["model"])
    label = str(row["config"])
    if system.startswith("comm-delay="):
        costs = tuple((k, float(v)) for k, v in (kv.split("=") for kv in model.split(",")))
        cfg = Config(p, m, costs=costs, comm_delay=float(system.split("=", 1)[1]))
    else:
        head = f"p={p} m={m} {system} {model}"
        opts = []
        for kv in label[len(head) :].split():
            k, v = kv.split("=", 1)
            opts.append((k.replace("-", "_"), _number(v)))
        cfg = Config(p, m, system, model, options=tuple(opts))
    if cfg.label != label:
        raise PPVerifyError(f"configuration {label!r} does not match its columns (rebuilt {cfg.label!r})")
    return cfg


def _number(text: str) -> Any:
    """An option value as the label shows it: a number, a flag, or the text itself.

    Example:
        >>> _number("4"), _number("0.5"), _number("False"), _number("None"), _number("3,3,2")
        (4, 0.5, False, None, '3,3,2')
    """
    if text in ("True", "False"):  # recompute=False stays off: bool("False") would turn it on
        return text == "True"
    if text == "None":  # an option given as null (its default)
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def study_from_rows(
    rows: pd.DataFrame,
    time_limit: float | None = None,
    max_opt_ops: int | None = None,
    findings: Iterable[dict] = (),
    findings_maps: tuple[tuple[str, bytes], ...] = (),
    title: str = "ppverify study",
    max_chart_ops: int = DEFAULT_MAX_CHART_OPS,
) -> Study:
    """A study from result rows (a results file): each point's timelines are recomputed at the
    levels the rows hold that an engine or the solver can redo (:data:`RECOMPUTABLE`). ``None``
    for ``time_limit`` or ``max_opt_ops`` (an option left out) is compare's default.

    Example:
        >>> from ppverify.compare import abstract_configs, run_comparison, ScheduleEntry
        >>> df = run_comparison(abstract_configs({"F": 1, "B": 2}, (0.5,), (2,), (2,)), (ScheduleEntry("1f1b", "1f1b"),), ("formula", "slot"))
        >>> [list(p.levels) for p in study_from_rows(df).points]
        [['slot']]
        >>> df = run_comparison(abstract_configs({"F": 1, "B": 2}, (0.0,), (2,), (2,)), (ScheduleEntry("1f1b", "1f1b"),), ("slot", "optimum"))
        >>> [list(p.levels) for p in study_from_rows(df, None, None).points]
        [['slot', 'optimum']]
    """
    from ..compare.evaluate import evaluate_point
    from ..core.limits import family_ops

    # the CLI passes None for an option left out (given or not decides what --from refuses);
    # None reaching the solver would fail every optimum and drop its charts without a word
    time_limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    max_opt_ops = DEFAULT_MAX_OPT_OPS if max_opt_ops is None else max_opt_ops
    points = []
    notes: list[str] = []
    for cfg_label, grp in rows.groupby("config", sort=False):
        cache: dict = {}
        first = grp.iloc[0].to_dict()
        try:
            cfg = config_of_row(first)
        except (PPVerifyError, ValueError) as exc:
            notes.append(f"{cfg_label}: no charts ({exc})")
            continue
        for sched, srows in grp.groupby("schedule", sort=False):
            r0 = srows.iloc[0]
            levels = tuple(lv for lv in RECOMPUTABLE if lv in set(srows["level"]))
            # a level whose row has no number (an optimum past --max-opt-ops, a solve that found
            # nothing) gets no chart, as in `compare --report`: a chart beside 'not applicable'
            # would show what the table says was not computed
            numbered = tuple(lv for lv in levels if lv in set(srows.loc[srows["makespan"].notna(), "level"]))
            if not numbered and not str(r0["verified"] or "").startswith("INVALID"):
                continue  # (an INVALID schedule has no numbers: it is charted as written, its core outlined)
            levels = numbered or levels
            if (
                r0["family"] == "file"
                or not levels
                or (srows["makespan"].isna().all() and r0["verified"] in ("", None))
            ):
                continue
            entry = ScheduleEntry(
                str(sched), str(r0["family"]), tuple(sorted(json.loads(r0["params"] or "{}").items()))
            )
            implied = family_ops(entry.family, cfg.p, cfg.m, dict(entry.fixed))
            if implied > max_chart_ops:  # bounded before it is built (p = 8,000,000: out of memory)
                notes.append(
                    f"{sched} {cfg_label}: no charts ({implied} ops implied, over the {max_chart_ops} "
                    "chart-op budget; --max-chart-ops)"
                )
                continue
            cap = read_memory_cap(row_cap(srows))  # the file's cap, read as it is loaded
            pt = evaluate_point(entry, cfg, levels, time_limit, cache, max_opt_ops, memory_cap=cap)
            points.append(_with_verdict(pt, str(r0["verified"] or "")))
    st = study_from_points(rows, points, findings, findings_maps, title, max_chart_ops)
    other = sorted(set(rows["level"]) - set(RECOMPUTABLE) - {"formula"})
    if other:
        notes.append(f"level(s) {', '.join(other)}: in the table only (a results file holds no timeline to redraw)")
    return Study(st.rows, st.points, st.findings, st.findings_maps, st.title, tuple(notes) + st.notes)


def row_cap(rows: pd.DataFrame) -> str:
    """The ``--memory-cap`` text that recomputes the optimum rows ``rows`` hold: their cap (in the
    cost model's unit: bytes as ``NB``), or ``none`` when they were solved with unlimited memory
    (no cap, or a file written before the optimum had one).

    Example:
        >>> row_cap(pd.DataFrame({"level": ["optimum"], "memory_cap": [4.0], "memory_unit": ["activations"]}))
        '4.0'
        >>> row_cap(pd.DataFrame({"level": ["optimum"], "memory_cap": [2.0**30], "memory_unit": ["bytes"]}))
        '1073741824.0B'
        >>> row_cap(pd.DataFrame({"level": ["async"], "makespan": [1.0]}))
        'none'
    """
    opt = rows[rows["level"] == "optimum"] if "memory_cap" in rows else rows.iloc[:0]
    cap = pd.to_numeric(opt["memory_cap"], errors="coerce").dropna() if len(opt) else pd.Series(dtype=float)
    if not len(cap):
        return "none"
    unit = "B" if str(opt["memory_unit"].iloc[0]) in ("bytes", "B") else ""
    return f"{float(cap.iloc[0])!r}{unit}"


def _with_verdict(pt: Any, verified: str) -> Any:
    from dataclasses import replace

    return replace(pt, verified=verified)


def level_legend(rows: pd.DataFrame) -> dict[str, str]:
    """Each level's semantics, from the rows (so a ``measured`` level brings its own).

    Example:
        >>> level_legend(pd.DataFrame({"level": ["measured", "slot"], "semantics": ["measured", ""]}))
        {'slot': 'slot table: synchronous columns, communication charged per column', 'measured': 'measured'}
    """
    out = {}
    for lv in level_order(rows["level"]):
        given = [str(s) for s in rows.loc[rows["level"] == lv, "semantics"] if isinstance(s, str) and s]
        out[lv] = given[0] if given else LEVEL_SEMANTICS.get(lv, lv)
    return out
