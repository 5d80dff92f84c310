"""Strict checks of decoded JSON values for the schedule file reader (:mod:`.json_format`).

Each check names the file, the location (``placement.maps[1]``) and the rule in a
:class:`~ppverify.core.errors.ScheduleFileError`; the decoding hooks refuse what :func:`json.loads`
would otherwise accept silently (a key given twice, ``NaN``/``Infinity``). What a schedule file
holds, and which keys it has, is :mod:`.json_format`'s business.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.costs import CostModel
from ..core.errors import PPVerifyError, ScheduleFileError
from ..core.limits import MAX_NUMBER
from ..core.ops import KINDS, Action, ActionSyntaxError, parse_action
from ..core.placement import Placement


class JsonReader:
    """Validation helpers that know the file name; every failure is a ScheduleFileError.

    Example:
        >>> rd = JsonReader("s.json")
        >>> rd.int_(3, "p", 1), rd.num(2, "costs.overlap")
        (3, 2.0)
        >>> rd.num(1e308, "costs.duration.F[0]")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: costs.duration.F[0]: 1e+308 out of range; must be at most 1e+15 in magnitude
        >>> rd.lst({"a": 1}, "programs")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: programs: expected a JSON list, got an object
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, rule: str) -> ScheduleFileError:
        """The file error for ``where`` breaking ``rule``, to raise."""
        return ScheduleFileError(self.path, where, rule)

    def obj(self, value: Any, where: str) -> Mapping[str, Any]:
        """``value`` if it is a JSON object, else the error naming ``where``."""
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a JSON object, got {describe_value(value)}")
        return value

    def keys(
        self,
        obj: Mapping[str, Any],
        where: str,
        allowed: Sequence[str],
        required: Sequence[str],
        expected: str,
        hint: str = "",
    ) -> None:
        """Refuse a key outside ``allowed`` (at ``<where>.<key>``; ``expected`` lists the keys the
        message names), then a missing ``required`` key (``hint``: what it holds)."""
        prefix = "" if where == "top level" else where + "."
        for k in obj:
            if k not in allowed:
                raise self.fail(f"{prefix}{k}", f"unknown key; expected {expected}")
        for k in required:
            if k not in obj:
                raise self.fail(where, f"missing key {k!r}" + (f" ({hint})" if hint else ""))

    def lst(self, value: Any, where: str, length: int | None = None, what: str = "entries") -> list:
        """``value`` if it is a JSON list (of ``length`` entries when given), else the error."""
        if not isinstance(value, list):
            raise self.fail(where, f"expected a JSON list, got {describe_value(value)}")
        if length is not None and len(value) != length:
            raise self.fail(where, f"has {len(value)} {what}; need {length}")
        return value

    def int_(self, value: Any, where: str, lo: int | None = None, hi: int | None = None) -> int:
        """``value`` if it is an integer (not a bool) in ``lo..hi``, else the error."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"expected an integer, got {describe_value(value)}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            rng = f"in {lo}..{hi}" if hi is not None else f">= {lo}"
            raise self.fail(where, f"{value} out of range; must be {rng}")
        return value

    def num(self, value: Any, where: str, lo: float = 0.0, hi: float | None = None) -> float:
        """``value`` as a float if it is a finite number in ``lo..hi``, else the error."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(where, f"expected a finite number, got {describe_value(value)}")
        if value < lo or (hi is not None and value > hi):
            raise self.fail(
                where, f"{value} out of range; must be >= {lo}" + (f" and <= {hi}" if hi is not None else "")
            )
        if abs(value) > MAX_NUMBER:  # a 1e308 duration sums to inf: every makespan would be inf or NaN
            raise self.fail(where, f"{value:g} out of range; must be at most {MAX_NUMBER:g} in magnitude")
        return float(value)

    def str_(self, value: Any, where: str) -> str:
        """``value`` if it is a string, else the error."""
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {describe_value(value)}")
        return value

    def action(self, value: Any, where: str) -> Action:
        """The action of text such as ``"0F1"`` (``None``: an idle slot), else the error."""
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(where, f"expected action text such as '0F1' or null (idle), got {describe_value(value)}")
        try:
            return parse_action(value)
        except ActionSyntaxError as exc:
            raise self.fail(where, str(exc)) from None


