"""Checks that tie a schedule or a size to its family's generator: whether a schedule (read from a
file) is still what its family builds, so that the family's formula applies to it, and which ``m``
to suggest when the default ``m = p`` breaks a family's rules (dualpipe, dualpipev need m >= 2p).

Not a family: nothing here registers one.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ParameterError, PPVerifyError
from ..core.ops import format_action
from ..core.schedule import Schedule
from .registry import build, get_family

#: how far above p :func:`suggest_m` looks for an m the family accepts (dualpipe needs 2p)
SUGGEST_M_SPAN = 8


def described(schedule: Schedule, checked: Schedule | None = None) -> str:
    """How a report heads ``schedule``: the description of ``checked`` (what the report ran on;
    default ``schedule``), with ``(edited)`` after it when ``schedule`` names a registered family
    but is not what that family builds at its p, m and parameters (:func:`family_mismatch`). A
    file saved from a family and then edited keeps the family's name in its header; its verdict,
    timeline or table must not pass for the family's. ``verify``, ``simulate`` and ``show`` head
    a schedule this way.

    Example:
        >>> s = build("1f1b", p=2, m=2)
        >>> described(s)
        '1f1b p=2 m=2'
        >>> d0 = s.programs[0]
        >>> described(s.with_programs(((d0[1], d0[0], *d0[2:]), s.programs[1])))
        '1f1b p=2 m=2 (edited)'
    """
    text = (checked or schedule).describe()
    return text if family_mismatch(schedule) is None else f"{text} (edited)"


def family_mismatch(schedule: Schedule) -> str | None:
    """Why ``schedule`` is not what its family builds at its own p, m and parameters (its
    placement, microbatch pipes or programs differ, or the family refuses those parameters);
    ``None`` when it is, or when it names no registered family (no formula to apply anyway).

    A file saved from a family and then edited into another order keeps the family's name: its
    table is then no evidence about the family's formula, either way.

    Example:
        >>> import dataclasses
        >>> s = build("1f1b", p=2, m=2)
        >>> family_mismatch(s) is None
        True
        >>> swapped = (s.programs[0][:1] + (s.programs[0][2], s.programs[0][1]) + s.programs[0][3:],) + s.programs[1:]
        >>> family_mismatch(dataclasses.replace(s, programs=swapped))
        "its programs are not 1f1b's at p=2 m=2 (device 0, action 1: 0B0 where 1f1b runs 0F1)"
    """
    try:
        fam = get_family(schedule.family)
    except ParameterError:
        return None
    params = {pr.name: schedule.params.get(pr.name) for pr in fam.params}
    size = f"p={schedule.p} m={schedule.m}"
    try:
        built = build(fam.name, schedule.p, schedule.m, **params)
    except PPVerifyError as exc:
        return f"{fam.name} refuses its parameters ({exc})"
    if built.placement.maps != schedule.placement.maps:
        return f"its placement is not {fam.name}'s at {size}"
    if tuple(built.pipe_of_mb) != tuple(schedule.pipe_of_mb):
        return f"its microbatches' pipes are not {fam.name}'s at {size}"
    for d, (ours, theirs) in enumerate(zip(schedule.programs, built.programs)):
        if tuple(ours) == tuple(theirs):
            continue
        at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
        here = format_action(ours[at]) if at < len(ours) else "the end"
        there = format_action(theirs[at]) if at < len(theirs) else "nothing more"
        return f"its programs are not {fam.name}'s at {size} (device {d}, action {at}: {here} where {fam.name} runs {there})"
    if len(schedule.programs) != len(built.programs):
        return (
            f"its programs are not {fam.name}'s at {size} ({len(schedule.programs)} devices, not {len(built.programs)})"
        )
    return None


def suggest_m(name: str, p: int, params: dict[str, Any]) -> int | None:
    """The smallest m above ``p`` (at most :data:`SUGGEST_M_SPAN` times p) that family ``name``
    builds with ``params``, or ``None`` when none does (then m is not what its rules refuse).

    Example:
        >>> suggest_m("dualpipe", 4, {}), suggest_m("dualpipev", 3, {}), suggest_m("chimera", 3, {})
        (8, 6, None)
    """
    for m in range(p + 1, SUGGEST_M_SPAN * p + 1):
        try:
            build(name, p, m, **params)
        except PPVerifyError:
            continue  # a generator refuses a bad m before it builds: each try is cheap
        return m
    return None


def default_m_refused(exc: ParameterError, name: str, p: int, params: dict[str, Any]) -> ParameterError:
    """``exc``, raised by a build at the default ``m = p`` (``-m`` not given), reworded to say
    that m was the default and which ``-m`` the family takes; any other error unchanged.

    Example:
        >>> from ppverify.schedules import build
        >>> try:
        ...     build("dualpipe", 4, 4)
        ... except ParameterError as exc:
        ...     print(default_m_refused(exc, "dualpipe", 4, {}))
        parameter m=4: -m was not given, so m = p = 4 (the default), and dualpipe needs an even m >= 2p = 8 (m/2 microbatches per direction, as the reference code asserts): give -m 8
    """
    if exc.name != "m" or exc.value != p:
        return exc
    m = suggest_m(name, p, params)
    if m is None:
        return exc
    return ParameterError("m", p, f"-m was not given, so m = p = {p} (the default), and {exc.rule}: give -m {m}")
