"""Memory sizes in option text: ``40GiB``, ``80GB``, ``512MiB``, or a plain number.

One parser for every option that takes a memory amount (``optimize --memory-cap``, ``verify
--memory-cap``), so the same text means the same bytes everywhere, and one formatter that prints
bytes as GiB (:func:`format_apart` where amounts must read apart, a proved cap as one that proves).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

from .errors import ParameterError
from .exact import exact_fraction

GiB = 2**30
#: byte multiples accepted after a number (case-insensitive); decimal and binary prefixes
BYTE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
#: suffixes that mean "a plain multiple" (``8x``, ``8MF``: eight times M_F)
PLAIN_UNITS = ("", "X", "MF")


@dataclass(frozen=True)
class Size:
    """A parsed amount: ``value`` in bytes when ``is_bytes``, else a plain number (a multiple, or
    the cost model's own unit).

    Example:
        >>> parse_size("40GiB")
        Size(value=Fraction(42949672960, 1), is_bytes=True)
        >>> parse_size("2.5").value
        Fraction(5, 2)
    """

    value: Fraction
    is_bytes: bool


#: what a size may be, as the errors say it
SIZE_FORMS = "a number (e.g. 8) or a size (e.g. 40GiB)"


def parse_size(text: str | float, option: str = "memory-cap", forms: str = SIZE_FORMS) -> Size:
    """Parse ``text``: a number with an optional byte unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB;
    any case, spaces allowed) or a plain-multiple suffix (``x``, ``MF``). Errors name ``option``
    and say what the caller accepts (``forms``).

    Example:
        >>> parse_size("64 gib").value == 64 * 2**30, parse_size("8x").is_bytes
        (True, False)
        >>> parse_size("1e9B").value
        Fraction(1000000000, 1)
        >>> parse_size("40 parsecs")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=40 parsecs: unknown unit 'parsecs'; use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, MF (stage activations) or none
        >>> parse_size("-2GiB")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=-2GiB: must be > 0: a number (e.g. 8) or a size (e.g. 40GiB)
    """
    t = str(text).strip().replace(" ", "")
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)([A-Za-z]*)", t)
    if not m:
        if re.fullmatch(r"-[0-9.eE+-]+[A-Za-z]*", t):
            raise ParameterError(option, text, f"must be > 0: {forms}")
        raise ParameterError(option, text, f"expected {forms}")
    value = Fraction(m.group(1))
    unit = m.group(2).upper()
    if unit in PLAIN_UNITS:
        return Size(value, False)
    if unit in BYTE_UNITS:
        return Size(value * BYTE_UNITS[unit], True)
    raise ParameterError(
        option,
        text,
        f"unknown unit {m.group(2)!r}; use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, MF (stage activations) or none",
    )


def format_bytes(x: float, digits: int = 3) -> str:
    """Bytes as GiB with ``digits`` significant digits (MiB below 1 GiB).

    Example:
        >>> format_bytes(11953766400), format_bytes(4e9), format_bytes(3 * 2**20)
        ('11.1 GiB', '3.73 GiB', '3 MiB')
    """
    if abs(x) >= GiB:
        return f"{x / GiB:.{digits}g} GiB"
    return f"{x / 2**20:.{digits}g} MiB"


def format_bytes_apart(a: float, b: float) -> tuple[str, str]:
    """Both amounts as :func:`format_bytes`, with just enough digits that unequal amounts read
    differently (a level one byte over its cap must not print as equal to it).

    Example:
        >>> format_bytes_apart(47815065600, 47815065599)
        ('44.53125 GiB', '44.531249999 GiB')
        >>> format_bytes_apart(12 * 2**30, 8 * 2**30)
        ('12 GiB', '8 GiB')
    """
    for digits in range(3, 17):
        ta, tb = format_bytes(a, digits), format_bytes(b, digits)
        if ta != tb or a == b:
            return ta, tb
    return f"{a:g} B", f"{b:g} B"


def memory_formatter(unit: str) -> Callable[[float], str]:
    """How an amount in a cost model's memory ``unit`` prints: bytes as :func:`format_bytes`,
    activations as a plain number.

    Example:
        >>> memory_formatter("bytes")(3 * 2**30), memory_formatter("activations")(4.0)
        ('3 GiB', '4')
    """
    if unit == "bytes":
        return format_bytes
    return lambda x: f"{x:g}"


#: significant digits :func:`format_apart` starts from: format_bytes's, and ``:g``'s for numbers
_START_DIGITS = {"bytes": 3}


def _amount_text(x: Fraction, digits: int, unit: str) -> str:
    return format_bytes(float(x), digits) if unit == "bytes" else f"{float(x):.{digits}g}"


def _read_back(text: str, unit: str) -> Fraction:
    # what the text means given back as --memory-cap (a size in bytes, or a plain number)
    return parse_size(text).value if unit == "bytes" else Fraction(text)


def _ceiling_text(x: Fraction, digits: int, unit: str) -> str:
    # x rounded up at ``digits`` significant digits, in format_bytes's GiB or MiB
    big = unit == "bytes" and x >= GiB
    q = x / GiB if big else x / 2**20 if unit == "bytes" else x
    with localcontext() as ctx:
        ctx.prec, ctx.rounding = digits, ROUND_CEILING
        up = Decimal(q.numerator) / Decimal(q.denominator)
    return f"{up:g}" + (" GiB" if big else " MiB" if unit == "bytes" else "")


def format_apart(values: Sequence[float | Fraction], unit: str, cap_first: bool = False) -> list[str]:
    """Memory amounts (bytes as :func:`format_bytes`, any other unit as plain numbers) at one
    number of significant digits, the fewest (from 3 for bytes, 6 otherwise) at which unequal
    amounts read back (as ``--memory-cap`` reads them) apart and in their order. ``cap_first``:
    ``values[0]`` is a cap the others are within, printed so that it reads back as at least the
    highest of them: a proved cap never prints as one the program would refuse (17213423616 B is
    not "16 GiB" beside a peak as high).

    Example:
        >>> format_apart([17213423616, 17213423616, 10194149376], "bytes", cap_first=True)
        ['16.03125 GiB', '16.03125 GiB', '9.494041 GiB']
        >>> format_apart([20 * GiB, 17213423616], "bytes", cap_first=True)
        ['20 GiB', '16 GiB']
        >>> format_apart([4, Fraction("3.9999999999")], "activations")
        ['4', '3.9999999999']
        >>> format_apart([Fraction(1, 3), Fraction(1, 3), Fraction(1, 6)], "activations", cap_first=True)
        ['0.333334', '0.333334', '0.166667']
    """
    xs = [v if isinstance(v, Fraction) else exact_fraction(v) for v in values]
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    top = max(xs[1:], default=xs[0]) if cap_first and xs else None
    texts: list[str] = []
    for digits in range(_START_DIGITS.get(unit, 6), 18):
        texts = [_amount_text(x, digits, unit) for x in xs]
        reads = [_read_back(t, unit) for t in texts]
        apart = all(reads[i] < reads[j] for i, j in zip(order, order[1:]) if xs[i] < xs[j])
        if apart and (top is None or reads[0] >= top):
            return texts
    if top is None:
        return texts
    # no decimal of the cap up to 17 digits reaches the peak it equals (1/3): the cap, and the
    # peaks equal to it, rounded up
    for digits in range(_START_DIGITS.get(unit, 6), 18):
        texts = [(_ceiling_text if x == xs[0] else _amount_text)(x, digits, unit) for x in xs]
        reads = [_read_back(t, unit) for t in texts]
        if all(reads[i] < reads[j] for i, j in zip(order, order[1:]) if xs[i] < xs[j]):
            return texts
    return texts
