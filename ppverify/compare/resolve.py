"""The models one comparison point runs on: the schedule of an entry (:func:`build_entry`) and the
cost and communication models of a configuration for its placement (:func:`resolve`, through
:func:`ppverify.systems.preset_models.resolve_presets` for system and model presets)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.comm import CommModel, FixedDelay
from ..core.costs import CostModel, complete_costs
from ..core.schedule import Schedule
from ..systems.preset_models import SETTINGS_FIELDS, PresetSettings, resolve_presets
from ..systems.system import link_delay_of
from .config import Config, ScheduleEntry


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
    #: the ops' own durations before a system preset's runtime overhead was folded into ``costs``
    #: (what a measured run sleeps: the runtime adds its overhead by itself); None: ``costs``
    own_costs: CostModel | None = None

    @property
    def link_delay(self) -> float:
        """The fixed delay per transfer a measured run emulates (seconds): a system preset's
        ``runtime.link_delay_us``, 0 otherwise (an abstract delay is in units: the caller scales it).

        Example:
            >>> from ppverify.schedules import build
            >>> resolve(Config(2, 2, costs=(("F", 1.0),)), build("gpipe", p=2, m=2)).link_delay
            0.0
        """
        return link_delay_of(self.comm)


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
    ctx = resolve_presets(preset_settings(config), schedule)
    return Resolved(
        ctx.costs,
        ctx.comm,
        share_costs(ctx.costs, placement.p),
        activation_share(ctx.costs, placement.p),
        own_costs=ctx.base_costs,
    )


def preset_settings(config: Config) -> PresetSettings:
    """The preset settings of a configuration (``config.options`` may set ``mfu``,
    ``microbatch_size``, ``seq_len``, ``tp`` ...; names that are no preset setting are ignored).

    Example:
        >>> from ppverify.compare.config import Config
        >>> st = preset_settings(Config(4, 4, "dgx-h100", "gpt3-13b", options=(("mfu", 0.5),)))
        >>> st.system, st.model, st.mfu, st.costs
        ('dgx-h100', 'gpt3-13b', 0.5, None)
    """
    given = {k: v for k, v in config.options if k in SETTINGS_FIELDS}
    return replace(PresetSettings(system=config.system, model=config.model), **given)


def share_costs(costs: CostModel, p: int) -> dict[str, float]:
    """Per-device-share durations: the whole model's op time of each kind over ``p`` devices
    (one pipe's stages cover the model once).

    Example:
        >>> from ppverify.core.placement import loop
        >>> share_costs(CostModel.abstract(loop(2, 2), F=1, B=2), 2)
        {'F': 1.0, 'B': 2.0, 'I': 1.0, 'W': 1.0}
    """
    return {k: float(sum(costs.duration[k])) / p for k in ("F", "B", "I", "W")}


def activation_share(costs: CostModel, p: int) -> float:
    """Activation memory of one microbatch over one device share.

    Example:
        >>> from ppverify.core.placement import wave
        >>> activation_share(CostModel.abstract(wave(2, 1)), 2)
        1.0
    """
    return float(sum(costs.activation)) / p


def build_entry(entry: ScheduleEntry, p: int, m: int) -> Schedule:
    """Build the schedule of an entry (raises ParameterError outside the family's rules); a file
    entry loads its schedule, which applies only to its own p and m.

    Example:
        >>> build_entry(ScheduleEntry("gpipe", "gpipe"), 2, 3).describe()
        'gpipe p=2 m=3'
    """
    from ..core.errors import ParameterError
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


__all__ = ["Resolved", "activation_share", "build_entry", "preset_settings", "resolve", "share_costs"]
