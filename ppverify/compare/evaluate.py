"""One comparison point at every abstraction level: formula, slot table, async and contention
simulation, CP-SAT optimum (or proven bound).

Every level reuses the one definition of each concept: schedules come from the registry, costs and
transfers from the presets (or abstract costs), timelines from :func:`ppverify.engines.run`, metrics
from :class:`~ppverify.core.timeline.Timeline`, closed forms from the family's ``formula``, optima from
:mod:`ppverify.optimize`. A level that does not apply (or has no closed form, or fails) yields a
result with a status saying so instead of a number: a comparison never silently drops a level.
Results are :mod:`.results`, the models of a point :mod:`.resolve` (both re-exported here).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..core.errors import ParameterError, PPVerifyError, ScheduleFileError
from ..core.limits import LimitError
from ..core.memory_cap import CapSpec
from ..core.placement import Placement
from ..core.schedule import Schedule, carrier
from ..engines import registry
from .config import ALL_LEVELS, LEVEL_SEMANTICS, LEVELS, Config, ScheduleEntry
from .measured import placeholder
from .optimum import solve_placement, unlike_ops
from .resolve import Resolved, activation_share, build_entry, resolve, share_costs
from .results import LevelResult, PointResult


def evaluate_point(
    entry: ScheduleEntry,
    config: Config,
    levels: tuple[str, ...] = LEVELS,
    time_limit: float = 1.0,
    optimum_cache: dict | None = None,
    max_optimum_ops: int = 256,
    verify: bool = False,
    memory_cap: CapSpec | None = None,
) -> PointResult:
    """Evaluate one schedule entry in one configuration at each requested level (and, with
    ``verify``, prove the schedule valid with the Z3 verifier). The optimum is capped at the
    schedule's own peak (like for like) unless ``memory_cap`` says otherwise (``--memory-cap``
    as read by :func:`~ppverify.core.memory_cap.read_memory_cap`: ``none`` for unlimited memory,
    or a cap every schedule's optimum shares, resolved in this point's cost model).

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
        if isinstance(exc, ParameterError) and exc.name == "family":
            status = "unavailable"
        elif isinstance(exc, (ScheduleFileError, LimitError)):
            status = "error"
        else:
            status = "not applicable"
        return PointResult(entry, config, tuple(LevelResult(lv, status, note=str(exc)) for lv in levels), *units)
    try:
        res = resolve(config, schedule)
        memory_cap = common_cap(memory_cap, config, schedule.placement)
    except PPVerifyError as exc:
        return PointResult(
            entry, config, tuple(LevelResult(lv, "not applicable", note=str(exc)) for lv in levels), *units
        )
    out = []
    for lv in levels:
        t0 = time.perf_counter()
        try:
            if lv == "formula":
                from ..core.overhead import formula_share_costs

                r = _formula(entry, config, replace(res, share_costs=formula_share_costs(res.share_costs, schedule)))
            elif lv in registry.names(levels_only=True):
                r = _engine(lv, schedule, res)
            elif lv == "measured":  # run later, all points at once (compare.measured.fill_measured)
                r = placeholder(config)
            else:
                r = _optimum(schedule, res, time_limit, optimum_cache, max_optimum_ops, memory_cap)
        except PPVerifyError as exc:
            r = LevelResult(lv, "error", note=str(exc))
        except Exception as exc:
            r = LevelResult(lv, "error", note=f"{type(exc).__name__}: {exc}")
        out.append(_timed(r, time.perf_counter() - t0, res.note))
    out = with_oom(out, schedule, res)
    return PointResult(
        entry,
        config,
        tuple(out),
        res.costs.time_unit,
        res.costs.memory_unit,
        verify_schedule(schedule) if verify else "",
    )


def with_oom(results: list[LevelResult], schedule: Schedule, res: Resolved) -> list[LevelResult]:
    """``results`` with their ``oom_devices``: the devices whose peak (weights, gradients,
    optimizer state and activations, as ``ppverify simulate`` counts it) is over the system's
    memory. Every level but the optimum times the schedule itself, whose per-device op order (and
    so its memory) is the same at each: they share the first engine run's verdict (an async run
    made for it when no engine level ran). The optimum is another op order: its own timeline's.
    Without a capacity (abstract costs) nothing is known and the results are returned as they are.

    Example:
        >>> from ppverify.compare.config import Config
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=4, m=4)
        >>> res = resolve(Config(4, 4, "dgx-h100", "gpt3-13b"), s)  # device 0: 50.9 GiB weights + 44.5 GiB > 80
        >>> [r.oom_devices for r in with_oom([LevelResult("formula", "ok", 0.7)], s, res)]
        [(0, 1)]
        >>> with_oom([LevelResult("formula", "ok", 0.7)], s, resolve(Config(4, 4, costs=(("F", 1.0),)), s))[0].oom_devices
    """
    from ..engines import run
    from ..engines.simulate import memory_report

    capacity = getattr(res.comm, "memory_bytes", None)
    if capacity is None:
        return results
    engines = registry.names(levels_only=True)
    tl = next((r.timeline for r in results if r.level in engines and r.timeline is not None), None)
    if tl is None:
        try:
            tl = run(schedule, res.costs, res.comm, semantics="async")
        except PPVerifyError:  # it does not run: no verdict on its memory
            return results
    own = tuple(memory_report(tl, capacity)["oom"])
    out = []
    for r in results:
        if r.level != "optimum":
            out.append(replace(r, oom_devices=own))
        elif r.timeline is not None:
            out.append(replace(r, oom_devices=tuple(memory_report(r.timeline, capacity)["oom"])))
        else:
            out.append(r)
    return out


