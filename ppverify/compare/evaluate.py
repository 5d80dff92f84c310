"""One comparison point at every abstraction level: formula, slot table, async and contention
simulation, CP-SAT optimum (or proven bound).

Every level reuses the one definition of each concept: schedules come from the registry, costs and
transfers from the presets (or abstract costs), timelines from :func:`ppverify.engines.run`, metrics
from :class:`~ppverify.timeline.Timeline`, closed forms from the family's ``formula``, optima from
:mod:`ppverify.optimize`. A level whose module is not available, or that does not apply, yields a
result with a status saying so instead of a number: a comparison never silently drops a level.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..comm import CommModel, FixedDelay
from ..costs import CostModel, complete_costs
from ..errors import PPVerifyError
from ..schedule import Schedule
from .config import ALL_LEVELS, LEVEL_SEMANTICS, LEVELS, Config, ScheduleEntry


@dataclass(frozen=True)
class Resolved:
    """Cost and communication models of one configuration for one placement.

    ``share_costs`` are the F/B/I/W durations of one device share (what formulas take);
    ``activation_share`` is the activation memory of one microbatch over one device share (formulas
    count in those units).
    """

    costs: CostModel
    comm: CommModel
    share_costs: dict[str, float]
    activation_share: float
    note: str = ""


def resolve(config: Config, schedule: Schedule) -> Resolved:
    """Cost model and communication model of ``config`` for ``schedule``'s placement.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.compare.config import Config
        >>> r = resolve(Config(4, 4, costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.5), build("gpipe", p=4, m=4))
        >>> r.share_costs["B"], r.comm.transfer_time(0, 1, 0), r.activation_share
        (2.0, 0.5, 1.0)
    """
    placement = schedule.placement
    if config.abstract:
        given = dict(config.costs or ())
        costs = CostModel.abstract(placement, **given)
        return Resolved(costs, FixedDelay(config.comm_delay), complete_costs(given), 1.0)
    from ..cli.presets_args import preset_context_from_args

    ctx = preset_context_from_args(preset_namespace(config), schedule)
    return Resolved(ctx.costs, ctx.comm, share_costs(ctx.costs, placement.p), activation_share(ctx.costs, placement.p))


def preset_namespace(config: Config) -> argparse.Namespace:
    """The preset arguments of a configuration, as the shared preset helper expects them
    (``config.options`` may set ``mfu``, ``microbatch_size``, ``seq_len``, ``tp`` ...).

    Example:
        >>> from ppverify.compare.config import Config
        >>> ns = preset_namespace(Config(4, 4, "dgx-h100", "gpt3-13b", options=(("mfu", 0.5),)))
        >>> ns.system, ns.model, ns.mfu, ns.costs
        ('dgx-h100', 'gpt3-13b', 0.5, None)
    """
    ns = argparse.Namespace(
        system=config.system,
        model=config.model,
        costs=None,
        comm_delay=None,
        mfu=0.4,
        microbatch_size=1,
        seq_len=None,
        tp=1,
        recompute=False,
        flash_attention=False,
        layers_per_stage=None,
        ranks_per_node=None,
    )
    for k, v in config.options:
        setattr(ns, k, v)
    return ns


def share_costs(costs: CostModel, p: int) -> dict[str, float]:
    """Per-device-share durations: the whole model's op time of each kind over ``p`` devices
    (one pipe's stages cover the model once).

    Example:
        >>> from ppverify.placement import loop
        >>> share_costs(CostModel.abstract(loop(2, 2), F=1, B=2), 2)
        {'F': 1.0, 'B': 2.0, 'I': 1.0, 'W': 1.0}
    """
    return {k: float(sum(costs.duration[k])) / p for k in ("F", "B", "I", "W")}


def activation_share(costs: CostModel, p: int) -> float:
    """Activation memory of one microbatch over one device share.

    Example:
        >>> from ppverify.placement import wave
        >>> activation_share(CostModel.abstract(wave(2, 1)), 2)
        1.0
    """
    return float(sum(costs.activation)) / p


@dataclass(frozen=True)
class LevelResult:
    """The numbers one abstraction level gives for one schedule in one configuration.

    ``status`` is ``ok`` (a number), ``optimal``/``feasible`` (CP-SAT), ``unavailable`` (module
    missing), ``not applicable`` (outside the family's rules or regime) or ``error``; ``note``
    says why. ``lower_bound`` is CP-SAT's proven bound (optimum level only).
    """

    level: str
    status: str
    makespan: float | None = None
    bubble_ratio: float | None = None
    peak_activations: tuple[float, ...] | None = None
    lower_bound: float | None = None
    exact: bool | None = None
    note: str = ""
    seconds: float = 0.0
    #: the Timeline behind the numbers (engine and optimum levels), kept for ``ppverify report``
    timeline: Any = field(default=None, compare=False, repr=False)

    @property
    def has_value(self) -> bool:
        """True when the level produced a makespan."""
        return self.makespan is not None


def build_entry(entry: ScheduleEntry, p: int, m: int) -> Schedule:
    """Build the schedule of an entry (raises ParameterError outside the family's rules); a file
    entry loads its schedule, which applies only to its own p and m.

    Example:
        >>> build_entry(ScheduleEntry("gpipe", "gpipe"), 2, 3).describe()
        'gpipe p=2 m=3'
    """
    from ..errors import ParameterError
    from ..schedules import build

    if entry.file:
        from ..io import load_schedule

        s = load_schedule(entry.file)
        if (s.p, s.m) != (p, m):
            raise ParameterError(
                "schedule", entry.file, f"the file's schedule has p={s.p}, m={s.m}; evaluated only there"
            )
        return s
    return build(entry.family, p, m, **entry.params)


@dataclass(frozen=True)
class PointResult:
    """Every level's result for one schedule entry in one configuration, with the units used."""

    entry: ScheduleEntry
    config: Config
    results: tuple[LevelResult, ...]
    time_unit: str = "units"
    memory_unit: str = "activations"
    #: the Z3 verifier's verdict on the schedule: "valid", "INVALID: ...", "" when not checked
    verified: str = ""

    def level(self, name: str) -> LevelResult | None:
        """The result of one level, if it was evaluated."""
        return next((r for r in self.results if r.level == name), None)


def evaluate_point(
    entry: ScheduleEntry,
    config: Config,
    levels: tuple[str, ...] = LEVELS,
    time_limit: float = 1.0,
    optimum_cache: dict | None = None,
    max_optimum_ops: int = 256,
    verify: bool = False,
) -> PointResult:
    """Evaluate one schedule entry in one configuration at each requested level (and, with
    ``verify``, prove the schedule valid with the Z3 verifier).

    Example:
        >>> from ppverify.compare.config import Config, ScheduleEntry
        >>> cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.0)
        >>> pr = evaluate_point(ScheduleEntry("gpipe", "gpipe"), cfg, ("slot",))
        >>> [(r.level, r.makespan) for r in pr.results], pr.time_unit
        ([('slot', 21.0)], 'units')
    """
    for lv in levels:
        if lv not in ALL_LEVELS:
            raise PPVerifyError(f"unknown abstraction level {lv!r}; expected one of {', '.join(ALL_LEVELS)}")
    units = ("units", "activations") if config.abstract else ("s", "bytes")
    if not entry.applies(config.p, config.m):
        return PointResult(
            entry,
            config,
            tuple(
                LevelResult(lv, "not applicable", note=f"{entry.label} is evaluated in its regime m = p only")
                for lv in levels
            ),
            *units,
        )
    try:
        schedule = build_entry(entry, config.p, config.m)
    except PPVerifyError as exc:
        # by the error's kind, not its wording: an unknown family, a bad file or a limit, a rule of p/m
        from ..errors import ParameterError, ScheduleFileError
        from ..limits import LimitError

        if isinstance(exc, ParameterError) and exc.name == "family":
            status = "unavailable"
        elif isinstance(exc, (ScheduleFileError, LimitError)):
            status = "error"
        else:
            status = "not applicable"
        return PointResult(entry, config, tuple(LevelResult(lv, status, note=str(exc)) for lv in levels), *units)
    try:
        res = resolve(config, schedule)
    except PPVerifyError as exc:
        return PointResult(
            entry, config, tuple(LevelResult(lv, "not applicable", note=str(exc)) for lv in levels), *units
        )
    out = []
    for lv in levels:
        t0 = time.perf_counter()
        try:
            if lv == "formula":
                from ..overhead import formula_share_costs

                r = _formula(entry, config, replace(res, share_costs=formula_share_costs(res.share_costs, schedule)))
            elif lv in ("slot", "async", "contention"):
                r = _engine(lv, schedule, res)
            elif lv == "measured":  # run later, all points at once (compare.measured.fill_measured)
                from .measured import placeholder

                r = placeholder(config)
            else:
                r = _optimum(schedule, res, time_limit, optimum_cache, max_optimum_ops)
        except ImportError as exc:
            r = LevelResult(lv, "unavailable", note=f"module not installed ({exc})")
        except PPVerifyError as exc:
            r = LevelResult(lv, "error", note=str(exc))
        except Exception as exc:
            r = LevelResult(lv, "error", note=f"{type(exc).__name__}: {exc}")
        out.append(_timed(r, time.perf_counter() - t0, res.note))
    return PointResult(
        entry,
        config,
        tuple(out),
        res.costs.time_unit,
        res.costs.memory_unit,
        verify_schedule(schedule) if verify else "",
    )


def verify_schedule(schedule: Schedule) -> str:
    """The Z3 verifier's verdict in a few words: ``valid`` (completeness, placement, dependencies,
    exclusivity, deadlock freedom proven) or ``INVALID: <first violation>``.

    Example:
        >>> from ppverify.schedules import build
        >>> verify_schedule(build("1f1b", p=2, m=2))
        'valid'
    """
    try:
        from ..verify import verify as z3_verify
    except ImportError as exc:
        return f"unavailable ({exc})"
    try:
        report = z3_verify(schedule)
    except PPVerifyError as exc:
        return f"INVALID: {exc}"
    if report.valid:
        return "valid"
    return "INVALID: " + report.violations[0].to_text().splitlines()[0]


def _timed(r: LevelResult, seconds: float, note: str) -> LevelResult:
    notes = "; ".join(x for x in (r.note, note) if x)
    return replace(r, note=notes, seconds=round(seconds, 4))


def _formula(entry: ScheduleEntry, config: Config, res: Resolved) -> LevelResult:
    from ..schedules import get_family

    if entry.file:
        return LevelResult("formula", "unavailable", note="a schedule file has no closed form")
    fam = get_family(entry.family)
    if fam.formula is None:
        return LevelResult("formula", "unavailable", note=f"{fam.name} has no closed form registered")
    try:
        f = fam.formula(config.p, config.m, res.share_costs, **entry.params)
    except PPVerifyError as exc:
        return LevelResult("formula", "not applicable", note=str(exc))
    if f is None:
        return LevelResult("formula", "unavailable", note=f"{fam.name} has no closed form for these parameters")
    peaks = getattr(f, "peak_activations", None)
    peaks = None if peaks is None else tuple(float(x) * res.activation_share for x in peaks)
    ratio = getattr(f, "bubble_ratio", None)
    return LevelResult(
        "formula",
        "ok",
        float(f.makespan),
        None if ratio is None else float(ratio),
        peaks,
        exact=bool(getattr(f, "exact", True)),
        note=str(getattr(f, "conditions", "") or ""),
    )


def _engine(semantics: str, schedule: Schedule, res: Resolved) -> LevelResult:
    from ..engines import run

    options: dict[str, Any] = {"charge_comm": True} if semantics == "slot" else {}
    try:
        tl = run(schedule, res.costs, res.comm, semantics=semantics, **options)
    except ImportError as exc:
        return LevelResult(semantics, "unavailable", note=f"{semantics} engine not installed ({exc})")
    except PPVerifyError as exc:
        return LevelResult(semantics, "error", note=str(exc))
    return LevelResult(
        semantics,
        "ok",
        float(tl.makespan),
        float(tl.bubble_ratio),
        tuple(float(x) for x in tl.peak_memory()),
        exact=True,
        timeline=tl,
    )


def _optimum(schedule: Schedule, res: Resolved, time_limit: float, cache: dict | None, max_ops: int) -> LevelResult:
    from .optimum import solve_placement, unlike_ops

    if schedule.num_ops > max_ops:
        return LevelResult(
            "optimum", "not applicable", note=f"{schedule.num_ops} ops > {max_ops}: beyond the per-point solver budget"
        )
    # one cache per configuration: schedules sharing placement, pipes and op kinds share the optimum
    key = (schedule.placement.maps, schedule.pipe_of_mb, schedule.has_split_backward)
    if cache is not None and key in cache:
        r = cache[key]
    else:
        r = solve_placement(schedule, res.costs, res.comm, time_limit)
        if cache is not None:
            cache[key] = r
    unlike = unlike_ops(schedule)  # per schedule: placements share the optimum, not the family's ops
    return replace(r, note="; ".join(x for x in (unlike, r.note) if x)) if unlike else r


__all__ = ["LEVELS", "LEVEL_SEMANTICS", "LevelResult", "PointResult", "Resolved", "evaluate_point", "resolve"]
