"""What a design run explores: the placements (``linear,v,loop:2,...``), the memory budgets, the
costs and communication (abstract or presets) and the solver's limits, and the independent
placement x budget points it splits into.

Budgets count activations as the cost model does: one microbatch on a device's whole share of
layers is 1 (1F1B's first device peaks at ``p``; with v stages per device one stage's activation
is ``1/v``). With presets (bytes) a budget of 1 is one microbatch's bytes on a device's share,
and a budget may be given as a size (``40GiB``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.exact import exact_fraction
from ..core.placement import Placement, placement_from_text
from ..core.schedule import carrier
from ..systems.preset_models import PresetSettings, resolve_presets
from .budgets import budget_holding

#: the placements ``--placements`` accepts (``loop:V``, ``wave:W`` with their chunk counts)
PLACEMENT_NAMES = ("linear", "v", "loop:V", "wave:W", "bidirectional")
DEFAULT_PLACEMENTS = "linear,v,loop:2"
#: the placements that are another under a second name at every p
_ALIASES = {"loop:1": "linear", "wave:1": "v"}


@dataclass(frozen=True)
class Setup:
    """One placement with its cost and communication models; ``unit`` is one budget unit in the
    cost model's memory (1 in abstract units: one microbatch on a whole device share).

    Example:
        >>> s = setups("v", 2, 4, PresetSettings(costs="F=1,I=1,W=1"))[0]
        >>> s.label, s.unit, s.costs.activation
        ('v', 1.0, (0.5, 0.5, 0.5, 0.5))
    """

    label: str
    placement: Placement
    costs: CostModel
    comm: CommModel
    pipes: tuple[int, ...]
    unit: float

    def least_budget(self) -> float:
        """The least budget any schedule of this placement fits: a microbatch's activations on
        every stage a device holds of one pipe are live together (its forward reaches the device's
        last stage before the backward of its first), so a device needs their sum; running the
        microbatches one at a time needs no more.

        Example:
            >>> setups("loop:2", 2, 4, PresetSettings(costs="F=1,B=2"))[0].least_budget()
            1.0
        """
        pl, act = self.placement, [exact_fraction(a) for a in self.costs.activation]
        need = max(
            sum((act[s] for s, dd in enumerate(mp) if dd == d), Fraction(0)) for mp in pl.maps for d in range(pl.p)
        )
        # summed exactly: the least budget holds the need, as verify holds a cap (0.1 + 0.2 in floats is over 0.3)
        return budget_holding(need / exact_fraction(self.unit))

    def most_held(self) -> float:
        """The most any schedule of this placement can hold on a device: every microbatch's
        activations on every stage the device holds (of its pipe). A budget at or above it never
        binds: it is the unconstrained point.

        Example:
            >>> setups("linear", 2, 4, PresetSettings(costs="F=1,B=2"))[0].most_held()  # 4 microbatches
            4.0
            >>> setups("v", 2, 4, PresetSettings(costs="F=1,B=2"))[0].most_held()  # 2 stages of 0.5 each
            4.0
        """
        pl, act = self.placement, self.costs.activation
        share = [[sum(act[s] for s, dd in enumerate(mp) if dd == d) for d in range(pl.p)] for mp in pl.maps]
        return max(sum(share[pipe][d] for pipe in self.pipes) for d in range(pl.p)) / self.unit


def parse_placement(text: str, p: int) -> tuple[str, Placement]:
    """``(label, placement)`` for one item of ``--placements``: ``linear``, ``v``, ``loop:V``,
    ``wave:W`` or ``bidirectional``.

    Example:
        >>> parse_placement("loop:3", 2)[1].num_stages
        6
        >>> parse_placement("loop:x", 2)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter placements=loop:x: loop:V needs a whole number of chunks V >= 1 (e.g. loop:2)
    """
    name, _, arg = text.strip().lower().partition(":")
    if name in ("loop", "wave"):
        what = "V" if name == "loop" else "W"
        if not arg.isdigit() or int(arg) < 1:
            raise ParameterError(
                "placements", text, f"{name}:{what} needs a whole number of chunks {what} >= 1 (e.g. {name}:2)"
            )
        k = int(arg)
        pl = placement_from_text(name, p, v=k) if name == "loop" else placement_from_text(name, p, waves=k)
        return f"{name}:{k}", pl
    if arg or name not in ("linear", "v", "bidirectional"):
        raise ParameterError("placements", text, f"expected one of {', '.join(PLACEMENT_NAMES)}")
    return name, placement_from_text(name, p)


def design_unit(costs: CostModel, placement: Placement, settings: PresetSettings, m: int) -> float:
    """One budget unit in ``costs``' memory unit. Abstract costs: one microbatch on a device's
    whole share (``M_F`` over the share one stage is). Presets count bytes: every placement takes
    one common unit, the bytes of a linear pipeline's largest stage with the model's layers split
    evenly, also under ``--layers-per-stage`` (what ``--memory-cap`` reads a plain number as on any
    placement while the layers split evenly: a device's stages hold the same layers and logits):
    the same budget is then the same bytes on every placement, and peaks compare like for like.

    Example:
        >>> from ppverify.core.placement import linear, v_shape
        >>> s = PresetSettings(system="dgx-h100", model="gpt3-1.3b")
        >>> costs = lambda pl: resolve_presets(s, carrier(pl, 8)).costs
        >>> design_unit(costs(v_shape(4)), v_shape(4), s, 8) == design_unit(costs(linear(4)), linear(4), s, 8)
        True
        >>> max(costs(v_shape(4)).activation) * 2 > design_unit(costs(linear(4)), linear(4), s, 8)
        True
        >>> from ppverify.core.memory_unit import activation_unit
        >>> activation_unit(costs(v_shape(4)), v_shape(4)) == design_unit(costs(v_shape(4)), v_shape(4), s, 8)
        True
    """
    from dataclasses import replace

    from ..core.memory_unit import activation_unit
    from ..core.placement import linear

    if costs.memory_unit != "bytes":
        return activation_unit(costs, placement)
    ref = linear(placement.p)
    empty = carrier(ref, m)
    # the model's layers split evenly, whatever --layers-per-stage says: the same budget is then the
    # same bytes with or without it (and its counts, one per stage, need not fit p stages)
    even = replace(settings, layers_per_stage=None)
    return activation_unit(resolve_presets(even, empty).costs, ref)


def stage_split(settings: PresetSettings) -> int | None:
    """How many stages ``--layers-per-stage`` splits the model into (None: not given, or abstract
    costs, which refuse it, or counts that are no integers, which the presets refuse).

    Example:
        >>> stage_split(PresetSettings(system="dgx-h100", model="gpt3-1.3b", layers_per_stage="6,6,6,6"))
        4
        >>> stage_split(PresetSettings(costs="F=1,B=2")) is None
        True
    """
    lps = settings.layers_per_stage
    if lps is None or settings.model is None or lps == "":
        return None
    items = lps.split(",") if isinstance(lps, str) else list(lps)
    try:
        [int(x) for x in items]
    except (TypeError, ValueError):
        return None
    return len(items)


def model_options(settings: PresetSettings) -> dict[str, Any]:
    """The model and system options given beside the presets (``--mfu``, ``--tp``,
    ``--layers-per-stage``...), those that change the durations or bytes: a design's JSON records
    them, so that it is read back (``report --from design.json``) under the same costs.

    Example:
        >>> model_options(PresetSettings(system="dgx-h100", model="gpt3-1.3b", mfu=0.2, layers_per_stage=(6, 6, 6, 6)))
        {'mfu': 0.2, 'layers_per_stage': '6,6,6,6'}
        >>> model_options(PresetSettings(costs="F=1,B=2"))
        {}
    """
    from ..systems.preset_models import MODEL_OPTIONS

    out: dict[str, Any] = {}
    for name, neutral in (*MODEL_OPTIONS, ("ranks_per_node", None)):
        value = getattr(settings, name)
        if value is None or value == neutral or value == "":
            continue
        if name == "layers_per_stage" and not isinstance(value, str):
            value = ",".join(str(x) for x in value)
        out[name] = value
    return out


def setups(placements: str, p: int, m: int, settings: PresetSettings) -> tuple[Setup, ...]:
    """The placements of ``--placements`` (comma separated), each with its costs and communication.
    A placement that does not fit ``p`` or ``m`` is refused in one line (a two-pipe placement needs
    an even p and ``m >= 2``).

    Example:
        >>> [s.label for s in setups("linear, v", 2, 4, PresetSettings())]
        ['linear', 'v']
        >>> setups("bidirectional", 3, 4, PresetSettings())
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter placements=bidirectional: needs an even p (p=3)
        >>> setups("linear,loop:1", 2, 4, PresetSettings())
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter placements=linear,loop:1: linear and loop:1 are one placement (the same stages on the same devices): name it once
        >>> setups("linear,v", 4, 8, PresetSettings(system="dgx-h100", model="gpt3-1.3b", layers_per_stage="6,6,6,6"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter layers-per-stage=6,6,6,6: gives 4 stages, but v has 8 at p=4 (one count per stage of every searched placement): search placements of 4 stages, or give 8 counts
    """
    from ..optimize.problem import default_pipes

    items = [t for t in str(placements).split(",") if t.strip()]
    if not items:
        raise ParameterError("placements", placements, "name at least one placement")
    out: list[Setup] = []
    for text in items:
        label, pl = parse_placement(text, p)
        if label in (s.label for s in out):
            raise ParameterError("placements", placements, f"{label} is named twice")
        # loop:1 is linear and wave:1 is v at every p: the same points searched twice under two
        # names (v and loop:2 coincide at p = 1 only, where the default lists both: kept)
        same = [s.label for s in out if _ALIASES.get(s.label, s.label) == _ALIASES.get(label, label)]
        if same:
            raise ParameterError(
                "placements",
                placements,
                f"{same[0]} and {label} are one placement (the same stages on the same devices): name it once",
            )
        split = stage_split(settings)
        if split is not None and pl.num_stages != split:
            raise ParameterError(
                "layers-per-stage",
                settings.layers_per_stage,
                f"gives {split} stages, but {label} has {pl.num_stages} at p={p} (one count per stage of every "
                f"searched placement): search placements of {split} stages, or give {pl.num_stages} counts",
            )
        if pl.num_pipes == 2 and (p % 2 or m < 2):
            rule = f"needs an even p (p={p})" if p % 2 else f"needs m >= 2 (m={m})"
            raise ParameterError("placements", text.strip(), rule)
        pipes = default_pipes(pl, m)
        ctx = resolve_presets(settings, carrier(pl, m, pipes))
        unit = design_unit(ctx.costs, pl, settings, m)
        out.append(Setup(label, pl, ctx.costs, ctx.comm, pipes, float(unit)))
    return tuple(out)


@dataclass(frozen=True)
class Limits:
    """The solver's limits: ``work`` is CP-SAT's deterministic time per point (the same result at
    any machine load), ``wall`` a safety stop per point far above it, ``gap`` the relative gap that
    ends a point early (None: search to the work limit), ``ceiling`` the wall-clock seconds of the
    whole run (``--time-limit``; None: none): points not started by then are not run, and a point
    running then stops with what it has (see :func:`~ppverify.optimize.solver_run.run_limits`).

    Example:
        >>> Limits(5.0).wall, Limits(20.0).wall
        (900.0, 2000.0)
    """

    work: float = 10.0
    gap: float | None = 0.01
    seed: int = 0
    ceiling: float | None = None
    #: deterministic seconds for each frontier point's bound after the points (:mod:`.tighten`);
    #: None: as ``work``, 0: none
    bound_work: float | None = None
    #: deterministic seconds of a second search of each frontier point still above the gap limit
    #: after the points (:mod:`.deepen`); 0: none. 30 by default: it brings the goal runs within their
    #: gaps (docs/design.md) and costs nothing where every frontier point is within the gap already
    search_work: float = 30.0
    #: deterministic seconds of the two-device relaxation in each frontier point's bound work
    #: (:func:`~ppverify.optimize.floored.critical_bound`), after the critical device's; 0: none.
    #: 30 by default: devices 2 and 3 of V at p = 4 prove the profiled rows' points at V-Min's
    #: peak within 1 % given about 20 (docs/design.md)
    pair_work: float = 30.0

    def __post_init__(self) -> None:
        """Refuse what the command line refuses (``--work-limit``: > 0 and at most 1e9
        deterministic seconds; the other works >= 0; a gap >= 0; a ceiling > 0): a negative or NaN
        limit would otherwise run a design that stops at once or never.

        Example:
            >>> Limits(-1)
            Traceback (most recent call last):
            ...
            ppverify.core.errors.ParameterError: parameter work=-1: must be > 0 and at most 1e9 deterministic seconds
        """

        def real(x: Any) -> bool:
            return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)

        if not real(self.work) or not 0 < self.work <= 1e9:
            raise ParameterError("work", self.work, "must be > 0 and at most 1e9 deterministic seconds")
        for name in ("bound_work", "search_work", "pair_work"):
            x = getattr(self, name)
            if not (x is None and name == "bound_work") and (not real(x) or not 0 <= x <= 1e9):
                raise ParameterError(name, x, "must be >= 0 and at most 1e9 deterministic seconds (0: none)")
        if self.gap is not None and (not real(self.gap) or not 0 <= self.gap < math.inf):
            raise ParameterError(
                "gap", self.gap, "must be a finite relative gap >= 0 (or None: search to the work limit)"
            )
        if self.ceiling is not None and (not real(self.ceiling) or not self.ceiling > 0):
            raise ParameterError("ceiling", self.ceiling, "must be > 0 seconds (or None: no ceiling)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ParameterError("seed", self.seed, "must be an integer")

    @property
    def tighten_work(self) -> float:
        """The work of :mod:`~ppverify.design.tighten` per frontier point (``bound_work``, else
        ``work``).

        Example:
            >>> Limits(5.0).tighten_work, Limits(5.0, bound_work=0).tighten_work
            (5.0, 0.0)
        """
        return float(self.work if self.bound_work is None else self.bound_work)

    @property
    def wall(self) -> float:
        """The wall-clock stop: a hundred times the work, at least 15 minutes (optimize's phases
        stop at shares of it, so it must never bite on a loaded machine: the work limit decides)."""
        return max(900.0, 100.0 * self.work)


@dataclass(frozen=True)
class Task:
    """One point: a placement's setup, a budget (``inf``: unconstrained), the limits, whether
    the backward is split into I and W, ``until``: the run's wall-clock ceiling
    (``--time-limit``) as a ``time.time()`` instant (None: no ceiling but :attr:`Limits.wall`),
    and ``beat``: the fastest step already found within this budget and what found it (a point
    of an earlier placement, or a family of a searched placement; :func:`~.run.incumbent`),
    which a point whose bound is no faster does not search for (None: search); ``search_only``:
    all the work on schedules, none on the one-device relaxation's bound (the second searches of
    :mod:`.deepen`); ``bound_only``: no search, all the work on the critical device's relaxation, then
    on that device with its neighbour (the bound work of :mod:`.tighten`)."""

    index: int
    setup: Setup
    budget: float
    m: int
    limits: Limits
    split: bool = True
    until: float | None = None
    beat: tuple[float, str] | None = None
    search_only: bool = False
    bound_only: bool = False