def verify_schedule(schedule: Schedule) -> str:
    """The Z3 verifier's verdict in a few words: ``valid`` (completeness, placement, dependencies,
    exclusivity, deadlock freedom proven) or ``INVALID: <first violation>``.

    Example:
        >>> from ppverify.schedules import build
        >>> verify_schedule(build("1f1b", p=2, m=2))
        'valid'
    """
    from ..verify import verify as z3_verify  # lazily: Z3 loads only when a proof is asked for

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
    from ..core.closed_form import freed_share

    # presets free part of an activation at I: the formulas follow the engines' memory model
    freed = freed_share(res.costs)
    costs = {**res.share_costs, "freed_by_I": freed} if freed > 0 else res.share_costs
    try:
        f = fam.formula(config.p, config.m, costs, **entry.params)
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
    except PPVerifyError as exc:
        return LevelResult(semantics, "error", note=str(exc))
    return LevelResult(
        semantics,
        "ok",
        float(tl.makespan),
        float(tl.bubble_ratio),
        tuple(shown_memory(tl.peak_memory().tolist(), res, schedule)),
        exact=True,
        timeline=tl,
    )


def shown_memory(amounts: Iterable[float], res: Resolved, schedule: Schedule) -> list[float]:
    """Memory amounts of ``schedule`` (peaks, a cap) in the cost model's unit as every command
    shows them: bytes as they are, else activations of one microbatch on a device's whole share
    (:func:`~ppverify.core.memory_cap.printed_unit`). The solver and the engines keep the raw
    unit; with unequal shares (map ``0,1,1``, stages of ``p/S = 2/3`` each) one activation is the
    largest device's ``4/3``, not one raw unit.

    Example:
        >>> from ppverify.compare.config import Config
        >>> from ppverify.core.placement import Placement
        >>> from ppverify.core.schedule import carrier
        >>> s = carrier(Placement(2, ((0, 1, 1),)), 2)
        >>> shown_memory([4 / 3, 2.0], resolve(Config(2, 2, costs=(("F", 1.0),)), s), s)  # 4/3 / (4/3), 2 / (4/3)
        [1.0, 1.5]
    """
    from ..core.memory_unit import printed_unit
    from ..views.memory_units import in_activations

    return in_activations(list(amounts), printed_unit(res.costs, schedule.placement))


def common_cap(memory_cap: CapSpec | None, config: Config, placement: Placement | None = None) -> CapSpec | None:
    """``--memory-cap N`` or ``NMF`` as one amount that every schedule's optimum shares, counted on
    the linear pipeline of ``p`` devices (1F1B's, its layers split as presets split them): ``N``
    activations are ``N`` times the most one microbatch holds on one of its devices, ``NMF`` ``N``
    times its largest stage activation (a stage is a device's share there). With presets both
    become bytes, in abstract units activations: each placement's own units differ (an
    interleaved stage is half a device's share, so its ``1MF`` was half the bytes of 1F1B's; Llama
    2 7B's 32 layers at p = 3 put 11 on linear's first device, 11 and the logits on interleaved's
    last). In abstract units every placement's stages of one pipe hold ``p`` of them in all (a
    stage ``p/S``), so one amount is one number of them; given the ``placement`` the cap is
    returned in that placement's activations, which differ from linear's where devices hold
    unequal shares (map ``0,1,1``: one activation is ``4/3`` units, linear's is 1). A size or
    ``none`` is returned as it is.

    Example:
        >>> from ppverify.core.memory_cap import read_memory_cap
        >>> cfg = Config(3, 6, system="dgx-h100", model="llama2-7b")
        >>> cap = common_cap(read_memory_cap("2"), cfg)
        >>> cap.kind, int(cap.amount) == 2 * 11 * 4096 * 4096 * 1015 // 10  # 11 layers of 101.5 sbh
        ('bytes', True)
        >>> # abstract linear(4): a stage is a device's share, one activation: 8MF = 8 activations
        >>> common_cap(read_memory_cap("8MF"), Config(4, 4, costs=(("F", 1.0),))).amount
        Fraction(8, 1)
        >>> # 0,1,1: 1.5 of linear's activations (1.5 units) are 1.5 / (4/3) = 9/8 of its own
        >>> from ppverify.core.placement import Placement
        >>> common_cap(read_memory_cap("1.5"), Config(2, 2, costs=(("F", 1.0),)), Placement(2, ((0, 1, 1),))).amount
        Fraction(9, 8)
    """
    if memory_cap is None or memory_cap.kind not in ("activations", "stage_activations"):
        return memory_cap
    from ..core.exact import exact_fraction
    from ..core.memory_unit import exact_unit
    from ..core.placement import linear

    ref = linear(config.p)
    costs = resolve(config, carrier(ref, config.m)).costs
    unit = exact_unit(costs, ref)
    per = unit if memory_cap.kind == "activations" else exact_fraction(max(costs.activation))
    assert memory_cap.amount is not None
    if config.abstract:
        if placement is not None:  # the same units, counted in this placement's activations
            own = resolve(config, carrier(placement, config.m)).costs
            unit = exact_unit(own, placement)
        return replace(memory_cap, kind="activations", amount=memory_cap.amount * per / unit)
    return replace(memory_cap, kind="bytes", amount=memory_cap.amount * per)


