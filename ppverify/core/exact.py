"""The rational an amount (a duration, delay, activation, cap or bound) stands for.

A core module at the bottom floor (no solver imports, no cost model): the verifier (:mod:`ppverify.verify.smt` re-exports it) and the
optimizer's integer ticks (:mod:`ppverify.optimize.problem`) read every float the same way, so a
schedule the optimizer times exactly verifies at the makespan and cap it reports.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction


def exact_fraction(x: float) -> Fraction:
    """The rational a cost, cap or bound stands for, never another number, among those that read
    back as the float ``x`` itself:

    * the shortest decimal of ``x`` (``repr``) when it has at most 15 significant digits, which
      every decimal a person writes does: ``0.1`` is 1/10, ``1e-7`` is 10**-7, ``1.0000004`` is
      10000004/10**7, ``10000001.1000001`` is that decimal;
    * else the fraction of denominator at most 10**6 nearest to ``x`` when it reads back as ``x``:
      a share made by a division (``1/11`` prints as ``0.09090909090909091``, above the quotient,
      and eleven of those would exceed a cap of 1) is 1/11, as the optimizer counts it;
    * else the shortest decimal (a float computed from presets: all 17 digits).

    A plain ``limit_denominator(10**6)`` (used before) rounded ``1e-7`` to 0 and ``1.0000004`` to
    1, so proofs and optima were about other numbers.

    Example:
        >>> exact_fraction(0.1), exact_fraction(1 / 11), exact_fraction(1e-7)
        (Fraction(1, 10), Fraction(1, 11), Fraction(1, 10000000))
        >>> 3 * (exact_fraction(1.0000004) + 1) == exact_fraction(6.0000012)
        True
        >>> exact_fraction(10000001.1000001) == Fraction("10000001.1000001")
        True
    """
    x = float(x)
    if not math.isfinite(x):  # callers check their parameters first; this names the amount if one slips by
        raise ValueError(f"{x!r} is not a finite number: no exact rational stands for it")
    text = repr(x)
    if len(Decimal(text).normalize().as_tuple().digits) <= 15:
        return Fraction(text)
    near = Fraction(x).limit_denominator(10**6)
    return near if float(near) == x else Fraction(text)
