"""Cost models: how long each op takes, what it holds in memory, and how many bytes cross a stage
boundary.

Abstract experiments (``--costs F=1,B=2``) give costs per *device share* (ppverify's unit convention): a stage
op costs ``value * p / S`` (1/v for interleaved, 1/(2W) for Hanayo, 1 for Chimera's replicas), and
one microbatch's activations over a whole device share count 1. Presets (``ppverify.systems.presets``)
build cost models in seconds and bytes from an LLM and a system.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from .errors import ParameterError
from .exact import exact_fraction
from .limits import MAX_NUMBER
from .ops import KINDS, B, F, I, Op, W
from .placement import Placement


@dataclass(frozen=True)
class CostModel:
    """Per-stage durations, activation memory and boundary transfer sizes.

    * ``duration[kind][stage]``: time of one op (all four kinds are always filled; ``B = I + W``).
    * ``activation[stage]``: memory an ``F`` allocates at its start, held until its backward ends.
    * ``freed_by_I[stage]``: fraction of it the ``I`` frees at its end; ``W`` frees the rest.
    * ``boundary_bytes[s]``: bytes sent between stage s and s+1 (activation forward and gradient
      backward have the same size); ``S-1`` entries.
    * ``weight_bytes[stage]``: parameters + gradients + optimizer state held by one stage replica.
    * ``overlap``: an overlapped F&B slot lasts ``overlap * (sum of its ops)``.
    * ``time_unit``/``memory_unit``: labels for display ("units"/"s", "activations"/"bytes").

    Example:
        >>> from ppverify.core.placement import loop
        >>> c = CostModel.abstract(loop(2, 2), F=1, B=2)
        >>> c.op_duration(Op("B", 3, 0)), c.activation[0]
        (1.0, 0.5)
    """

    duration: Mapping[str, tuple[float, ...]]
    activation: tuple[float, ...]
    freed_by_I: tuple[float, ...]
    boundary_bytes: tuple[float, ...]
    weight_bytes: tuple[float, ...]
    overlap: float = 1.0
    time_unit: str = "units"
    memory_unit: str = "activations"
    label: str = ""
    extra: Mapping[str, float] = field(default_factory=dict)

    @property
    def num_stages(self) -> int:
        """Number of stages described."""
        return len(self.activation)

    def op_duration(self, op: Op) -> float:
        """Duration of one op."""
        return self.duration[op.kind][op.stage]

    def memory_delta(self, op: Op) -> tuple[float, float]:
        """``(allocated at start, freed at end)`` of an op.

        Example:
            >>> from ppverify.core.placement import linear
            >>> c = CostModel.abstract(linear(2), F=1, I=1, W=1, freed_by_I=0.25)
            >>> c.memory_delta(Op("F", 0, 0)), c.memory_delta(Op("I", 0, 0)), c.memory_delta(Op("W", 0, 0))
            ((1.0, 0.0), (0.0, 0.25), (0.0, 0.75))
        """
        a = self.activation[op.stage]
        if op.kind == F:
            return (a, 0.0)
        if op.kind == B:
            return (0.0, a)
        frac = self.freed_by_I[op.stage]
        return (0.0, a * frac) if op.kind == I else (0.0, a * (1.0 - frac))

    @staticmethod
    def unit(placement: Placement) -> CostModel:
        """Every op, whatever its kind, lasts one slot per device share: the idealized table's
        default (``F = B = I = W = 1``; I and W here are slots, not halves of B).

        Example:
            >>> from ppverify.core.placement import linear
            >>> CostModel.unit(linear(2)).duration["W"]
            (1.0, 1.0)
        """
        share, S = placement.share_per_stage, placement.num_stages
        return CostModel(
            duration={k: (share,) * S for k in KINDS},
            activation=(share,) * S,
            freed_by_I=(0.0,) * S,
            boundary_bytes=(0.0,) * max(S - 1, 0),
            weight_bytes=(0.0,) * S,
            label="unit",
        )

    @staticmethod
    def abstract(
        placement: Placement,
        F: float = 1.0,
        B: float | None = None,
        I: float | None = None,
        W: float | None = None,
        freed_by_I: float = 0.0,
        overlap: float = 1.0,
    ) -> CostModel:
        """Uniform abstract costs per device share, scaled to one stage by ``p / S``.

        Missing kinds are derived: ``B = I + W``; when only ``B`` is given ``I = W = B/2``;
        default ``B = 2F``. ``freed_by_I`` is the fraction of a stage's activations its ``I``
        frees (``W`` frees the rest); an overlapped F&B slot lasts ``overlap`` times its ops' sum.

        Example:
            >>> from ppverify.core.placement import linear
            >>> CostModel.abstract(linear(2), F=1, I=1, W=1).duration["B"]
            (2.0, 2.0)
        """
        costs = complete_costs({"F": F, "B": B, "I": I, "W": W})
        share = placement.share_per_stage
        S = placement.num_stages
        if not 0.0 <= freed_by_I <= 1.0:
            raise ParameterError("freed_by_I", freed_by_I, "must be a fraction in [0, 1]")
        # a stage's cost is the float of the exact product: 18.522 / 3 in floats is
        # 6.1739999999999995, which reads back as itself, not as the 6.174 the costs mean
        exact_share = Fraction(placement.p, S)
        return CostModel(
            duration={k: (float(exact_fraction(costs[k]) * exact_share),) * S for k in KINDS},
            activation=(share,) * S,
            freed_by_I=(freed_by_I,) * S,
            boundary_bytes=(0.0,) * max(S - 1, 0),
            weight_bytes=(0.0,) * S,
            overlap=overlap,
            label=",".join(f"{k}={number_text(costs[k])}" for k in KINDS),
        )


def in_seconds(costs: CostModel, scale: float) -> CostModel:
    """``costs`` with every duration times ``scale`` and counted in seconds (abstract units slept
    or compared at ``scale`` seconds each).

    Example:
        >>> from ppverify.core.placement import linear
        >>> in_seconds(CostModel.abstract(linear(1), F=1, B=2), 0.01).duration["B"]
        (0.02,)
    """
    return replace(costs, duration={k: tuple(x * scale for x in v) for k, v in costs.duration.items()}, time_unit="s")


def number_text(x: float) -> str:
    """A cost or delay as text that reads back as the same float: whole numbers without ``.0``,
    others as Python's shortest repr (a number shown rounded would name another model). For the
    numbers every reader admits (at most :data:`~ppverify.core.limits.MAX_NUMBER`), the shortest.

    Example:
        >>> number_text(2.0), number_text(0.5), number_text(1e-07), number_text(18.522 / 3)
        ('2', '0.5', '1e-07', '6.1739999999999995')
    """
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def costs_text(given: Mapping[str, float | None] | Iterable[tuple[str, float]]) -> str:
    """The kinds given (a mapping or ``(kind, cost)`` pairs), as ``--costs`` spells them: an error
    quotes what was typed, not a dict or tuple of every kind.

    Example:
        >>> costs_text({"F": 1.0, "B": None, "I": 0.5}), costs_text((("F", 2.0),))
        ('F=1,I=0.5', 'F=2')
    """
    pairs = given.items() if isinstance(given, Mapping) else given
    return ",".join(f"{k}={number_text(float(v))}" for k, v in pairs if v is not None)


def complete_costs(given: Mapping[str, float | None]) -> dict[str, float]:
    """Fill in missing kinds: ``B = I + W``; ``I = W = B/2``; default ``F = 1``, ``B = 2F``.

    Example:
        >>> complete_costs({"F": 1, "B": 2})
        {'F': 1.0, 'B': 2.0, 'I': 1.0, 'W': 1.0}
        >>> complete_costs({"F": 1, "I": 1, "W": 0.5})
        {'F': 1.0, 'B': 1.5, 'I': 1.0, 'W': 0.5}
        >>> complete_costs({"I": 0.1, "W": 1e-7})["B"], complete_costs({"B": 0.7, "W": 0.1})["I"]
        (0.1000001, 0.6)
    """
    for k, v in given.items():  # inf or NaN: no duration (and no exact rational to time it by)
        if v is not None and not math.isfinite(float(v)):
            raise ParameterError("costs", f"{k}={v}", "every op duration must be a finite number > 0")
    f = given.get("F")
    b, i, w = given.get("B"), given.get("I"), given.get("W")
    f = 1.0 if f is None else float(f)
    # a derived kind is the float of the exact sum or difference, which reads back as it: the
    # float sum 0.1 + 1e-7 is 0.10000010000000001, a longer B than the verifier's I + W
    if (i is None) != (w is None):
        if b is None:
            raise ParameterError("costs", costs_text(given), "give both I and W, or B")
        if i is None and w is not None:
            i = float(exact_fraction(b) - exact_fraction(w))
        elif w is None and i is not None:
            w = float(exact_fraction(b) - exact_fraction(i))
    if i is not None and w is not None:
        b = float(exact_fraction(i) + exact_fraction(w)) if b is None else b
        if abs(float(b) - float(i) - float(w)) > 1e-9:
            raise ParameterError("costs", costs_text(given), "B must equal I + W")
    b = 2.0 * f if b is None else float(b)
    i = b / 2 if i is None else float(i)
    w = b / 2 if w is None else float(w)
    out = {"F": f, "B": b, "I": i, "W": w}
    for k, v in out.items():
        if not (v > 0 and math.isfinite(v)):  # 2 * 1e308 is inf too
            raise ParameterError("costs", f"{k}={v}", "every op duration must be a finite number > 0")
    return out


def parse_costs(text: str) -> dict[str, float]:
    """Parse ``F=1,B=2`` (keys among F, B, I, W, each at most once) into a dict; missing kinds are
    not filled in.

    Example:
        >>> parse_costs("F=1,B=2")
        {'F': 1.0, 'B': 2.0}
        >>> parse_costs("F=1,X=2")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=F=1,X=2: unknown kind 'X'; expected KIND=NUMBER pairs with KIND in F, B, I, W, e.g. F=1,B=2
        >>> parse_costs("F=1,b=3,B=2")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=F=1,b=3,B=2: B is given twice; give each kind once
    """
    out: dict[str, float] = {}
    rule = "expected KIND=NUMBER pairs with KIND in F, B, I, W, e.g. F=1,B=2"
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        key = key.strip().upper()
        if not sep:
            raise ParameterError("costs", text, f"{part!r} has no '='; {rule}")
        if key not in KINDS:
            raise ParameterError("costs", text, f"unknown kind {key!r}; {rule}")
        try:
            num = float(val)
        except ValueError:
            raise ParameterError("costs", text, f"{val.strip()!r} is not a number; {rule}") from None
        if not num > 0 or not math.isfinite(num) or num > MAX_NUMBER:
            raise ParameterError("costs", text, f"{key} must be > 0, finite and at most {MAX_NUMBER:g}")
        if key in out:  # F=1,F=2 would otherwise be read as F=2 without a word
            raise ParameterError("costs", text, f"{key} is given twice; give each kind once")
        out[key] = num
    if not out:
        raise ParameterError("costs", text, rule)
    return out


def exact_memory_deltas(costs: CostModel) -> dict[tuple[str, int], tuple[Fraction, Fraction]]:
    """``(allocated at start, freed at end)`` of each (kind, stage), as exact rationals:
    :meth:`CostModel.memory_delta` read exactly. ``I`` frees ``a * f`` and ``W`` ``a * (1 - f)`` of
    the exact activation ``a`` and fraction ``f``, so the two free all of it; reading the floats
    ``a * f`` and ``a * (1 - f)`` one by one would leave a residue (a preset's zero-bubble split
    left device 0 of ``zbv -p 2 -m 4`` over a cap of its own peak).

    Example:
        >>> from ppverify.core.placement import linear
        >>> c = CostModel.abstract(linear(1), F=1, I=1, W=1, freed_by_I=0.3)
        >>> d = exact_memory_deltas(c)
        >>> d[("F", 0)], d[("I", 0)], d[("W", 0)]
        ((Fraction(1, 1), Fraction(0, 1)), (Fraction(0, 1), Fraction(3, 10)), (Fraction(0, 1), Fraction(7, 10)))
    """
    return dict(_exact_deltas(tuple(costs.activation), tuple(costs.freed_by_I)))


def scaled_memory_deltas(
    costs: CostModel, keys: Iterable[tuple[str, int]] | None = None, extra: Iterable[Fraction] = ()
) -> tuple[int, dict[tuple[str, int], tuple[int, int]]]:
    """:func:`exact_memory_deltas` of ``keys`` (every (kind, stage) by default) as integers of one
    unit, ``1 / scale``: ``(scale, {key: (allocated, freed)})``, ``scale`` the common denominator of
    those amounts and of the ``extra`` ones (a cap the levels are held against). Integer sums of
    them are exact, which is how the verifier and the timelines' peaks count memory.

    Example:
        >>> from ppverify.core.placement import linear
        >>> c = CostModel.abstract(linear(1), F=1, I=1, W=1, freed_by_I=0.3)
        >>> scaled_memory_deltas(c, [("F", 0), ("I", 0), ("W", 0)], [Fraction(1, 4)])
        (20, {('F', 0): (20, 0), ('I', 0): (0, 6), ('W', 0): (0, 14)})
    """
    table = exact_memory_deltas(costs)
    keys = list(table if keys is None else keys)
    extra = list(extra)
    scale = math.lcm(*(x.denominator for key in keys for x in table[key]), *(x.denominator for x in extra))
    return scale, {key: (int(table[key][0] * scale), int(table[key][1] * scale)) for key in keys}


@functools.lru_cache(maxsize=256)
def _exact_deltas(
    activation: tuple[float, ...], freed_by_I: tuple[float, ...]
) -> tuple[tuple[tuple[str, int], tuple[Fraction, Fraction]], ...]:
    # cached: every timeline's peaks read them (a sweep times thousands of one cost model's)
    zero = Fraction(0)
    out: list[tuple[tuple[str, int], tuple[Fraction, Fraction]]] = []
    for st, (x, fx) in enumerate(zip(activation, freed_by_I)):
        a, f = exact_fraction(x), exact_fraction(fx)
        out += [((F, st), (a, zero)), ((B, st), (zero, a)), ((I, st), (zero, a * f)), ((W, st), (zero, a - a * f))]
    return tuple(out)
