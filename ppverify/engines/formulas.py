"""Closed forms by family name: :func:`formula_for` evaluates a registered family's formula.

Each family owns its formula: it is written in the family's own module of :mod:`ppverify.schedules`
(``gpipe_formula`` in ``schedules/gpipe.py``, ...) and passed to its ``Family`` as ``formula=``, a
:class:`ppverify.core.closed_form.FormulaFn` returning a :class:`ppverify.core.closed_form.Formula`. This
module sits above the families (it imports them, they never import it) and re-exports the value
type, the kinds and the built-in families' formulas under the names they have always had here.

Units and the bubble convention are stated in :mod:`ppverify.core.closed_form`. Each :class:`Formula`
says whether its makespan and its peaks are exact for the ``slot`` engine's table or a bound, and
in which direction (a lower bound on the makespan is also a lower bound on the bubble ratio).
Derivations are in each formula's docstring; tests compare every exact claim with the table over
p in 2..16, m in 1..64. A system's runtime overhead (:mod:`ppverify.core.overhead`) reaches the formulas
through the per-share costs they are given, averaged over a share's stages (exact for the
per-action part, the mean for the per-transfer part, which differs by stage).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from typing import Any

from ..core.closed_form import EXACT, LOWER, UPPER, Formula, FormulaFn, costs_of, exact_costs
from ..core.errors import ParameterError
from ..core.ops import KINDS
from ..schedules import get_family
from ..schedules.chimera import chimera_asym_formula, chimera_formula
from ..schedules.gpipe import gpipe_formula
from ..schedules.hanayo import hanayo_formula
from ..schedules.interleaved import interleaved_formula
from ..schedules.one_f_one_b import one_f_one_b_formula
from ..schedules.one_f_one_b_split import one_f_one_b_split_formula

__all__ = [
    "EXACT",
    "LOWER",
    "UPPER",
    "Formula",
    "FormulaFn",
    "chimera_asym_formula",
    "chimera_formula",
    "costs_of",
    "exact_costs",
    "formula_for",
    "gpipe_formula",
    "hanayo_formula",
    "interleaved_formula",
    "one_f_one_b_formula",
    "one_f_one_b_split_formula",
]


def formula_for(family: str, p: int, m: int, costs: Mapping[str, float] | None = None, **params: Any) -> Formula | None:
    """The formula of a registered family (``None`` when it has none); ``None`` params take defaults.

    Example:
        >>> formula_for("interleaved-1f1b", 4, 8, {"F": 1, "B": 1}, v=2).makespan
        19.0
        >>> formula_for("gpipe", 4, 4).makespan
        14.0
    """
    fam = get_family(family)
    _check_costs(costs)
    if fam.formula is None:
        return None
    return fam.formula(p, m, costs, **fam.arguments(params))


def _check_costs(costs: Mapping[str, float] | None) -> None:
    """Refuse costs a formula would misread: not a mapping, a kind other than F, B, I, W (it
    would be ignored; ``freed_by_I``, the share of an activation an ``I`` frees, is read by
    :func:`~ppverify.core.closed_form.freed_by_I_of`), or a value that is no finite real number >= 0
    (``"3"`` would be read as 3).

    Example:
        >>> _check_costs({"F": 1, "B": 2.5})
        >>> _check_costs({"X": 1})
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=X: not an op kind; the kinds are F, B, I, W (and freed_by_I, a share)
        >>> _check_costs({"F": "3"})
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=F='3': must be a finite number >= 0, not a str
    """
    if costs is None:
        return
    if not isinstance(costs, Mapping):
        raise ParameterError("costs", repr(costs)[:60], "must be a mapping of op kind to cost ({'F': 1, 'B': 2})")
    for kind, value in costs.items():
        if kind == "freed_by_I":  # the share an I frees (closed_form.freed_by_I_of checks it)
            continue
        if kind not in KINDS:
            raise ParameterError(
                "costs", kind, f"not an op kind; the kinds are {', '.join(KINDS)} (and freed_by_I, a share)"
            )
        number = isinstance(value, Real) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < 0:
            kind_of = "" if number else f", not a {type(value).__name__}"
            raise ParameterError("costs", f"{kind}={value!r}", f"must be a finite number >= 0{kind_of}")
