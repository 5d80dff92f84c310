"""What ``ppverify compare`` is asked, as data, and everything it does with it: the options
parsed and checked once into a typed :class:`CompareRequest` (:func:`compare_request`, the one
place that reads their text), the configurations built from it (:func:`request_configs`), the
comparison or the findings run (:func:`run_request`) and the rows written (:func:`write_rows`);
:mod:`.outcome` prints what it computed. The command module only maps its options onto
:func:`compare_request`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.costs import complete_costs, parse_costs
from ..core.errors import ParameterError
from ..core.memory_cap import CapSpec
from .config import (
    ALL_LEVELS,
    DEFAULT_M,
    DEFAULT_MAX_OPT_OPS,
    DEFAULT_MODELS,
    DEFAULT_SCHEDULES,
    DEFAULT_SYSTEMS,
    DEFAULT_TIME_LIMIT,
    LEVELS,
    Config,
    ScheduleEntry,
    abstract_configs,
    default_configs,
    select_schedules,
)
from .csv_text import given_csv, parse_floats, parse_ints, split_csv
from .evaluate import check_common_cap
from .findings import FINDINGS_SCHEDULES, Setup, abstract_setup, evaluate_findings
from .outcome import CompareOutcome
from .results import PointResult
from .run import run_comparison

#: the preset options ``compare`` passes on to every system and model
PRESET_OPTIONS = ("mfu", "microbatch_size", "seq_len", "tp", "ranks_per_node")
#: the two systems and the model of ``--findings`` when none are given
FINDINGS_SYSTEMS = ("dgx-h100", "ethernet-100g")
FINDINGS_MODEL = "gpt3-1.3b"


@dataclass(frozen=True)
class CompareRequest:
    """One ``ppverify compare`` run, typed: every option already parsed and checked (build one
    from the command line's text with :func:`compare_request`, the one place that reads it).
    ``levels`` are the levels to evaluate; ``schedules`` the entries (``None``: the default set,
    or the findings' with ``findings``); ``systems``/``models`` preset names; ``ps``/``ms``
    pipeline sizes and microbatch counts; ``costs`` (``(kind, cost)`` pairs) and ``comm_delays``
    select abstract mode; ``options`` the preset options as ``(name, value)`` pairs; the solver
    budget; ``findings`` for the seed paper's checks; ``out`` for a ``.csv``/``.parquet`` of the
    rows; ``keep_points`` to collect every point (with its timelines) for a report;
    ``memory_cap`` the optimum's cap as read (``None``: each schedule's own peak).

    Example:
        >>> req = CompareRequest(ps=(4,), ms=(8,), costs=(("F", 1.0), ("B", 2.0)))
        >>> req.abstract, [c.label for c in request_configs(req)[1]]
        (True, ['p=4 m=8 F=1,B=2 c=0'])
    """

    levels: tuple[str, ...] = LEVELS
    schedules: tuple[ScheduleEntry, ...] | None = None
    systems: tuple[str, ...] = DEFAULT_SYSTEMS
    models: tuple[str, ...] = DEFAULT_MODELS
    ps: tuple[int, ...] = (4,)
    ms: tuple[int, ...] = DEFAULT_M
    costs: tuple[tuple[str, float], ...] | None = None
    comm_delays: tuple[float, ...] = (0.0,)
    options: tuple[tuple[str, Any], ...] = ()
    time_limit: float = 0.5
    max_opt_ops: int = 256
    out: str | None = None
    findings: bool = False
    verify: bool = True
    progress: bool = False
    keep_points: bool = False
    #: ``--memory-cap`` as read: ``None`` caps each optimum at its schedule's own peak
    memory_cap: CapSpec | None = None
    #: read the measured level from these profiler traces (``--measured-trace``) instead of running it
    measured_trace: tuple[str, ...] | None = None

    @property
    def abstract(self) -> bool:
        """True when abstract costs (and delays) replace the presets."""
        return self.costs is not None


def compare_request(
    schedules: str | None = None,
    systems: str | None = None,
    models: str | None = None,
    ps: str | None = None,
    ms: str | None = None,
    levels: str | None = None,
    measured: bool = False,
    costs: str | None = None,
    comm_delay: str | None = None,
    options: tuple[tuple[str, Any], ...] = (),
    time_limit: float | None = None,
    max_opt_ops: int | None = None,
    out: str | None = None,
    findings: bool = False,
    verify: bool = True,
    progress: bool = False,
    keep_points: bool = False,
    memory_cap: str | None = None,
    measured_trace: Sequence[str] | None = None,
) -> CompareRequest:
    """Parse and check ``ppverify compare``'s options once, as the command line gives them
    (comma-separated text, ``None`` for the default), into a :class:`CompareRequest`: the levels
    (``measured`` added with ``measured`` or ``measured_trace``; ``findings`` without explicit
    levels skips the optimum), the time limit, the ``out`` suffix, the memory cap's spelling in
    the mode's unit, the schedules and the numbers. ``costs`` or ``comm_delay`` select abstract
    mode. ``time_limit`` and ``max_opt_ops`` (``None``: not given, 0.5 and 256) budget the
    optimum, and ``memory_cap`` caps it: each is refused when the levels leave the optimum out,
    where it would be ignored. Preset names and options are checked when the configurations are
    built (:func:`request_configs`).

    Example:
        >>> req = compare_request(schedules="gpipe,1f1b", ps="4,8,4", costs="F=1,B=2", levels="slot,optimum",
        ...                       measured=True, memory_cap="8MF")
        >>> [e.label for e in req.schedules], req.ps, req.costs, req.levels, req.memory_cap.kind
        (['gpipe', '1f1b'], (4, 8), (('F', 1.0), ('B', 2.0)), ('slot', 'optimum', 'measured'), 'stage_activations')
        >>> compare_request(levels="slot,fast")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter levels=fast: unknown level; expected some of formula, slot, async, contention, optimum, measured
        >>> compare_request(levels="slot,async", time_limit=5)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter time-limit=5: budgets the CP-SAT optimum, a level this run leaves out: add optimum to --levels, or leave it out
    """
    lv = tuple(given_csv("levels", levels) or LEVELS)
    if (measured or measured_trace) and "measured" not in lv:
        lv += ("measured",)
    for x in lv:
        if x not in ALL_LEVELS:
            raise ParameterError("levels", x, f"unknown level; expected some of {', '.join(ALL_LEVELS)}")
    for name, text in (("costs", costs), ("comm-delay", comm_delay)):
        if text is not None and not str(text).replace(",", " ").strip():
            raise ParameterError(name, text, "an empty value; give one, or leave the option out for its default")
    if findings and not levels:
        lv = tuple(x for x in lv if x != "optimum")
    if time_limit is not None:
        from ..optimize.solver_run import run_limits

        run_limits(time_limit)  # optimize's rule: > 0 and at most 1e9 seconds (inf, nan, 1e300 refused)
    if max_opt_ops is not None and max_opt_ops < 0:
        raise ParameterError("max-opt-ops", max_opt_ops, "must be an integer >= 0 (0: no optimum is solved)")
    for name, value in (("time-limit", time_limit), ("max-opt-ops", max_opt_ops)):
        if value is not None and "optimum" not in lv:  # the solver's budget alone: it would be ignored
            raise ParameterError(
                name,
                value,
                "budgets the CP-SAT optimum, a level this run leaves out: add optimum to --levels, or leave it out",
            )
    if out and Path(out).suffix.lower() not in (".csv", ".parquet"):
        raise ParameterError("out", out, "expected a .csv or .parquet file")
    if out:
        from ..core.files import check_output_path

        check_output_path(out, "--out")  # a missing folder, a trailing '/', a FIFO: refused before the run
    abstract = bool(costs or comm_delay)
    check_mode_options(abstract, findings, systems, models, ms, options)
    if findings and schedules is not None:  # the findings are about the seed paper's seven: it would be ignored
        raise ParameterError(
            "schedules", schedules, "--findings checks the seed paper's seven schedules: leave --schedules out"
        )
    if memory_cap is not None and "optimum" not in lv:  # it caps the optimum alone
        raise ParameterError(
            "memory-cap",
            memory_cap,
            "caps the CP-SAT optimum, a level this run leaves out: add optimum to --levels, or leave it out",
        )
    cap = None
    if memory_cap is not None:  # the spelling read once, in the mode's unit (each point's size later)
        from ..core.memory_cap import check_cap_text

        cap = check_cap_text(memory_cap, counts_bytes=not abstract)
    entries = None if findings or schedules is None else select_schedules(given_csv("schedules", schedules))
    given = dict(
        levels=lv,
        schedules=entries,
        options=tuple(options),
        time_limit=DEFAULT_TIME_LIMIT if time_limit is None else time_limit,
        max_opt_ops=DEFAULT_MAX_OPT_OPS if max_opt_ops is None else max_opt_ops,
        out=out,
        findings=findings,
        verify=verify,
        progress=progress,
        keep_points=keep_points,
        memory_cap=cap,
        measured_trace=tuple(measured_trace) if measured_trace else None,
    )
    # abstract mode: the costs (default F=1,B=2) as (kind, cost) pairs
    parsed = parse_costs(costs or "F=1,B=2") if abstract else None
    if parsed is not None:  # half a split backward, or B != I + W: refused now, not as every row's note
        complete_costs(parsed)
    ct = tuple((k, float(v)) for k, v in parsed.items()) if parsed is not None else None
    if findings and abstract:
        delays = parse_floats("comm-delay", comm_delay, (0.0, 1.0))
        if len(delays) != 2:
            raise ParameterError("comm-delay", comm_delay, "--findings needs two delays: fast,slow")
        return CompareRequest(ps=parse_ints("p", ps, (4, 8)), costs=ct, comm_delays=delays, **given)  # type: ignore[arg-type]
    if findings:
        sy = _shipped("systems", given_csv("systems", systems) or FINDINGS_SYSTEMS)
        if len(sy) != 2:
            raise ParameterError("systems", systems, "--findings needs two systems: fast,slow")
        md = _shipped("llms", given_csv("models", models) or (FINDINGS_MODEL,))[:1]
        return CompareRequest(systems=sy, models=md, ps=parse_ints("p", ps, (4, 8)), **given)  # type: ignore[arg-type]
    pn, mn = parse_ints("p", ps, (4,)), parse_ints("m", ms, DEFAULT_M)
    if abstract:
        delays = parse_floats("comm-delay", comm_delay, (0.0,))
        return CompareRequest(ps=pn, ms=mn, costs=ct, comm_delays=delays, **given)  # type: ignore[arg-type]
    sy = _shipped("systems", given_csv("systems", systems) or DEFAULT_SYSTEMS)
    md = _shipped("llms", given_csv("models", models) or DEFAULT_MODELS)
    return CompareRequest(systems=sy, models=md, ps=pn, ms=mn, **given)  # type: ignore[arg-type]


def _shipped(kind: str, names: Sequence[str]) -> tuple[str, ...]:
    # shipped preset names in any case, as the other commands read them
    from ..systems.presets import preset_name

    return tuple(preset_name(kind, n) for n in names)


def check_mode_options(
    abstract: bool,
    findings: bool,
    systems: str | None,
    models: str | None,
    ms: str | None,
    options: Sequence[tuple[str, Any]],
) -> None:
    """Refuse what the chosen mode would ignore: presets or preset options beside abstract
    ``--costs``/``--comm-delay`` (the table would be in abstract units, the presets silently
    dropped), and with ``findings`` a ``-m`` (the findings take m = p and 4p) or a second model.

    Example:
        >>> check_mode_options(False, False, "dgx-h100", "gpt3-1.3b", "4", (("mfu", 0.5),))
        >>> check_mode_options(True, False, "dgx-h100", None, None, ())
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter systems=dgx-h100: presets and abstract --costs/--comm-delay do not mix (the presets would be ignored): give either --systems/--models or --costs/--comm-delay
    """
    if abstract:
        for name, value in (("systems", systems), ("models", models)):
            if value is not None:
                raise ParameterError(
                    name,
                    value,
                    "presets and abstract --costs/--comm-delay do not mix (the presets would be ignored): "
                    "give either --systems/--models or --costs/--comm-delay",
                )
        for name, value in options:
            raise ParameterError(
                name.replace("_", "-"),
                value,
                "shapes a model preset's durations and bytes; these costs are abstract (--costs/--comm-delay), "
                "which it does not change: give --systems and --models, or leave it out",
            )
    if findings and ms is not None:
        raise ParameterError("m", ms, "--findings runs m = p and m = 4p of each -p: leave -m out")
    if findings and not abstract and len(given_csv("models", models) or ()) > 1:
        raise ParameterError("models", models, "--findings checks one model: give one")


def check_presets(systems: Sequence[str], models: Sequence[str]) -> None:
    """Refuse unknown preset names up front, and preset files (``.yaml``) that are missing or
    break a rule of their kind: each would make every row 'not applicable'.

    Example:
        >>> check_presets(["dgx-h100"], ["gpt3-1.3b"])
        >>> check_presets(["dgx-h1000"], [])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter systems=dgx-h1000: unknown preset; available: ...
        >>> check_presets([], ["/no/such/mine.yaml"])
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter models=/no/such/mine.yaml: preset file: file not found
    """
    from ..core.errors import ScheduleFileError
    from ..systems.presets import available, read_preset

    for key, names, kind in (("systems", systems, "systems"), ("models", models, "llms")):
        known = available(kind)
        for name in names:
            if name.lower().endswith((".yaml", ".yml")):
                try:
                    read_preset(kind, name)
                except ScheduleFileError as exc:
                    where = f"{exc.location}: " if exc.location else ""
                    raise ParameterError(key, name, f"preset file: {where}{exc.rule}") from None
            elif name not in known:
                raise ParameterError(key, name, f"unknown preset; available: {', '.join(known)}")


def check_options(config: Config) -> None:
    """Resolve one point eagerly so a bad preset option is one error, not a table of them.

    Example:
        >>> check_options(Config(4, 4, "dgx-h100", "gpt3-1.3b", options=(("mfu", 2.0),)))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter mfu=2.0: must be a fraction in (0, 1]
    """
    from ..schedules import build
    from .resolve import resolve

    if config.options:
        resolve(config, build("gpipe", config.p, config.m))


def check_grid_ops(entries: Sequence[ScheduleEntry], configs: Sequence[Config]) -> None:
    """Refuse, before any point runs, a grid whose largest point of a family is over the op limit
    (``ppverify --max-ops``), as every command that builds one schedule refuses it: run, each
    point over it would only be a 'not applicable' row. Schedule files are checked as they are read.

    Example:
        >>> from ppverify.core.limits import op_limit
        >>> entries, configs = [ScheduleEntry("1f1b", "1f1b")], [Config(2, 2, costs=(("F", 1.0),)), Config(4, 4, costs=(("F", 1.0),))]
        >>> check_grid_ops(entries, configs)
        >>> with op_limit(20):   # the largest point, p=4 m=4: up to 3 x 4 x 4 = 48 ops
        ...     check_grid_ops(entries, configs)
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: 1f1b -p 4 -m 4: implies up to 48 ops, over the limit of 20 (raise it with ppverify --max-ops N)
    """
    from ..core.limits import check_family, family_ops

    for e in entries:
        points = {(c.p, c.m) for c in configs if e.applies(c.p, c.m)}
        if e.file is None and points:
            p, m = max(points, key=lambda pm: family_ops(e.family, pm[0], pm[1], e.params))
            check_family(e.family, p, m, e.params)


def request_configs(req: CompareRequest) -> tuple[Setup | None, list[Config]]:
    """The configurations to evaluate (and the findings' :class:`Setup` with ``req.findings``),
    preset names and options checked; built from the typed request, no text read.

    Example:
        >>> _, cs = request_configs(compare_request(ps="4", ms="4,8", costs="F=1,B=2", comm_delay="0,1"))
        >>> [c.label for c in cs]
        ['p=4 m=4 F=1,B=2 c=0', 'p=4 m=8 F=1,B=2 c=0', 'p=4 m=4 F=1,B=2 c=1', 'p=4 m=8 F=1,B=2 c=1']
        >>> setup, cs = request_configs(compare_request(findings=True, ps="4"))
        >>> setup.fast, setup.slow, len(cs)
        ('dgx-h100', 'ethernet-100g', 4)
    """
    if not req.findings:
        if req.costs is not None:
            configs = abstract_configs(dict(req.costs), req.comm_delays, req.ps, req.ms)
            check_common_cap(req.memory_cap, configs)
            return None, configs
        check_presets(req.systems, req.models)
        configs = default_configs(req.systems, req.models, req.ps, req.ms, req.options)
        check_options(configs[0])
        check_common_cap(req.memory_cap, configs)
        return None, configs
    if req.costs is not None:
        return abstract_setup(req.comm_delays[0], req.comm_delays[1], req.costs, req.ps)
    check_presets(req.systems[:2], req.models[:1])
    setup = Setup(req.systems[0], req.systems[1], req.models[0], req.ps, options=req.options)
    configs = setup.configs()
    check_options(configs[0])
    check_common_cap(req.memory_cap, configs)
    return setup, configs


def run_request(req: CompareRequest) -> CompareOutcome:
    """Run the comparison ``req`` asks for (or the findings' comparison and checks) and write
    ``req.out`` when given.

    Example:
        >>> o = run_request(compare_request(schedules="gpipe,1f1b", ps="4", ms="8", costs="F=1,B=2",
        ...                                 levels="slot", verify=False))
        >>> o.rows[["schedule", "makespan"]].values.tolist()   # (m+p-1)(tF+tB) for both
        [['gpipe', 33.0], ['1f1b', 33.0]]
    """
    levels = req.levels
    entries = FINDINGS_SCHEDULES if req.findings else req.schedules or DEFAULT_SCHEDULES
    setup, configs = request_configs(req)
    check_grid_ops(entries, configs)  # --max-ops: refused now (exit 2), not as every row's note
    points: list[PointResult] = []
    df = run_comparison(
        configs,
        entries,
        levels,
        req.time_limit,
        req.max_opt_ops,
        progress=req.progress,
        verify=req.verify and not req.findings,
        on_point=points.append if req.keep_points else None,
        memory_cap=req.memory_cap,
        measured_trace=req.measured_trace,
    )
    if req.out:
        write_rows(df, req.out)
    found = tuple(evaluate_findings(df, setup, levels)) if setup is not None else ()
    return CompareOutcome(df, levels, len(configs), len(entries), setup, found, tuple(points), req.memory_cap)


def write_rows(df: pd.DataFrame, out: str) -> Path:
    """Write the rows to ``out`` (``.parquet`` or ``.csv``) under a temporary name, then rename:
    never half a table. Returns the path.

    Example:
        >>> import tempfile, os
        >>> write_rows(pd.DataFrame({"a": [1]}), os.path.join(tempfile.mkdtemp(), "r.csv")).read_text()
        'a\\n1\\n'
    """
    from ..core.files import atomic_path

    path = Path(out)
    if path.parent and not path.parent.exists():
        raise ParameterError("out", out, f"folder {path.parent} does not exist")
    with atomic_path(out, "--out") as tmp:  # as given: Path() would drop a trailing '/'
        if path.suffix.lower() == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    return path


__all__ = [
    "FINDINGS_MODEL",
    "FINDINGS_SYSTEMS",
    "PRESET_OPTIONS",
    "CompareRequest",
    "check_grid_ops",
    "check_mode_options",
    "check_options",
    "check_presets",
    "compare_request",
    "parse_floats",
    "parse_ints",
    "request_configs",
    "run_request",
    "split_csv",
    "write_rows",
]
