"""The comma-separated values ``compare`` (and ``plot``) options take, read once: names
(:func:`split_csv`, :func:`given_csv`), integers (:func:`parse_ints`) and numbers
(:func:`parse_floats`), each refused with its option named."""

from __future__ import annotations

from ..core.errors import ParameterError


def split_csv(text: str | None) -> list[str] | None:
    """Comma-separated values, each once, blanks dropped; ``None`` when nothing is given.

    Example:
        >>> split_csv("gpipe, 1f1b,,gpipe"), split_csv(" , "), split_csv(None)
        (['gpipe', '1f1b'], None, None)
    """
    if text is None:
        return None
    items = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))  # each value once
    return items or None


def given_csv(name: str, text: str | None) -> list[str] | None:
    """:func:`split_csv` of an option's value, ``None`` only when the option is not given: a value
    that names nothing (``''``, ``' , '``) is refused, never read as the default selection.

    Example:
        >>> given_csv("schedules", "gpipe,1f1b"), given_csv("schedules", None)
        (['gpipe', '1f1b'], None)
        >>> given_csv("schedules", " , ")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedules= , : names nothing; give comma-separated values, or leave the option out for its default
    """
    if text is None:
        return None
    items = split_csv(text)
    if items is None:
        raise ParameterError(
            name, text, "names nothing; give comma-separated values, or leave the option out for its default"
        )
    return items


def parse_ints(name: str, text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    """Comma-separated integers >= 1 (each once), or ``default`` when ``text`` is ``None``.

    Example:
        >>> parse_ints("p", "4,8,4", (4,)), parse_ints("p", None, (4,))
        ((4, 8), (4,))
        >>> parse_ints("m", "0", (4,))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=0: expected comma-separated integers >= 1
    """
    if text is None:
        return default
    try:
        vals = tuple(int(t) for t in split_csv(text) or ())
    except ValueError:
        raise ParameterError(name, text, "expected comma-separated integers, e.g. 4,8,16") from None
    if not vals or any(v < 1 for v in vals):
        raise ParameterError(name, text, "expected comma-separated integers >= 1")
    return tuple(dict.fromkeys(vals))  # a value given twice is one configuration


def parse_floats(name: str, text: str | None, default: tuple[float, ...]) -> tuple[float, ...]:
    """Comma-separated numbers >= 0 (repeats kept), or ``default`` when ``text`` is ``None``.

    Example:
        >>> parse_floats("comm-delay", "0,0.5", (0.0,))
        (0.0, 0.5)
    """
    if text is None:
        return default
    try:
        vals = tuple(float(t) for t in split_csv(text) or ())
    except ValueError:
        raise ParameterError(name, text, "expected comma-separated numbers, e.g. 0,0.5,1") from None
    if not vals or any(not v >= 0 for v in vals):
        raise ParameterError(name, text, "expected comma-separated numbers >= 0")
    return vals
