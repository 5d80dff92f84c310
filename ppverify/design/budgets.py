"""A design's budgets as caps, exactly: a budget (a float, in activations of one microbatch on a
device's share) stands for the cap ``--memory-cap`` reads the same number as, the exact rational
of the float (:func:`~ppverify.core.exact.exact_fraction`) times the exact unit. A peak is within
a budget when it is within that cap, exactly, as ``verify`` and ``optimize`` decide a cap: one byte
or one ulp over is over (docs/memory.md). Tolerances are for step times only.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.exact import exact_fraction


def budget_cap(budget: float, unit: float) -> Fraction | None:
    """The cap ``budget`` stands for in the cost model's memory unit (``unit``: one budget unit
    in it), exactly; None for an unconstrained budget (``inf``).

    Example:
        >>> budget_cap(1.9999999995, 1.0), budget_cap(1.5, 3.0), budget_cap(math.inf, 1.0)
        (Fraction(3999999999, 2000000000), Fraction(9, 2), None)
    """
    if math.isinf(budget):
        return None
    return exact_fraction(budget) * exact_fraction(unit)


def within_budget(held: Fraction, budget: float) -> bool:
    """Whether a peak of ``held`` (budget units, exactly) is within ``budget``: exactly, as
    ``verify`` holds a peak against ``--memory-cap`` (a peak of 2 is over 1.9999999995).

    Example:
        >>> within_budget(Fraction(2), 2.0), within_budget(Fraction(2), 1.9999999995), within_budget(Fraction(9), math.inf)
        (True, False, True)
    """
    return math.isinf(budget) or held <= exact_fraction(budget)


def budget_holding(held: Fraction) -> float:
    """The least budget (a float) whose cap holds ``held`` (budget units, exactly): the nearest
    float, or the next one up where that one reads below it. A budget made from a peak (``auto``,
    or a size such as ``17625128960B`` divided by the unit) then holds that peak, never a byte less.

    Example:
        >>> budget_holding(Fraction(2)), budget_holding(Fraction(8, 3))
        (2.0, 2.6666666666666665)
        >>> b = budget_holding(Fraction(17625128960, 6149513216))
        >>> within_budget(Fraction(17625128960, 6149513216), b), within_budget(Fraction(17625128961, 6149513216), b)
        (True, False)
    """
    b = float(held)
    while exact_fraction(b) < held:
        b = math.nextafter(b, math.inf)
    return b


def exact_held(peak: float, unit: float) -> Fraction:
    """A peak of ``peak`` (the cost model's unit, as a timeline gives it: the float nearest the
    exact sum) in budget units, exactly, read as ``verify`` reads every amount.

    Example:
        >>> exact_held(17625128960.0, 6149513216.0)
        Fraction(2151505, 750673)
    """
    return exact_fraction(peak) / exact_fraction(unit)