def check_common_cap(memory_cap: CapSpec | None, configs: Iterable[Config]) -> None:
    """Refuse, before anything runs, a cap that the linear pipeline of some configuration cannot
    take (below one of its stage activations, so that no forward could start, or beyond any
    count): every optimum row would be an error. A configuration whose presets do not resolve is
    left to its rows, which say why.

    Example:
        >>> from ppverify.core.memory_cap import read_memory_cap
        >>> check_common_cap(read_memory_cap("1MF"), [Config(4, 4, "dgx-h100", "gpt3-1.3b")])
        >>> check_common_cap(read_memory_cap("10B"), [Config(4, 4, "dgx-h100", "gpt3-1.3b")])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=10B: is below one stage activation (... activations): no forward could start (p=4 m=4 dgx-h100 gpt3-1.3b)
    """
    from ..core.memory_cap import resolve_memory_cap
    from ..core.placement import linear

    if memory_cap is None or memory_cap.unlimited:
        return
    seen: set[tuple] = set()
    for cfg in configs:
        key = (cfg.p, cfg.system, cfg.model, cfg.options, cfg.costs)  # m changes no byte count
        if key in seen:
            continue
        seen.add(key)
        ref = linear(cfg.p)
        try:
            cap = common_cap(memory_cap, cfg)
            costs = resolve(cfg, carrier(ref, cfg.m)).costs
        except PPVerifyError:  # its rows say why
            continue
        assert cap is not None
        try:
            resolve_memory_cap(cap, costs, ref)
        except ParameterError as exc:
            raise ParameterError(exc.name, exc.value, f"{exc.rule} ({cfg.label})") from None


def optimum_cap(schedule: Schedule, res: Resolved, memory_cap: CapSpec | None) -> float | None:
    """The cap of a schedule's optimum in the cost model's unit: the schedule's own peak (its
    highest per-device activation peak, as the ``async`` engine runs it) when ``memory_cap`` is
    ``None``, ``None`` (unlimited memory) for ``none``, else the cap resolved in this point's cost model.

    Example:
        >>> from ppverify.compare.config import Config
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=4, m=8)
        >>> res = resolve(Config(4, 8, costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.0), s)
        >>> from ppverify.core.memory_cap import read_memory_cap
        >>> [optimum_cap(s, res, read_memory_cap(t)) for t in (None, "none", "6")]
        [4.0, None, 6.0]
    """
    from ..core.memory_cap import resolve_memory_cap
    from ..engines import run

    if memory_cap is None:  # like for like: the family's own peak
        return float(run(schedule, res.costs, res.comm, semantics="async").peak_memory().max())
    return resolve_memory_cap(memory_cap, res.costs, schedule.placement).value


def _optimum(
    schedule: Schedule, res: Resolved, time_limit: float, cache: dict | None, max_ops: int, memory_cap: CapSpec | None
) -> LevelResult:
    if schedule.num_ops > max_ops:
        return LevelResult(
            "optimum", "not applicable", note=f"{schedule.num_ops} ops > {max_ops}: beyond the per-point solver budget"
        )
    cap = optimum_cap(schedule, res, memory_cap)
    # one cache per configuration: schedules sharing placement, pipes, op kinds and cap share the optimum
    key = (schedule.placement.maps, schedule.pipe_of_mb, schedule.has_split_backward, cap)
    if cache is not None and key in cache:
        r = cache[key]
    else:
        r = solve_placement(schedule, res.costs, res.comm, time_limit, cap)
        if cache is not None:
            cache[key] = r
    # the solver and the cache count the cost model's raw unit; the row shows what every command shows
    r = replace(
        r,
        peak_activations=None if r.peak_activations is None else tuple(shown_memory(r.peak_activations, res, schedule)),
        memory_cap=None if r.memory_cap is None else shown_memory([r.memory_cap], res, schedule)[0],
    )
    unlike = unlike_ops(schedule)  # per schedule: placements share the optimum, not the family's ops
    return replace(r, note="; ".join(x for x in (unlike, r.note) if x)) if unlike else r


__all__ = [
    "LEVELS",
    "LEVEL_SEMANTICS",
    "LevelResult",
    "PointResult",
    "Resolved",
    "activation_share",
    "build_entry",
    "check_common_cap",
    "common_cap",
    "evaluate_point",
    "resolve",
    "share_costs",
    "shown_memory",
    "verify_schedule",
    "with_oom",
]
