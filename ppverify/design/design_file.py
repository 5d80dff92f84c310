"""A design result read back (``design.json`` of ``--save-dir``, or ``design --json``'s output):
what ``ppverify report --from design.json`` draws (:func:`load_design`).

The file is checked as the run made it: every point's cells of the types the run writes, its
programs a whole step of the request's placement, and each frontier schedule timed again as the
run timed it (:func:`~.points.held_and_time`, one simulation per frontier point): a saved time,
peak or bound the schedule does not have (a file edited or damaged) is refused in one line naming
the file and the row (``design.json: frontier[0]: ...``), never drawn beside a chart of the same
point that says otherwise.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..core.errors import PPVerifyError, ScheduleFileError
from .points import EPS, Point, held_and_time, same_time
from .run import Design, DesignRequest
from .spec import Setup

#: the keys of a design JSON's ``model_options`` read back (:func:`~.spec.model_options`)
_MODEL_OPTION_NAMES = (
    "mfu",
    "microbatch_size",
    "seq_len",
    "tp",
    "recompute",
    "flash_attention",
    "layers_per_stage",
    "ranks_per_node",
)


def is_design_result(path: str | Path) -> bool:
    """True when ``path`` is a ``design.json`` (``--save-dir``) or ``design --json`` output.

    Example:
        >>> is_design_result("no-such-file.json")
        False
    """
    import json

    p = Path(path)
    if p.suffix.lower() != ".json" or not p.is_file():
        return False
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return False
    return isinstance(data, dict) and isinstance(data.get("design"), dict) and "frontier" in data


def load_design(path: str | Path) -> Design:
    """A :class:`Design` back from its JSON (``design.json`` or ``design --json``): the request,
    the setups and families recomputed from it, the points and the frontier with their programs.
    A malformed file is refused naming the file and the field; so is one whose frontier says
    what its schedules do not do (:func:`check_front`: edited or damaged).

    Example:
        >>> import tempfile, json
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> d = design(DesignRequest(2, 2, "linear", "2", PresetSettings(costs="F=1,B=2"), Limits(2.0)), progress=False)
        >>> path = Path(tempfile.mkdtemp()) / "design.json"
        >>> _ = path.write_text(json.dumps(d.to_dict()))
        >>> back = load_design(path)
        >>> back.to_dict() == d.to_dict()
        True
        >>> data = d.to_dict(); data["frontier"][0]["time"] = 12.0  # 1F1B: (m + p - 1)(tF + tB) = 9
        >>> _ = path.write_text(json.dumps(data))
        >>> load_design(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: ...design.json: frontier[0]: time 12 but its schedule runs in 9: edited or damaged
    """
    import json

    from ..systems.preset_models import PresetSettings
    from .families import family_points
    from .spec import Limits, setups

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        info = data["design"]
        settings = PresetSettings(
            system=info.get("system"),
            model=info.get("model"),
            costs=info.get("costs"),
            comm_delay=info.get("comm_delay"),
            **{k: v for k, v in (info.get("model_options") or {}).items() if k in _MODEL_OPTION_NAMES},
        )
        rq = DesignRequest(
            int(info["p"]),
            int(info["m"]),
            ",".join(info["placements"]),
            "auto",
            settings,
            Limits(
                float(info["work_limit"]),
                info.get("gap_limit"),
                int(info.get("seed", 0)),  # files written before it: the default seed
                info.get("time_limit"),
                info.get("bound_work"),
                float(info.get("search_work", 0.0)),  # files written before the second search had none
                float(info.get("pair_work", 0.0)),  # nor before the two-device bound
            ),
            info.get("backward") == "split",
            not info.get("all_points", True),  # files written before skipping existed searched every point
        )
        sets = setups(rq.placements, rq.p, rq.m, settings)
        done = int(data.get("points_done", len(data["points"])))
        total = int(data.get("points_total", len(data["points"])))  # files written before it: the points done
    except (KeyError, TypeError, ValueError) as exc:
        raise ScheduleFileError(str(path), "design", f"not a design result ({type(exc).__name__}: {exc})") from None
    by_label = {s.label: s for s in sets}
    points = tuple(
        read_point(path, f"points[{i}]", r, by_label, rq.m) for i, r in enumerate(_rows(path, data, "points"))
    )
    rows = _rows(path, data, "frontier")
    front = tuple(read_point(path, f"frontier[{i}]", r, by_label, rq.m, on_front=True) for i, r in enumerate(rows))
    for i, r in enumerate(rows):
        if not isinstance(r.get("verified"), str):
            raise ScheduleFileError(str(path), f"frontier[{i}]", f"verified={r.get('verified')!r} is not text")
    check_front(path, front, by_label)
    fams = tuple(family_points(sets, rq.p, rq.m, settings))
    verified = tuple(r["verified"] for r in rows)
    return Design(rq, sets, points, fams, front, done, total, bool(data.get("interrupted")), verified)


def _rows(path: str | Path, data: dict, key: str) -> list[dict]:
    """``data[key]``, a list of row objects, or a one-line refusal."""
    rows = data.get(key)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ScheduleFileError(str(path), key, "expected a list of point objects: not a design result")
    return rows


def _number(x: Any) -> bool:
    """A finite JSON number (a boolean is not one)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def read_point(
    path: str | Path, where: str, row: dict, by_label: dict[str, Setup], m: int, on_front: bool = False
) -> Point:
    """One point of a design file (``where``: ``points[3]``, ``frontier[0]``), each cell of the
    type the run writes (a time, bound and peak a finite number; no time or peak only off the
    frontier, for a point without a schedule), its programs a whole step of its placement at the
    request's ``m`` (:func:`~ppverify.core.dag.require_complete`); else refused naming the row.

    Example:
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> by = {s.label: s for s in setups("linear", 2, 1, PresetSettings(costs="F=1,B=2"))}
        >>> row = {"placement": "linear", "budget": None, "status": "OPTIMAL", "time": 6.0, "bound": 6.0,
        ...        "peak": 1.0, "start": "gpipe", "programs": [["0F0", "0B0"], ["1F0", "1B0"]]}
        >>> read_point("d.json", "points[0]", row, by, 1).time
        6.0
        >>> read_point("d.json", "frontier[0]", {**row, "time": None}, by, 1, on_front=True)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: d.json: frontier[0]: time=None is not a number
        >>> read_point("d.json", "points[0]", {**row, "programs": [["0F0", 0], ["1F0", "1B0"]]}, by, 1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: d.json: points[0]: programs[0][1]=0 is not an action (text such as 0F1)
        >>> read_point("d.json", "points[0]", {**row, "programs": [["0F0"], ["1F0", "1B0"]]}, by, 1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: d.json: points[0]: its programs are not a step of linear at m=1: cp-sat p=2 m=1: op 0B0 is missing (should run on device 0)
    """
    from ..core.dag import require_complete
    from ..core.ops import parse_action
    from ..core.schedule import Schedule

    def refuse(rule: str) -> ScheduleFileError:
        return ScheduleFileError(str(path), where, rule)

    for key in ("placement", "budget", "status", "time", "bound", "peak", "start"):
        if key not in row:
            raise refuse(f"missing field {key!r}: not a design result, or written by another version")
    label = row["placement"]
    if not isinstance(label, str) or label not in by_label:
        raise refuse(f"placement={label!r} is not one of the design's placements ({', '.join(by_label)})")
    st = by_label[label]
    budget = row["budget"]
    if budget is not None and not (_number(budget) and budget > 0):
        raise refuse(f"budget={budget!r} is not a number > 0 (or null: unconstrained)")
    for key in ("status", "start", "note"):
        value = row.get(key)
        if not isinstance(value, str) and (key == "status" or value is not None):  # no start, no note: None
            raise refuse(f"{key}={value!r} is not text")
    for key in ("time", "bound", "peak"):
        value = row[key]
        # a point searched or skipped without a schedule has no time nor peak; a frontier point has both
        if not _number(value) and not (value is None and key != "bound" and not on_front):
            raise refuse(f"{key}={value!r} is not a number")
    if row["time"] is not None and row["bound"] > row["time"] and not same_time(row["bound"], row["time"]):
        raise refuse(
            f"bound {row['bound']:g} is above its time {row['time']:g} (a bound holds for every schedule): edited or damaged"
        )
    sched = None
    programs = row.get("programs")
    if programs is not None:
        if not isinstance(programs, list) or not all(isinstance(prog, list) for prog in programs):
            raise refuse("programs is not a list of one list of actions per device")
        for d, prog in enumerate(programs):
            for k, a in enumerate(prog):
                if not isinstance(a, str):
                    raise refuse(f"programs[{d}][{k}]={a!r} is not an action (text such as 0F1)")
        try:
            actions = tuple(tuple(parse_action(a) for a in prog) for prog in programs)
            sched = Schedule(st.placement, m, actions, st.pipes, "cp-sat")
            require_complete(sched)  # every op of the step once, each on its device
        except (PPVerifyError, ValueError) as exc:  # ActionSyntaxError and ParameterError are ValueErrors
            raise refuse(f"its programs are not a step of {label} at m={m}: {exc}") from None
    budget = math.inf if budget is None else float(budget)
    return Point(
        label, budget, row["status"], row["time"], row["bound"], row["peak"], row["start"], sched,
        row.get("note") or "", bool(row.get("cut", False)), bool(row.get("skipped", False)),
    )  # fmt: skip


def check_front(path: str | Path, front: tuple[Point, ...], by_label: dict[str, Setup]) -> None:
    """Refuse a frontier whose saved values its schedules do not have: each schedule is timed again
    as the run timed it (:func:`~.points.held_and_time`, the async engine under the placement's
    costs and communication; one simulation per frontier point) and its saved time and peak must
    be those, up to float rounding (:func:`~.points.same_time`); the points must be Pareto-ordered
    as :func:`~.points.frontier` orders them (peaks rising, each strictly faster than the last).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> from ppverify.design.spec import setups
        >>> by = {s.label: s for s in setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))}
        >>> one = build("1f1b", 2, 4)  # (m + p - 1)(tF + tB) = 15 at a peak of p = 2 activations
        >>> check_front("d.json", (Point("linear", 2.0, "OPTIMAL", 15.0, 15.0, 2.0, "1f1b", one),), by)
        >>> check_front("d.json", (Point("linear", 2.0, "OPTIMAL", 15.0, 15.0, 1.0, "1f1b", one),), by)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: d.json: frontier[0]: peak 1 but its schedule peaks at 2: edited or damaged
    """
    last: tuple[float, float] | None = None  # the previous point's (peak, time)
    for i, q in enumerate(front):
        where = f"frontier[{i}]"
        assert q.time is not None and q.peak is not None  # read_point(on_front=True) refused a null
        if last is not None and not (q.peak > last[0] and q.time < last[1] - EPS):  # as frontier() keeps them
            raise ScheduleFileError(
                str(path),
                where,
                f"peak {q.peak:g}, time {q.time:g} is no improvement on frontier[{i - 1}] (peak {last[0]:g}, "
                f"time {last[1]:g}): a frontier's peaks rise as its times fall: edited or damaged",
            )
        last = (q.peak, q.time)
        if q.schedule is None:
            continue
        try:
            held, time = held_and_time(q.schedule, by_label[q.placement])
        except PPVerifyError as exc:  # a deadlock: the run's schedules all ran
            raise ScheduleFileError(str(path), where, f"its schedule does not run: {exc}") from None
        if not same_time(time, q.time):
            raise ScheduleFileError(
                str(path), where, f"time {q.time:g} but its schedule runs in {time:.10g}: edited or damaged"
            )
        if not same_time(float(held), q.peak):
            raise ScheduleFileError(
                str(path), where, f"peak {q.peak:g} but its schedule peaks at {float(held):.10g}: edited or damaged"
            )
