"""The ppverify JSON schedule format (version 1): one schedule, optionally its cost model and its
idealized table.

A file is one JSON object::

    {
      "format": "ppverify-schedule",          # required, exactly this
      "version": 1,                          # required; newer versions are refused
      "family": "1f1b",                      # optional label (default "custom")
      "params": {"p": 2, "m": 2},            # optional; JSON scalars or lists
      "comment": "free text",                # optional
      "p": 2,                                # devices
      "m": 2,                                # microbatches
      "placement": {"name": "linear", "maps": [[0, 1]]},   # maps per pipe: stage -> device; name
                                                           # an optional label (default "custom")
      "pipe_of_mb": [0, 0],                  # optional with one pipe (default all 0)
      "programs": [["0F0", "0F1", "0B0", "0B1"],           # one list per device; action text,
                   ["1F0", "1B0", "1F1", "1B1"]],          # null = idle slot
      "costs": {...},                        # optional cost model (see costs_to_dict)
      "table": {"tick": 1.0, "grid": [[...], ...]},         # optional device x tick grid
      "comm": {"model": "fixed-delay", "delay": 1.0, ...}   # optional, see ppverify.io.json_comm
    }

Actions use PyTorch's text form (:mod:`ppverify.core.ops`): ``0F1``, ``2I3``, ``3SEND_F1``,
``0UNSHARD``, ``(0F7;7B3)OVERLAP_F_B``; ``null`` (or ``""``) is an idle slot. ``programs`` may be
omitted when ``table`` is given: the programs are then read off the table (an op spanning several
ticks repeats its text in every cell it occupies; ``null`` cells are idle). When both are given,
each table row must hold the same ops in the same order as its program.

Validation is strict: malformed JSON, a missing or unknown key, a wrong type, text that is not an
action, a device out of range or the wrong number of programs raise
:class:`~ppverify.core.errors.ScheduleFileError` naming the file, the location (``programs[1][3]``) and
the rule. Ops naming stages or microbatches that do not exist are *not* a file error: they load,
and :func:`ppverify.core.dag.structural_problems` and the verifier report them.
The value checks themselves (types, ranges, action text, duplicate keys) live in
:mod:`ppverify.io.json_checks`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.costs import CostModel
from ..core.errors import ParameterError, ScheduleFileError
from ..core.ops import KINDS, compute_ops, format_action
from ..core.placement import Placement, name_fits
from ..core.schedule import Schedule
from .json_checks import JsonReader, describe_value, honest_label, no_duplicate_keys, reject_constant
from .json_comm import CommSettings, comm_from_dict, comm_to_dict
from .table_text import TableGrid, programs_from_cells

FORMAT_NAME = "ppverify-schedule"
FORMAT_VERSION = 1
_KEYS = (
    "format",
    "version",
    "family",
    "params",
    "comment",
    "p",
    "m",
    "placement",
    "pipe_of_mb",
    "programs",
    "costs",
    "table",
    "comm",
)
_COST_KEYS = (
    "duration",
    "activation",
    "freed_by_I",
    "boundary_bytes",
    "weight_bytes",
    "overlap",
    "time_unit",
    "memory_unit",
    "label",
    "extra",
)


@dataclass(frozen=True)
class ScheduleDocument:
    """Everything one JSON file holds: the schedule, and optionally a cost model and a table."""

    schedule: Schedule
    costs: CostModel | None = None
    table: TableGrid | None = None
    comment: str = ""
    #: the communication the schedule was made for (``optimize --save``)
    comm: CommSettings | None = None


# --------------------------------------------------------------------------- writing


def costs_to_dict(costs: CostModel) -> dict[str, Any]:
    """JSON-ready form of a cost model (every field, so it loads back equal).

    Example:
        >>> from ppverify.core.placement import linear
        >>> costs_to_dict(CostModel.abstract(linear(2), F=1, B=2))["duration"]["B"]
        [2.0, 2.0]
    """
    return {
        "label": costs.label,
        "time_unit": costs.time_unit,
        "memory_unit": costs.memory_unit,
        "overlap": float(costs.overlap),
        "duration": {k: [float(x) for x in costs.duration[k]] for k in KINDS},
        "activation": [float(x) for x in costs.activation],
        "freed_by_I": [float(x) for x in costs.freed_by_I],
        "boundary_bytes": [float(x) for x in costs.boundary_bytes],
        "weight_bytes": [float(x) for x in costs.weight_bytes],
        "extra": {k: float(v) for k, v in costs.extra.items()},
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()  # numpy scalars
    return value


def schedule_to_dict(
    schedule: Schedule,
    costs: CostModel | None = None,
    table: TableGrid | None = None,
    comment: str = "",
    comm: CommSettings | None = None,
) -> dict[str, Any]:
    """The JSON object of a schedule (format version 1), with optional costs and table.

    Example:
        >>> from ppverify.schedules import build
        >>> d = schedule_to_dict(build("gpipe", p=2, m=1))
        >>> d["placement"], d["programs"]
        ({'name': 'linear', 'maps': [[0, 1]]}, [['0F0', '0B0'], ['1F0', '1B0']])
    """
    out: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "family": schedule.family,
        "params": {str(k): _jsonable(v) for k, v in schedule.params.items()},
    }
    if comment:
        out["comment"] = comment
    out.update(
        {
            "p": schedule.p,
            "m": schedule.m,
            "placement": {"name": schedule.placement.name, "maps": [list(mp) for mp in schedule.placement.maps]},
            "pipe_of_mb": list(schedule.pipe_of_mb),
            "programs": [[format_action(a) or None for a in prog] for prog in schedule.programs],
        }
    )
    if costs is not None:
        out["costs"] = costs_to_dict(costs)
    if table is not None:
        out["table"] = {"tick": float(table.tick), "grid": [list(row) for row in table.cells]}
    if comm is not None:
        out["comm"] = comm_to_dict(comm)
    return out


def _dump(obj: Any, indent: int = 0) -> str:
    """JSON text with objects indented and lists of scalars on one line (programs stay readable)."""
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {_dump(v, indent + 2)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        items = [f"{inner}{_dump(v, indent + 2)}" for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj, allow_nan=False)


def dumps(
    schedule: Schedule,
    costs: CostModel | None = None,
    table: TableGrid | None = None,
    comment: str = "",
    comm: CommSettings | None = None,
) -> str:
    """The JSON text :func:`save_json` writes.

    Example:
        >>> from ppverify.schedules import build
        >>> print(dumps(build("gpipe", p=2, m=1)).split('"programs": ')[1])
        [
            ["0F0", "0B0"],
            ["1F0", "1B0"]
          ]
        }
        <BLANKLINE>
    """
    return _dump(schedule_to_dict(schedule, costs, table, comment, comm)) + "\n"


def save_json(
    schedule: Schedule,
    path: str | Path,
    costs: CostModel | None = None,
    table: TableGrid | None = None,
    comment: str = "",
    comm: CommSettings | None = None,
    flag: str = "-o",
) -> Path:
    """Write a schedule file, with the table ``table`` embedded when given (the ``slot`` engine
    computes a schedule's own: :func:`ppverify.engines.table.table_grid_of`). Returns the path;
    a path that cannot be written is refused naming ``flag``, the option that gave it.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> from ppverify.engines.table import table_grid_of
        >>> path = os.path.join(tempfile.mkdtemp(), "s.json")
        >>> s = build("1f1b", p=2, m=2)
        >>> load_json(save_json(s, path, table=table_grid_of(s))).programs == s.programs
        True
    """
    from ..core.files import atomic_write

    # the name as given (Path() would drop a trailing '/'); temporary name, then rename
    atomic_write(path, dumps(schedule, costs, table, comment, comm), flag)
    return Path(path)


# --------------------------------------------------------------------------- reading


def _parse_params(rd: JsonReader, value: Any) -> dict[str, Any]:
    params = dict(rd.obj(value, "params"))
    for k, v in params.items():
        if isinstance(v, dict):
            raise rd.fail(f"params.{k}", "parameter values must be JSON scalars or lists")
    # lists come back as tuples: generators store sequence parameters as (immutable) tuples
    return {k: _tuples(v) for k, v in params.items()}


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def _parse_placement(rd: JsonReader, value: Any, p: int) -> Placement:
    pl = rd.obj(value, "placement")
    rd.keys(pl, "placement", ("name", "maps", "p"), ("maps",), "name, maps", "per pipe, the device of each stage")
    name = rd.str_(pl.get("name", "custom"), "placement.name")
    if "p" in pl and rd.int_(pl["p"], "placement.p") != p:
        raise rd.fail("placement.p", f"{pl['p']} disagrees with p={p}")
    maps = rd.lst(pl["maps"], "placement.maps")
    if not maps:
        raise rd.fail("placement.maps", "needs at least one pipe")
    out = []
    for pipe, mp in enumerate(maps):
        where = f"placement.maps[{pipe}]"
        mp = rd.lst(mp, where)
        if not mp:
            raise rd.fail(where, "a pipe needs at least one stage")
        if len(mp) != len(maps[0]):
            raise rd.fail(where, f"has {len(mp)} stages but pipe 0 has {len(maps[0])}; every pipe maps the same stages")
        out.append(tuple(rd.int_(d, f"{where}[{s}]", 0, p - 1) for s, d in enumerate(mp)))
    if not name_fits(p, tuple(out), name):  # the name is printed as fact in every report
        raise rd.fail(
            "placement.name",
            f"{name!r} disagrees with placement.maps {[list(m) for m in out]}; correct it or leave it out",
        )
    return Placement(p, tuple(out), name)


def _parse_costs(rd: JsonReader, value: Any, S: int) -> CostModel:
    c = rd.obj(value, "costs")
    rd.keys(c, "costs", _COST_KEYS, ("duration", "activation"), f"one of {', '.join(_COST_KEYS)}")
    dur = rd.obj(c["duration"], "costs.duration")
    duration = {}
    for k in KINDS:
        if k not in dur:
            raise rd.fail("costs.duration", f"missing kind {k!r}; durations of F, B, I and W are all required")
        row = rd.lst(dur[k], f"costs.duration.{k}", S, "stages")
        duration[k] = tuple(rd.num(x, f"costs.duration.{k}[{s}]") for s, x in enumerate(row))
    for k in dur:
        if k not in KINDS:
            raise rd.fail(f"costs.duration.{k}", "unknown op kind; expected F, B, I, W")

    def per_stage(key: str, n: int, default: float, hi: float | None = None) -> tuple[float, ...]:
        if key not in c:
            return (default,) * n
        row = rd.lst(c[key], f"costs.{key}", n, "entries")
        return tuple(rd.num(x, f"costs.{key}[{s}]", 0.0, hi) for s, x in enumerate(row))

    extra = rd.obj(c.get("extra", {}), "costs.extra")
    return CostModel(
        duration=duration,
        activation=per_stage("activation", S, 0.0),
        freed_by_I=per_stage("freed_by_I", S, 0.0, 1.0),
        boundary_bytes=per_stage("boundary_bytes", max(S - 1, 0), 0.0),
        weight_bytes=per_stage("weight_bytes", S, 0.0),
        overlap=rd.num(c.get("overlap", 1.0), "costs.overlap"),
        time_unit=rd.str_(c.get("time_unit", "units"), "costs.time_unit"),
        memory_unit=rd.str_(c.get("memory_unit", "activations"), "costs.memory_unit"),
        label=rd.str_(c.get("label", ""), "costs.label"),
        extra={str(k): rd.num(v, f"costs.extra.{k}", -math.inf) for k, v in extra.items()},
    )


def _parse_table(rd: JsonReader, value: Any, p: int) -> TableGrid:
    t = rd.obj(value, "table")
    rd.keys(t, "table", ("tick", "grid", "ticks"), ("grid",), "tick, grid", "one row of cells per device")
    tick = rd.num(t.get("tick", 1.0), "table.tick")
    if tick <= 0:
        raise rd.fail("table.tick", "must be > 0")
    grid = rd.lst(t["grid"], "table.grid", p, "rows (one per device)")
    rows = []
    for d, row in enumerate(grid):
        row = rd.lst(row, f"table.grid[{d}]")
        cells = []
        for k, cell in enumerate(row):
            action = rd.action(cell, f"table.grid[{d}][{k}]")
            cells.append(None if action is None else format_action(action))
        rows.append(tuple(cells))
    return TableGrid(tick, tuple(rows))


def document_from_dict(data: Any, path: str = "<dict>") -> ScheduleDocument:
    """Validate a decoded JSON object and build its :class:`ScheduleDocument`.

    Example:
        >>> doc = document_from_dict({"format": "ppverify-schedule", "version": 1, "p": 1, "m": 1,
        ...     "placement": {"maps": [[0]]}, "programs": [["0F0", None, "0B0"]]})
        >>> doc.schedule.programs
        ((Op(kind='F', stage=0, mb=0), None, Op(kind='B', stage=0, mb=0)),)
    """

    rd = JsonReader(str(path))
    data = rd.obj(data, "top level")
    rd.keys(data, "top level", _KEYS, ("format", "version", "p", "m", "placement"), f"one of {', '.join(_KEYS)}")
    if data["format"] != FORMAT_NAME:
        raise rd.fail("format", f"is {describe_value(data['format'])}; a ppverify schedule file says {FORMAT_NAME!r}")
    version = rd.int_(data["version"], "version", 1)
    if version > FORMAT_VERSION:
        raise rd.fail(
            "version", f"version {version} is newer than this ppverify reads ({FORMAT_VERSION}); upgrade ppverify"
        )
    p = rd.int_(data["p"], "p", 1)
    m = rd.int_(data["m"], "m", 1)
    placement = _parse_placement(rd, data["placement"], p)
    from ..core.limits import check_stages_mbs

    check_stages_mbs(placement.num_stages, m, str(path))  # before pipe_of_mb and friends are built
    npipes = placement.num_pipes
    if "pipe_of_mb" in data:
        pom = rd.lst(data["pipe_of_mb"], "pipe_of_mb", m, "entries (one per microbatch)")
        pipe_of_mb = tuple(rd.int_(x, f"pipe_of_mb[{mb}]", 0, npipes - 1) for mb, x in enumerate(pom))
    elif npipes == 1:
        pipe_of_mb = (0,) * m
    else:
        raise rd.fail(
            "top level", f"missing key 'pipe_of_mb' (required with {npipes} pipes: the pipe of each microbatch)"
        )
    family = rd.str_(data.get("family", "custom"), "family")
    params = _parse_params(rd, data.get("params", {}))
    comment = rd.str_(data.get("comment", ""), "comment")
    programs = None
    if "programs" in data:  # the programs are the schedule: report their errors first
        progs = rd.lst(data["programs"], "programs", p, "programs (one per device)")
        programs = tuple(
            tuple(rd.action(a, f"programs[{d}][{i}]") for i, a in enumerate(rd.lst(prog, f"programs[{d}]")))
            for d, prog in enumerate(progs)
        )
    costs = _parse_costs(rd, data["costs"], placement.num_stages) if "costs" in data else None
    if costs is not None:
        costs = honest_label(costs, placement, Path(path).name)
    table = _parse_table(rd, data["table"], p) if "table" in data else None
    comm = comm_from_dict(rd, data["comm"]) if "comm" in data else None
    if programs is not None:
        if table is not None:
            from_table = programs_from_cells(table.cells, str(path), "table.grid")
            for d in range(p):
                want, got = list(compute_ops(programs[d])), list(compute_ops(from_table[d]))
                if want != got:
                    k = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
                    a = str(want[k]) if k < len(want) else "nothing"
                    b = str(got[k]) if k < len(got) else "nothing"
                    raise rd.fail(
                        f"table.grid[{d}]", f"disagrees with programs[{d}]: its op #{k} is {b}, the program's is {a}"
                    )
    elif table is not None:
        programs = programs_from_cells(table.cells, str(path), "table.grid")
    else:
        raise rd.fail("top level", "missing key 'programs' (or a 'table' to read them from)")
    check_stages_mbs(placement.num_stages, m, str(path), held=sum(1 for prog in programs for _ in compute_ops(prog)))
    try:
        schedule = Schedule(placement, m, programs, pipe_of_mb, family, params)
    except ParameterError as exc:  # pre-validation should make this unreachable; keep the file name
        raise rd.fail("top level", str(exc)) from None
    return ScheduleDocument(schedule, costs, table, comment, comm)


def schedule_from_dict(data: Any, path: str = "<dict>") -> Schedule:
    """Validate a decoded JSON object and build its schedule (costs and table are ignored).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=3, m=4)
        >>> schedule_from_dict(schedule_to_dict(s)).programs == s.programs
        True
        >>> schedule_from_dict({"format": "ppverify-schedule", "version": 1, "p": 2, "m": 1,
        ...     "placement": {"maps": [[0, 1]]}, "programs": [["0F0"], ["1X0"]]}, "s.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: programs[1][0]: '1X0' is not an action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, (0F7;7B3)OVERLAP_F_B or 0F7&7B3, or empty for idle)
    """
    return document_from_dict(data, path).schedule


def loads_document(text: str, path: str = "<string>") -> ScheduleDocument:
    """Parse JSON text into a :class:`ScheduleDocument`; JSON syntax errors name line and column.

    Example:
        >>> loads_document('{"format": "ppverify-schedule",\\n "version" 1}', "s.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: line 2 column 12: invalid JSON: Expecting ':' delimiter
        >>> loads_document('{"traceEvents": []}', "rank0.pt.trace.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: rank0.pt.trace.json: a PyTorch profiler trace (it holds traceEvents), not a schedule: read it with ppverify import-trace
    """
    from ..core.limits import check_json_text

    if '"traceEvents"' in text:  # else refused for a timestamp's 19 digits, unexplained
        raise ScheduleFileError(
            path,
            "",
            "a PyTorch profiler trace (it holds traceEvents), not a schedule: read it with ppverify import-trace",
        )
    check_json_text(text, path)  # nesting and digit counts, before the decoder recurses or calls int()
    try:
        data = json.loads(text, object_pairs_hook=no_duplicate_keys(path), parse_constant=reject_constant(path))
    except json.JSONDecodeError as exc:
        raise ScheduleFileError(path, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    return document_from_dict(data, path)


def read_json(path: str | Path) -> ScheduleDocument:
    """Read a schedule file with its optional costs and table.

    Example:
        >>> read_json("nowhere.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: nowhere.json: file not found
    """
    from ..core.files import read_text

    return loads_document(read_text(path), str(path))


def load_json(path: str | Path, **options: Any) -> Schedule:
    """Read a ppverify JSON schedule file (what :func:`ppverify.io.load_schedule` calls for .json).

    No options are recognised yet; passing one is an error rather than silently ignored.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> path = os.path.join(tempfile.mkdtemp(), "g.json")
        >>> load_json(save_json(build("gpipe", p=2, m=3), path)).describe()
        'gpipe p=2 m=3'
    """
    if options:
        raise ParameterError("options", ", ".join(options), "the JSON reader takes no options")
    return read_json(path).schedule
