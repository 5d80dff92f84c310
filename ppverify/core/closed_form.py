"""The value and the type of a family's closed form: :class:`Formula`, :class:`FormulaFn`, the kinds
of a claim (:data:`EXACT`, :data:`LOWER`, :data:`UPPER`) and the cost helpers every formula uses.

Each family writes its own formula in its own module of :mod:`ppverify.schedules` and passes it to
its ``Family`` (``formula=``); this module sits below the families so that they need nothing above
them. :mod:`ppverify.engines.formulas` evaluates a registered family's formula by name.

Units (ppverify's convention): costs are per device share (``--costs F=1,B=2``); ``costs=None`` means
the idealized table's unit slots (every op of a whole share lasts 1, I and W included). Activations
count one microbatch over a whole device share as 1. The bubble ratio uses ppverify's convention
:data:`ppverify.core.timeline.BUBBLE_CONVENTION` (idle/total per device, averaged); every family gives
each device the same busy time ``m * (tF + tB)`` (``m * (tF + tI + tW)`` with a split backward),
so ``bubble = 1 - busy / makespan``.

Memory model (the engines' and the verifier's, :meth:`ppverify.core.costs.CostModel.memory_delta`):
an ``F`` allocates its activation, a ``B`` frees it; with a split backward ``I`` frees the share
``freed_by_I`` of it and ``W`` the rest. ``costs`` may carry that share under the key
``"freed_by_I"`` (:func:`freed_by_I_of`; absent: 0, everything held until ``W``, the abstract
default); presets free part at ``I`` (:func:`freed_share`), and the formulas of split-backward
families whose peak depends on it take it into account.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Protocol

from .costs import CostModel, complete_costs
from .errors import ParameterError
from .exact import exact_fraction
from .timeline import BUBBLE_CONVENTION

EXACT, LOWER, UPPER = "exact", "lower bound", "upper bound"


@dataclass(frozen=True)
class Formula:
    """Closed-form prediction for one family at ``(p, m, costs, params)``.

    ``makespan_kind``/``peak_kind`` are ``"exact"``, ``"lower bound"`` or ``"upper bound"`` (the
    table's value is >= a lower bound); the bubble ratio has the makespan's kind. ``exact`` is
    True when both are exact. ``conditions`` says when the closed form is exact; ``source`` where
    it comes from.

    Example:
        >>> f = make_formula("gpipe", 8, 14, [4, 4, 4, 4], EXACT, EXACT, "any tF, tB", "GPipe")
        >>> f.makespan, round(f.bubble_ratio, 4), f.peak_activations, f.exact
        (14.0, 0.4286, (4.0, 4.0, 4.0, 4.0), True)
    """

    family: str
    makespan: float
    bubble_ratio: float
    peak_activations: tuple[float, ...]
    makespan_kind: str
    peak_kind: str
    conditions: str
    source: str
    bubble_convention: str = BUBBLE_CONVENTION

    @property
    def exact(self) -> bool:
        """True when makespan, bubble ratio and peaks are all exact."""
        return self.makespan_kind == EXACT and self.peak_kind == EXACT

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``peak_activations`` as a list, ``exact`` included).

        Example:
            >>> make_formula("x", 2, 3, [2, 1], EXACT, UPPER, "", "").to_dict()["peak_activations"]
            [2.0, 1.0]
        """
        out = asdict(self)
        out["peak_activations"] = list(self.peak_activations)
        out["exact"] = self.exact
        return out


class FormulaFn(Protocol):
    """The type of ``Family.formula``: ``formula(p, m, costs=None, **params) -> Formula``.

    ``costs`` are per-share durations (``None``: unit slots); ``params`` are the family's own
    parameters (its ``Param`` names), always passed by keyword, with the family's defaults filled
    in by ``Family.arguments``. Bad values raise :class:`ppverify.core.errors.ParameterError`.

    Example:
        >>> def constant(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
        ...     return make_formula("c", m, m + p - 1, [m] * p, EXACT, EXACT, "", "")
        >>> fn: FormulaFn = constant
        >>> fn(2, 3).makespan
        4.0
    """

    # ``*args: Any, **params: Any`` is the typing idiom for "whatever parameters follow" (mypy reads
    # it as ``...``), so each family's formula keeps its own precise keywords (``v: int = 2``)
    def __call__(
        self, p: int, m: int, costs: Mapping[str, float] | None = None, /, *args: Any, **params: Any
    ) -> Formula: ...


def costs_of(costs: Mapping[str, float] | None) -> dict[str, float]:
    """Per-share costs with every kind filled: unit slots (all 1) when ``costs`` is None, else
    :func:`ppverify.core.costs.complete_costs` (``B = I + W``; ``I = W = B/2``; ``B = 2F``).

    Example:
        >>> costs_of(None)
        {'F': 1.0, 'B': 1.0, 'I': 1.0, 'W': 1.0}
        >>> costs_of({"F": 1, "B": 2})["I"]
        1.0
    """
    if costs is None:
        return {"F": 1.0, "B": 1.0, "I": 1.0, "W": 1.0}
    return complete_costs(dict(costs))


#: the most a cost may move, relative to itself, when read as the rational it stands for
EXACT_COST_TOL = 1e-9


def exact_cost(kind: str, x: float) -> Fraction:
    """The rational a cost ``x`` of op kind ``kind`` stands for
    (:func:`ppverify.core.exact.exact_fraction`: relative to its size, so ``4e-7`` stays ``4e-7``
    where a denominator limited to 10**6 made it 0); a non-zero cost that would read as 0, or move
    by more than :data:`EXACT_COST_TOL` of itself, is refused.

    Example:
        >>> exact_cost("F", 0.1), exact_cost("F", 4e-7)
        (Fraction(1, 10), Fraction(1, 2500000))
        >>> exact_cost("B", float("nan"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=B=nan: a B cost must be a finite number, read exactly (it rounds to 0 or moves by more than 1e-09 of itself)
    """
    x = float(x)
    f = exact_fraction(x) if math.isfinite(x) else None
    # exact_fraction reads back as x itself, so this refuses only what could not be read at all
    if f is None or (x != 0 and (f == 0 or abs(float(f) - x) > EXACT_COST_TOL * abs(x))):
        raise ParameterError(
            "costs",
            f"{kind}={x!r}",
            f"a {kind} cost must be a finite number, read exactly (it rounds to 0 or moves by more than "
            f"{EXACT_COST_TOL:g} of itself)",
        )
    return f


def exact_costs(costs: Mapping[str, float] | None) -> dict[str, Fraction]:
    """:func:`costs_of` as exact fractions (:func:`exact_cost`: the rational each float stands for,
    relative to its size), so that formulas compare costs exactly (``tF == tI``) and round only
    their final figures.

    Example:
        >>> exact_costs({"F": 0.1, "B": 0.3})["I"]
        Fraction(3, 20)
        >>> exact_costs({"F": 4e-7, "B": 8e-7})["B"]  # 10**6 as denominator made F 0 and B 1e-6 before
        Fraction(1, 1250000)
    """
    return {k: exact_cost(k, v) for k, v in costs_of(costs).items()}


def freed_by_I_of(costs: Mapping[str, float] | None) -> Fraction:
    """The share of a microbatch's activation an ``I`` frees, from ``costs["freed_by_I"]`` (0 when
    absent or ``costs`` is None: ``W`` frees everything); a value outside [0, 1] is refused.

    Example:
        >>> freed_by_I_of(None), freed_by_I_of({"F": 1, "freed_by_I": 0.25})
        (Fraction(0, 1), Fraction(1, 4))
        >>> freed_by_I_of({"freed_by_I": 2})
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter freed_by_I=2: must be a fraction in [0, 1] (the share of an activation its I frees; W frees the rest)
    """
    value = 0.0 if costs is None else costs.get("freed_by_I", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not 0 <= value <= 1:
        raise ParameterError(
            "freed_by_I",
            value,
            "must be a fraction in [0, 1] (the share of an activation its I frees; W frees the rest)",
        )
    # the cost model reads the share the same way (exact_fraction): 1e-7 is not 0 there either
    return exact_fraction(value)


def freed_share(costs: CostModel) -> float:
    """The share of one microbatch's activation over a device share that the ``I`` ops free: each
    stage's ``freed_by_I`` weighted by its activation (the formulas' uniform stages; equal to the
    stages' common value when they all free the same share, as presets do).

    Example:
        >>> from ppverify.core.placement import linear
        >>> freed_share(CostModel.abstract(linear(2), F=1, I=1, W=1, freed_by_I=0.25))
        0.25
        >>> freed_share(CostModel.abstract(linear(2)))
        0.0
    """
    total = sum(costs.activation)
    if total <= 0:
        return 0.0
    return float(sum(a * f for a, f in zip(costs.activation, costs.freed_by_I)) / total)


def make_formula(
    family: str,
    busy: Fraction | int | float,
    makespan: Fraction | int | float,
    peaks: Sequence[Fraction | int | float],
    makespan_kind: str,
    peak_kind: str,
    conditions: str,
    source: str,
) -> Formula:
    """A :class:`Formula` from exact figures, rounded to floats only here: ``busy`` is one device's
    work, the bubble ratio ``1 - busy / makespan`` (0 for an empty makespan).

    Example:
        >>> f = make_formula("1f1b", 8, 14, [4, 3, 2, 1], EXACT, EXACT, "any tF, tB", "PipeDream-Flush")
        >>> f.makespan, f.bubble_ratio, f.peak_activations
        (14.0, 0.42857142857142855, (4.0, 3.0, 2.0, 1.0))
    """
    bubble = 1 - Fraction(busy) / Fraction(makespan) if makespan > 0 else Fraction(0)
    return Formula(
        family,
        float(makespan),
        float(bubble),
        tuple(float(x) for x in peaks),
        makespan_kind,
        peak_kind,
        conditions,
        source,
    )