def describe_value(value: Any) -> str:
    """A JSON value's kind for an error message, with the value itself when it is short.

    Example:
        >>> describe_value("x"), describe_value([1]), describe_value(None)
        ('a string ("x")', 'a list', 'null (null)')
    """
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "an integer",
        float: "a number",
    }
    shown = json.dumps(value) if not isinstance(value, (dict, list)) else ""
    shown = shown if len(shown) <= 30 else shown[:27] + "..."
    return names.get(type(value), type(value).__name__) + (f" ({shown})" if shown else "")


def no_duplicate_keys(path: str) -> Callable[[Sequence[tuple[str, Any]]], dict]:
    """An ``object_pairs_hook`` for :func:`json.loads` that refuses a key given twice in one object.

    Example:
        >>> json.loads('{"p": 1, "p": 2}', object_pairs_hook=no_duplicate_keys("s.json"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: key 'p': appears twice in one object
    """

    def hook(pairs: Sequence[tuple[str, Any]]) -> dict:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ScheduleFileError(path, f"key {k!r}", "appears twice in one object")
            out[k] = v
        return out

    return hook


def reject_constant(path: str) -> Callable[[str], Any]:
    """A ``parse_constant`` hook for :func:`json.loads` that refuses ``NaN`` and ``Infinity``.

    Example:
        >>> json.loads('[NaN]', parse_constant=reject_constant("s.json"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: NaN is not valid JSON (numbers must be finite)
    """

    def hook(name: str) -> Any:
        raise ScheduleFileError(path, "", f"{name} is not valid JSON (numbers must be finite)")

    return hook


_ABSTRACT_LABEL = re.compile(r"F=([^,]+),B=([^,]+),I=([^,]+),W=([^,]+)$")


def honest_label(costs: CostModel, placement: Placement, path: str) -> CostModel:
    """``costs``, relabelled when its ``label`` is in the form ``CostModel.abstract`` writes
    (``F=1,B=2,I=1,W=1``) and its durations contradict it: ``verify`` and ``show`` print the label
    as the costs a proof or a table holds under, so a hand-edited duration (or label) would be
    stated as something it is not. Other labels (presets, free text) are names, kept as they are.

    Example:
        >>> from dataclasses import replace
        >>> from ppverify.core.placement import linear
        >>> pl = linear(2)
        >>> honest_label(CostModel.abstract(pl, F=1, B=2), pl, "s.json").label
        'F=1,B=2,I=1,W=1'
        >>> edited = CostModel.abstract(pl, F=1, B=2)
        >>> edited = replace(edited, duration={**edited.duration, "B": (2.0, 5.0)})
        >>> honest_label(edited, pl, "s.json").label
        'the durations in s.json (not its label F=1,B=2,I=1,W=1: B of stage 1 is 5, not 2)'
    """
    m = _ABSTRACT_LABEL.match(costs.label.replace(" ", ""))
    if m is None:
        return costs
    try:
        want = CostModel.abstract(placement, **{k: float(x) for k, x in zip(KINDS, m.groups())})
    except (ValueError, PPVerifyError):
        return costs  # not numbers after all: a name
    for k in KINDS:
        for s, (got, exp) in enumerate(zip(costs.duration[k], want.duration[k])):
            if not math.isclose(got, exp, rel_tol=1e-9, abs_tol=1e-12):
                why = f"{k} of stage {s} is {got:g}, not {exp:g}"
                return replace(costs, label=f"the durations in {path} (not its label {costs.label}: {why})")
    return costs
