"""Preset resolution: a system, an LLM and training settings (or abstract costs) turned into the
cost and communication models of one schedule.

Three modes, chosen by which settings are given:

* **preset** (``system`` and ``model``): durations in seconds from FLOPs, peak TFLOP/s and MFU;
  transfers from the system's link tiers, a pipeline rank being ``tp`` GPUs wide (so a node holds
  ``gpus_per_node // tp`` ranks unless ``ranks_per_node`` says fewer); memory in bytes.
* **abstract** (neither): ``costs`` such as ``F=1,B=2`` per device share (unit slots by default)
  and ``comm_delay`` for every cross-device transfer (0 by default).
* **measured** (``system`` and ``costs``, no ``model``): the costs are seconds per device share
  (what ``ppverify measure --compute sleep`` sleeps), transfers and the runtime overhead come from
  the system (a preset written by ``ppverify calibrate``).

In both system modes the system's runtime overhead (``runtime:`` section, :mod:`ppverify.core.overhead`)
is folded into the op durations. Other mixes (``costs`` with ``model``, ``comm_delay`` with
``system``, ``system`` alone) are refused, since seconds and abstract units cannot be combined.
The command-line options of the same names (:mod:`ppverify.cli.presets_args`) and the
configurations of ``ppverify compare`` both resolve through :func:`resolve_presets`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ..core.comm import CommModel, FixedDelay
from ..core.costs import CostModel, parse_costs
from ..core.errors import ParameterError
from ..core.limits import MAX_NUMBER
from ..core.schedule import Schedule

if TYPE_CHECKING:  # the system module loads presets; imported where it is used
    from .system import System

DEFAULT_MFU = 0.4


@dataclass(frozen=True)
class PresetSettings:
    """What to resolve: preset names (or ``.yaml`` paths), training settings, or abstract costs.

    ``None`` means "not given" (the default applies); a given 0 stays 0 so that validation refuses
    it. ``layers_per_stage`` is ``"3,3,2"`` or a sequence of counts.

    Example:
        >>> PresetSettings(system="dgx-h100", model="gpt3-13b").mfu
        0.4
    """

    system: str | None = None
    model: str | None = None
    #: abstract costs: ``F=1,B=2`` text, or the ``(kind, cost)`` pairs a command parsed it into
    costs: str | tuple[tuple[str, float], ...] | None = None
    comm_delay: float | None = None
    mfu: float | None = DEFAULT_MFU
    microbatch_size: int | None = 1
    seq_len: int | None = None
    tp: int | None = 1
    recompute: bool = False
    flash_attention: bool = False
    layers_per_stage: str | Sequence[int] | None = None
    ranks_per_node: int | None = None


#: the settings' field names (what a configuration's ``options`` may set)
SETTINGS_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(PresetSettings))


def settings_from(values: Mapping[str, Any]) -> PresetSettings:
    """Settings from a mapping of field names (others are ignored, as an argparse namespace or a
    configuration's options carry more than presets); a field absent from ``values`` is not given.

    Example:
        >>> s = settings_from({"system": "dgx-h100", "model": "gpt3-13b", "mfu": 0.5, "json": True})
        >>> s.mfu, s.microbatch_size
        (0.5, None)
    """
    given: dict[str, Any] = {k: values.get(k) for k in SETTINGS_FIELDS}
    given["recompute"] = bool(given["recompute"])
    given["flash_attention"] = bool(given["flash_attention"])
    return PresetSettings(**given)


@dataclass(frozen=True)
class PresetContext:
    """What the settings resolved to: the cost and communication models, and the system and
    model presets when given (``None`` in abstract mode).

    Example:
        >>> from ppverify.core.placement import linear
        >>> PresetContext(CostModel.unit(linear(2)), FixedDelay(0.0)).preset_mode
        False
    """

    costs: CostModel
    comm: CommModel
    system: object | None = None
    model: object | None = None
    stage_costs: object | None = None
    #: the costs before the system's runtime overhead was folded in (``None``: nothing folded),
    #: for an engine that models that overhead itself (the ``runtime`` semantics)
    base_costs: CostModel | None = None

    def costs_for(self, own_overhead: bool) -> CostModel:
        """The costs an engine takes: :attr:`base_costs` when it models the runtime overhead itself.

        Example:
            >>> from ppverify.core.placement import linear
            >>> c = CostModel.unit(linear(2))
            >>> PresetContext(c, FixedDelay(0.0)).costs_for(True) is c
            True
        """
        return self.base_costs if own_overhead and self.base_costs is not None else self.costs

    @property
    def preset_mode(self) -> bool:
        """True when durations are seconds from presets."""
        return self.system is not None


def _layers(value: str | Sequence[int] | None) -> tuple[int, ...] | None:
    if value is None or (isinstance(value, str) and not value):
        return None
    try:
        return tuple(int(x) for x in (value.split(",") if isinstance(value, str) else value))
    except (TypeError, ValueError):
        raise ParameterError("layers-per-stage", value, "expected comma-separated integers, e.g. 3,3,2") from None


def _check_delay(value: float | None) -> None:
    # 1e308 would overflow every sum into inf and NaN results
    if value is not None and (not math.isfinite(value) or value < 0 or value > MAX_NUMBER):
        raise ParameterError("comm-delay", value, f"must be a finite number >= 0 and <= {MAX_NUMBER:g}")


def _abstract_costs(given: str | Sequence[tuple[str, float]] | None, schedule: Schedule) -> CostModel:
    if not given:  # the default abstract costs: F=1, B=2, I=W=1
        return CostModel.abstract(schedule.placement)
    # a command parses its --costs once, at its boundary, and passes the pairs; text is read here
    return CostModel.abstract(schedule.placement, **(parse_costs(given) if isinstance(given, str) else dict(given)))


def _given_or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _labelled(c: CostModel, time_unit: str, label: str) -> CostModel:
    return CostModel(
        c.duration,
        c.activation,
        c.freed_by_I,
        c.boundary_bytes,
        c.weight_bytes,
        c.overlap,
        time_unit,
        c.memory_unit,
        label,
        c.extra,
    )


#: options that shape a model preset's durations and bytes, with the value that changes nothing
MODEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("mfu", DEFAULT_MFU),
    ("microbatch_size", 1),
    ("seq_len", None),
    ("tp", 1),
    ("recompute", False),
    ("flash_attention", False),
    ("layers_per_stage", None),
)


def check_model_options(settings: PresetSettings, system_too: bool = False) -> None:
    """Refuse a model option (``--mfu``, ``--seq-len``, ``--tp``...) without ``--model``, and
    with ``system_too`` ``--ranks-per-node`` without ``--system``: abstract ``--costs`` take
    their durations as given, so these would change nothing (they were silently ignored).

    Example:
        >>> check_model_options(PresetSettings(costs="F=1,B=2"))
        >>> check_model_options(PresetSettings(costs="F=1,B=2", mfu=0.5))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter mfu=0.5: shapes a model preset's durations and bytes; these costs are abstract (--costs), which it does not change: give --system and --model, or leave it out
    """
    # what the costs are instead: typed abstract ones, or (no --costs) a file's stored ones or the defaults
    given = (
        "these costs are abstract (--costs)"
        if settings.costs
        else "without --model the costs are taken as they are (a file's stored costs, or the defaults)"
    )
    for name, neutral in MODEL_OPTIONS:
        value = getattr(settings, name)
        if value is not None and value != neutral:
            raise ParameterError(
                name.replace("_", "-"),
                value,
                f"shapes a model preset's durations and bytes; {given}, which it "
                "does not change: give --system and --model, or leave it out",
            )
    if system_too and settings.ranks_per_node is not None:
        raise ParameterError(
            "ranks-per-node",
            settings.ranks_per_node,
            "places ranks on a system preset's nodes; without --system there are none: give --system, or leave it out",
        )


def _ranks_for_tp(system: System, given: int | None, tp: int) -> System:
    """``system`` with each pipeline rank ``tp`` GPUs wide: by default a node holds
    ``gpus_per_node // tp`` ranks (at least 1: a wider rank spans nodes), and a given
    ``ranks_per_node`` that needs more GPUs than a node has is refused (it would put hops on the
    intra-node link that cross nodes).

    Example:
        >>> from .system import load_system
        >>> _ranks_for_tp(load_system("dgx-h100"), None, 2).per_node, _ranks_for_tp(load_system("dgx-h100"), None, 16).per_node
        (4, 1)
    """
    if tp <= 1:
        return system
    fit = max(1, system.gpus_per_node // tp)
    if given is None:
        return system.with_ranks_per_node(fit)
    if given > fit:
        raise ParameterError(
            "ranks-per-node",
            given,
            f"{given} pipeline ranks of --tp {tp} GPUs each need {given * tp} GPUs, and a node of {system.name} "
            f"has {system.gpus_per_node}: give at most {fit}, or leave it out",
        )
    return system


def resolve_presets(settings: PresetSettings, schedule: Schedule) -> PresetContext:
    """Resolve ``settings`` (see the module doc for the three modes) for ``schedule``.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=4, m=4)
        >>> ctx = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s)
        >>> ctx.costs.time_unit, ctx.system.name, round(ctx.comm.transfer_time(0, 1, 1e9), 6)
        ('s', 'dgx-h100', 0.002227)
        >>> ctx = resolve_presets(PresetSettings(costs="F=1,B=2", comm_delay=0.5), s)
        >>> ctx.costs.duration["B"], ctx.comm.transfer_time(0, 1, 0), ctx.preset_mode
        ((2.0, 2.0, 2.0, 2.0), 0.5, False)
    """
    from ..core.overhead import system_overhead
    from .llm import Training, load_llm, stage_costs
    from .system import load_system

    system_name, model_name = settings.system, settings.model
    costs_text, delay = settings.costs, settings.comm_delay
    _check_delay(delay)
    if system_name is None and model_name is None:
        check_model_options(settings, system_too=True)
        return PresetContext(_abstract_costs(costs_text, schedule), FixedDelay(delay or 0.0))
    if system_name is not None and model_name is None and costs_text and delay is None:
        check_model_options(settings)
        # measured-style costs: seconds per device share, links and runtime overhead from the
        # system (a calibrated preset, ppverify calibrate)
        system = load_system(system_name, settings.ranks_per_node)
        c = _abstract_costs(costs_text, schedule)
        c = _labelled(c, "s", f"{c.label} s on {system.name}")
        return PresetContext(system_overhead(c, schedule.placement, system), system, system, base_costs=c)
    if system_name is None or model_name is None:
        # a misspelt preset is the likelier mistake: name the available ones first
        if system_name is not None:
            load_system(system_name)
        else:
            load_llm(str(model_name))
        missing = "--model" if model_name is None else "--system"
        given, value = ("system", system_name) if model_name is None else ("model", model_name)
        raise ParameterError(  # named by what was given: "model=None" would name nothing typed
            given,
            value,
            f"{missing} is missing: --system and --model go together (durations in seconds need both the "
            "model's FLOPs and the device's peak); for abstract units use --costs and --comm-delay",
        )
    if costs_text:
        from ..core.costs import costs_text as typed

        shown = costs_text if isinstance(costs_text, str) else typed(costs_text)
        raise ParameterError("costs", shown, "abstract --costs cannot be combined with --system/--model")
    if delay is not None:
        raise ParameterError(
            "comm-delay", delay, "--comm-delay is abstract; with --system the links set transfer times"
        )
    system = load_system(system_name, settings.ranks_per_node)
    model = load_llm(model_name)
    training = Training(
        microbatch_size=_given_or(settings.microbatch_size, 1),  # 0 is refused, not replaced
        seq_len=settings.seq_len,
        mfu=_given_or(settings.mfu, DEFAULT_MFU),
        tp=_given_or(settings.tp, 1),
        recompute=bool(settings.recompute),
        flash_attention=bool(settings.flash_attention),
        layers_per_stage=_layers(settings.layers_per_stage),
    )
    system = _ranks_for_tp(system, settings.ranks_per_node, training.tp)
    # V-shape placements run the last stage on the first stage's device: a tied head needs no copy
    shared = all(m[0] == m[-1] for m in schedule.placement.maps)
    sc = stage_costs(model, system.peak_flops, schedule.num_stages, training, head_with_embedding=shared)
    costs = sc.cost_model()
    costs = _labelled(costs, costs.time_unit, f"{costs.label} on {system.name}")
    folded = system_overhead(costs, schedule.placement, system)  # the runtime's per-action time, if stated
    return PresetContext(folded, system, system, model, sc, base_costs=costs)


__all__ = ["DEFAULT_MFU", "SETTINGS_FIELDS", "PresetContext", "PresetSettings", "resolve_presets", "settings_from"]
