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

from collections.abc import Mapping
from typing import Any

from ..core.closed_form import EXACT, LOWER, UPPER, Formula, FormulaFn, costs_of, exact_costs
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
    if fam.formula is None:
        return None
    return fam.formula(p, m, costs, **fam.arguments(params))
