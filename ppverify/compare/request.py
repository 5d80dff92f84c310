"""What ``ppverify compare`` is asked, as data, and everything it does with it: the selections
parsed and checked (:func:`request_levels`, :func:`request_configs`), the comparison or the findings
run (:func:`run_request`), the rows written (:func:`write_rows`), the outcome printed
(:func:`format_outcome`) or given as JSON (:func:`outcome_json`). The command module only maps its
options onto a :class:`CompareRequest`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.costs import parse_costs
from ..core.errors import ParameterError
from .config import (
    ALL_LEVELS,
    DEFAULT_M,
    DEFAULT_MODELS,
    DEFAULT_SYSTEMS,
    LEVEL_SEMANTICS,
    LEVELS,
    Config,
    abstract_configs,
    default_configs,
    select_schedules,
)
from .findings import FINDINGS_SCHEDULES, Finding, Setup, abstract_setup, evaluate_findings, format_findings
from .results import PointResult
from .run import run_comparison
from .table import format_config_table, format_legend, unavailable_levels

#: the preset options ``compare`` passes on to every system and model
PRESET_OPTIONS = ("mfu", "microbatch_size", "seq_len", "tp", "ranks_per_node")
#: the two systems and the model of ``--findings`` when none are given
FINDINGS_SYSTEMS = ("dgx-h100", "ethernet-100g")
FINDINGS_MODEL = "gpt3-1.3b"


def split_csv(text: str | None) -> list[str] | None:
    """Comma-separated values, each once, blanks dropped; ``None`` when nothing is given.

    Example:
        >>> split_csv("gpipe, 1f1b,,gpipe"), split_csv(" , "), split_csv(None)
        (['gpipe', '1f1b'], None, None)
    """
    if text is None:
        return None
    items = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))  # each value once
    return items or None


def given_csv(name: str, text: str | None) -> list[str] | None:
    """:func:`split_csv` of an option's value, ``None`` only when the option is not given: a value
    that names nothing (``''``, ``' , '``) is refused, never read as the default selection.

    Example:
        >>> given_csv("schedules", "gpipe,1f1b"), given_csv("schedules", None)
        (['gpipe', '1f1b'], None)
        >>> given_csv("schedules", " , ")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedules= , : names nothing; give comma-separated values, or leave the option out for its default
    """
    if text is None:
        return None
    items = split_csv(text)
    if items is None:
        raise ParameterError(
            name, text, "names nothing; give comma-separated values, or leave the option out for its default"
        )
    return items


def parse_ints(name: str, text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    """Comma-separated integers >= 1 (each once), or ``default`` when ``text`` is ``None``.

    Example:
        >>> parse_ints("p", "4,8,4", (4,)), parse_ints("p", None, (4,))
        ((4, 8), (4,))
        >>> parse_ints("m", "0", (4,))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=0: expected comma-separated integers >= 1
    """
    if text is None:
        return default
    try:
        vals = tuple(int(t) for t in split_csv(text) or ())
    except ValueError:
        raise ParameterError(name, text, "expected comma-separated integers, e.g. 4,8,16") from None
    if not vals or any(v < 1 for v in vals):
        raise ParameterError(name, text, "expected comma-separated integers >= 1")
    return tuple(dict.fromkeys(vals))  # a value given twice is one configuration


def parse_floats(name: str, text: str | None, default: tuple[float, ...]) -> tuple[float, ...]:
    """Comma-separated numbers >= 0 (repeats kept), or ``default`` when ``text`` is ``None``.

    Example:
        >>> parse_floats("comm-delay", "0,0.5", (0.0,))
        (0.0, 0.5)
    """
    if text is None:
        return default
    try:
        vals = tuple(float(t) for t in split_csv(text) or ())
    except ValueError:
        raise ParameterError(name, text, "expected comma-separated numbers, e.g. 0,0.5,1") from None
    if not vals or any(not v >= 0 for v in vals):
        raise ParameterError(name, text, "expected comma-separated numbers >= 0")
    return vals


@dataclass(frozen=True)
class CompareRequest:
    """One ``ppverify compare`` run as given: selections as comma-separated text (``None`` = the
    default), preset ``options`` as ``(name, value)`` pairs, abstract ``costs``/``comm_delay``
    (either selects abstract mode), the solver budget, ``findings`` for the seed paper's checks,
    ``out`` for a ``.csv``/``.parquet`` of the rows, ``keep_points`` to collect every point (with
    its timelines) for a report.

    Example:
        >>> CompareRequest(ps="4", ms="8", costs="F=1,B=2").abstract
        True
    """

    schedules: str | None = None
    systems: str | None = None
    models: str | None = None
    ps: str | None = None
    ms: str | None = None
    levels: str | None = None
    measured: bool = False
    costs: str | None = None
    comm_delay: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    time_limit: float = 0.5
    max_opt_ops: int = 256
    out: str | None = None
    findings: bool = False
    verify: bool = True
    progress: bool = False
    keep_points: bool = False
    #: ``--memory-cap``: ``None`` caps each optimum at its schedule's own peak, ``none`` is unlimited
    memory_cap: str | None = None
    #: read the measured level from these profiler traces (``--measured-trace``) instead of running it
    measured_trace: tuple[str, ...] | None = None

    @property
    def abstract(self) -> bool:
        """True when abstract costs or delays replace the presets."""
        return bool(self.costs or self.comm_delay)


def request_levels(req: CompareRequest) -> tuple[str, ...]:
    """The levels to evaluate (``measured`` added with ``req.measured``), checked along with the
    time limit and the ``out`` suffix; ``--findings`` without explicit levels skips the optimum.

    Example:
        >>> request_levels(CompareRequest(levels="slot,async", measured=True))
        ('slot', 'async', 'measured')
        >>> request_levels(CompareRequest(levels="slot,fast"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter levels=fast: unknown level; expected some of formula, slot, async, contention, optimum, measured
    """
    levels = tuple(given_csv("levels", req.levels) or LEVELS)
    if (req.measured or req.measured_trace) and "measured" not in levels:
        levels += ("measured",)
    for lv in levels:
        if lv not in ALL_LEVELS:
            raise ParameterError("levels", lv, f"unknown level; expected some of {', '.join(ALL_LEVELS)}")
    for name, text in (("costs", req.costs), ("comm-delay", req.comm_delay)):
        if text is not None and not str(text).replace(",", " ").strip():
            raise ParameterError(name, text, "an empty value; give one, or leave the option out for its default")
    if req.time_limit is not None and not req.time_limit > 0:
        raise ParameterError("time-limit", req.time_limit, "must be > 0 seconds")
    if req.out and Path(req.out).suffix.lower() not in (".csv", ".parquet"):
        raise ParameterError("out", req.out, "expected a .csv or .parquet file")
    if req.out:
        from ..core.files import output_target

        output_target(req.out, "--out")  # a trailing '/', a FIFO, a device: refused before the run
    if req.findings and not req.levels:
        levels = tuple(lv for lv in levels if lv != "optimum")
    if req.memory_cap is not None:  # the spelling checked once, in the mode's unit (each point's size later)
        from ..core.memory_cap import check_cap_text

        check_cap_text(req.memory_cap, counts_bytes=not req.abstract)
    return levels


def check_presets(systems: Sequence[str], models: Sequence[str]) -> None:
    """Refuse unknown preset names up front (a ``.yaml`` path is loaded by the presets module).

    Example:
        >>> check_presets(["dgx-h100"], ["gpt3-1.3b", "mine.yaml"])
        >>> check_presets(["dgx-h1000"], [])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter systems=dgx-h1000: unknown preset; available: ...
    """
    from ..systems.presets import available

    for key, names, kind in (("systems", systems, "systems"), ("models", models, "llms")):
        known = available(kind)
        for name in names:
            if name not in known and not name.endswith((".yaml", ".yml")):
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


def request_configs(req: CompareRequest) -> tuple[Setup | None, list[Config]]:
    """The configurations to evaluate (and the findings' :class:`Setup` with ``req.findings``),
    preset names and options checked.

    Example:
        >>> _, cs = request_configs(CompareRequest(ps="4", ms="4,8", costs="F=1,B=2", comm_delay="0,1"))
        >>> [c.label for c in cs]
        ['p=4 m=4 F=1,B=2 c=0', 'p=4 m=8 F=1,B=2 c=0', 'p=4 m=4 F=1,B=2 c=1', 'p=4 m=8 F=1,B=2 c=1']
        >>> setup, cs = request_configs(CompareRequest(findings=True, ps="4"))
        >>> setup.fast, setup.slow, len(cs)
        ('dgx-h100', 'ethernet-100g', 4)
    """
    if not req.findings:
        ps = parse_ints("p", req.ps, (4,))
        ms = parse_ints("m", req.ms, DEFAULT_M)
        if req.abstract:
            costs = parse_costs(req.costs or "F=1,B=2")
            return None, abstract_configs(costs, parse_floats("comm-delay", req.comm_delay, (0.0,)), ps, ms)
        systems = tuple(given_csv("systems", req.systems) or DEFAULT_SYSTEMS)
        models = tuple(given_csv("models", req.models) or DEFAULT_MODELS)
        check_presets(systems, models)
        configs = default_configs(systems, models, ps, ms, req.options)
        check_options(configs[0])
        return None, configs
    if req.abstract:
        delays = parse_floats("comm-delay", req.comm_delay, (0.0, 1.0))
        if len(delays) != 2:
            raise ParameterError("comm-delay", req.comm_delay, "--findings needs two delays: fast,slow")
        costs_ = tuple((k, float(v)) for k, v in parse_costs(req.costs or "F=1,B=2").items())
        return abstract_setup(delays[0], delays[1], costs_, parse_ints("p", req.ps, (4, 8)))
    systems_ = given_csv("systems", req.systems) or list(FINDINGS_SYSTEMS)
    if len(systems_) != 2:
        raise ParameterError("systems", req.systems, "--findings needs two systems: fast,slow")
    model = (given_csv("models", req.models) or [FINDINGS_MODEL])[0]
    check_presets(tuple(systems_), (model,))
    setup = Setup(systems_[0], systems_[1], model, parse_ints("p", req.ps, (4, 8)), options=req.options)
    configs = setup.configs()
    check_options(configs[0])
    return setup, configs


@dataclass(frozen=True)
class CompareOutcome:
    """What a request computed: the rows, the levels, the counts behind them, the findings (with
    ``findings``) and, with ``keep_points``, every point result for a report."""

    rows: pd.DataFrame = field(repr=False)
    levels: tuple[str, ...]
    num_configs: int
    num_schedules: int
    setup: Setup | None = None
    findings: tuple[Finding, ...] = ()
    points: tuple[PointResult, ...] = field(default=(), repr=False)
    memory_cap: str | None = None


def run_request(req: CompareRequest) -> CompareOutcome:
    """Check ``req``, run the comparison (or the findings' comparison and checks) and write
    ``req.out`` when given.

    Example:
        >>> o = run_request(CompareRequest(schedules="gpipe,1f1b", ps="4", ms="8", costs="F=1,B=2",
        ...                                levels="slot", verify=False))
        >>> o.rows[["schedule", "makespan"]].values.tolist()   # (m+p-1)(tF+tB) for both
        [['gpipe', 33.0], ['1f1b', 33.0]]
    """
    levels = request_levels(req)
    entries = FINDINGS_SCHEDULES if req.findings else select_schedules(given_csv("schedules", req.schedules))
    setup, configs = request_configs(req)
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
        raise ParameterError("out", out, f"directory {path.parent} does not exist")
    with atomic_path(out, "--out") as tmp:  # as given: Path() would drop a trailing '/'
        if path.suffix.lower() == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    return path


def outcome_json(outcome: CompareOutcome) -> dict[str, Any]:
    """The outcome as plain data: the findings' verdicts with ``findings``, else the levels and
    every row.

    Example:
        >>> o = run_request(CompareRequest(schedules="gpipe", ps="2", ms="2", costs="F=1,B=2", levels="slot"))
        >>> d = outcome_json(o)
        >>> list(d["levels"]), d["rows"][0]["makespan"], d["rows"][0]["verified"]   # (m+p-1)(tF+tB) = 3*3
        (['slot'], 9.0, 'valid')
    """
    if outcome.setup is not None:
        return {
            "findings": [
                {
                    "key": f.key,
                    "claim": f.claim,
                    "summary": f.summary,
                    "verdicts": [
                        {"level": v.level, "reproduced": v.reproduced, "evidence": v.evidence} for v in f.verdicts
                    ],
                }
                for f in outcome.findings
            ]
        }
    df = outcome.rows
    return {
        "levels": {lv: LEVEL_SEMANTICS[lv] for lv in outcome.levels},
        "memory_cap": optimum_memory(outcome.memory_cap),
        "rows": df.astype(object).where(df.notna(), None).to_dict(orient="records"),
    }


def optimum_memory(memory_cap: str | None) -> str:
    """What the optimum column's memory is, in words: each family's own peak (the default),
    unlimited memory (``none``) or the cap given.

    Example:
        >>> optimum_memory(None), optimum_memory("none"), optimum_memory("8")
        ("each schedule's own peak", 'unlimited memory', 'cap 8')
    """
    from ..core.memory_cap import UNLIMITED, UNLIMITED_LABEL

    if memory_cap is None:
        return "each schedule's own peak"
    return UNLIMITED_LABEL if memory_cap.strip().lower() == UNLIMITED else f"cap {memory_cap.strip()}"


def format_outcome(outcome: CompareOutcome, seconds: float, out: str | None = None) -> str:
    """The outcome in text: one table per configuration, the legend, the levels that produced
    nothing and a closing count (or, with findings, the findings and their evidence).

    Example:
        >>> o = run_request(CompareRequest(schedules="gpipe", ps="2", ms="2", costs="F=1", levels="slot"))
        >>> format_outcome(o, 0.5).splitlines()[-1]
        '1 rows (1 configurations x 1 schedules x 1 levels) in 0.5 s'
    """
    if outcome.setup is not None:
        setup = outcome.setup
        head = (
            f"Seed-paper findings, fast = {setup.fast}, slow = {setup.slow}"
            + (f", model {setup.model}" if setup.model else "")
            + f", p in {list(setup.ps)}, m in {{p, {setup.large_m_factor}p}}\n"
        )
        return f"{head}\n{format_findings(list(outcome.findings))}\n\n({seconds:.1f} s)"
    df = outcome.rows
    out_lines = []
    for cfg in dict.fromkeys(df["config"]):
        out_lines += [format_config_table(df, cfg), ""]
    out_lines.append(format_legend(list(outcome.levels), optimum_memory(outcome.memory_cap)))
    out_lines += [f"  level {lv} produced no numbers: {why}" for lv, why in unavailable_levels(df).items()]
    out_lines.append(
        f"\n{len(df)} rows ({outcome.num_configs} configurations x {outcome.num_schedules} schedules x "
        f"{len(outcome.levels)} levels) in {seconds:.1f} s" + (f"; written to {out}" if out else "")
    )
    return "\n".join(out_lines)


__all__ = [
    "FINDINGS_MODEL",
    "FINDINGS_SYSTEMS",
    "PRESET_OPTIONS",
    "CompareOutcome",
    "CompareRequest",
    "check_options",
    "check_presets",
    "format_outcome",
    "optimum_memory",
    "outcome_json",
    "parse_floats",
    "parse_ints",
    "request_configs",
    "request_levels",
    "run_request",
    "split_csv",
    "write_rows",
]
