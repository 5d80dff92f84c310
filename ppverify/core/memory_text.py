"""A level of memory held over its cap, in words: the two amounts told apart, as ``verify`` and
``optimize`` explain a breach (docs/memory.md: a level over its cap never prints as equal to it)."""

from __future__ import annotations

from fractions import Fraction

from .sizes import format_apart, format_bytes_apart


def held_and_cap(level: Fraction, cap: Fraction, unit: str, cap_unit: bool = False) -> tuple[str, str]:
    """An amount held over a cap and the cap as text (bytes, or activations of a device's share:
    both already divided by :func:`printed_unit`), as ``verify`` and ``optimize`` explain a
    breach: bytes as GiB with enough digits to tell them apart, activations as numbers told apart
    as well (docs/memory.md: a level over its cap never prints as equal to it). ``cap_unit``:
    the cap's activations named too ("3 activations"; bytes always say GiB).

    Example:
        >>> held_and_cap(Fraction(47815065600), Fraction(47815065599), "bytes")
        ('44.53125 GiB', '44.531249999 GiB')
        >>> held_and_cap(Fraction(4), Fraction(3), "activations")
        ('4 activations', '3')
        >>> held_and_cap(Fraction(7, 3), Fraction("2.3333333"), "activations", cap_unit=True)
        ('2.33333333 activations', '2.3333333 activations')
    """
    if unit == "bytes":
        return format_bytes_apart(float(level), float(cap))
    held, capped = format_apart([level, cap], unit)
    if cap_unit:
        capped += f" activation{'' if cap == 1 else 's'}"
    return f"{held} activation{'' if level == 1 else 's'}", capped
