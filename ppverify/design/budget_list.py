"""``--budgets`` as typed: a comma list of memory budgets in activations (``none`` for
unconstrained), each also spellable as ``--memory-cap`` is (``8MF``, ``40GiB`` with presets), read
with the placements searched and refused where two of them would read one differently, or where
two budgets would be the same point."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.errors import ParameterError
from ..core.exact import exact_fraction
from ..core.limits import MAX_NUMBER
from .budgets import budget_holding

if TYPE_CHECKING:
    from .spec import Setup


def parse_budgets(text: str, sets: Sequence[Setup] = ()) -> tuple[float, ...] | None:
    """``--budgets``: ``auto`` (``None``) or a comma list of budgets in activations, ``none`` (or
    ``inf``) meaning unconstrained. A budget may be spelled as ``--memory-cap`` is: ``NMF`` stage
    activations, or a size (``40GiB``) with presets; these are read in activations with the
    placements of ``sets``, and refused where two placements would read them differently.

    Example:
        >>> from ppverify.design.spec import setups
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> parse_budgets("auto"), parse_budgets("2, 4,none")
        (None, (2.0, 4.0, inf))
        >>> parse_budgets("4MF", setups("v", 4, 8, PresetSettings(costs="F=1,I=1,W=1")))
        (2.0,)
        >>> parse_budgets("2,2.0")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter budgets=2,2.0: 2 is named twice (each budget is one point per placement)
        >>> parse_budgets("2MF,1", setups("v", 4, 8, PresetSettings(costs="F=1,I=1,W=1")))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter budgets=2MF,1: 2MF and 1 are the same budget, 1 activations (each budget is one point per placement)
        >>> parse_budgets("2,1e300")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter budgets=2,1e300: 1e300 is above 1e+15 activations: write none
        >>> parse_budgets("2,-1")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter budgets=2,-1: every budget must be a number > 0 (or none), got '-1'
        >>> parse_budgets("inf,none")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter budgets=inf,none: inf and none are the same budget: unconstrained (each budget is one point per placement)
        >>> parse_budgets("1e9,none", setups("linear", 2, 4, PresetSettings(costs="F=1,B=2")))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter budgets=1e9,none: 1e9 and none are the same budget here: unconstrained (no device can hold more than 4 activations) (each budget is one point per placement)
    """
    if str(text).strip().lower() == "auto":
        return None
    items = budget_items(text, sets)
    values = [v for _, v in items]
    # a budget no device of any placement can fill is searched as unconstrained (point_problem):
    # with none beside it, or another such budget, it would be the same point searched twice
    most = max((st.most_held() for st in sets), default=math.inf)
    keys = [math.inf if v >= most else v for v in values]
    why = "(each budget is one point per placement)"
    for i, (word, value) in enumerate(items):
        j = next((j for j in range(i) if keys[j] == keys[i]), None)
        if j is None:
            continue
        first = items[j][0]
        if first.lower() == word.lower() or (values[j] == value and _number(first) and _number(word)):
            # as a placement named twice: a slip, not a second point
            shown = first if math.isinf(value) else f"{value:g}"
            raise ParameterError("budgets", text, f"{shown} is named twice {why}")
        if math.isinf(values[j]) and math.isinf(value):
            raise ParameterError("budgets", text, f"{first} and {word} are the same budget: unconstrained {why}")
        if math.isinf(keys[i]):
            raise ParameterError(
                "budgets",
                text,
                f"{first} and {word} are the same budget here: unconstrained (no device can hold more than "
                f"{most:g} activations) {why}",
            )
        raise ParameterError("budgets", text, f"{first} and {word} are the same budget, {value:g} activations {why}")
    return tuple(sorted(values))


def budget_items(text: str, sets: Sequence[Setup] = ()) -> list[tuple[str, float]]:
    """Each budget of a ``--budgets`` list as typed (stripped) with its value in activations
    (``inf``: none), in the order given; errors name the whole list.

    Example:
        >>> from ppverify.design.spec import setups
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> budget_items("4MF, none", setups("v", 4, 8, PresetSettings(costs="F=1,I=1,W=1")))
        [('4MF', 2.0), ('none', inf)]
    """
    out = []
    for item in str(text).split(","):
        word = item.strip().lower()
        if word in ("none", "inf"):
            out.append((item.strip(), float("inf")))
            continue
        try:
            value = float(word)
        except ValueError:
            value = _spelled_budget(item.strip(), text, sets)
        if not value > 0 or value == float("inf"):
            raise ParameterError("budgets", text, f"every budget must be a number > 0 (or none), got {item.strip()!r}")
        if value > MAX_NUMBER:  # as every number in an option (--memory-cap 1e300 is refused): none means no cap
            raise ParameterError("budgets", text, f"{item.strip()} is above {MAX_NUMBER:g} activations: write none")
        out.append((item.strip(), value))
    if not out:
        raise ParameterError("budgets", text, "name at least one budget, or auto")
    return out


def _number(word: str) -> bool:
    """Whether a budget is typed as a plain finite number of activations (not none, inf, 8MF)."""
    try:
        return math.isfinite(float(word))
    except ValueError:
        return False


def _spelled_budget(item: str, text: str, sets: Sequence[Setup]) -> float:
    """One budget spelled as a cap (``8MF``, ``40GiB``), in activations; nan when it is no cap.
    One below a stage activation is read too (not refused as ``--memory-cap`` refuses it): it is
    below the least feasible budget, which :func:`~.run.plan` then names."""
    from ..core.memory_cap import read_memory_cap, resolve_memory_cap

    if not item or item.startswith("-"):
        return float("nan")
    try:
        spec = read_memory_cap(item, "budgets")
    except ParameterError:
        return float("nan")
    if spec is None or spec.amount is None:
        return float("nan")
    read = {}
    for s in sets:
        mf = max(s.costs.activation)
        below = None  # in the cost model's memory unit, where it can be read without resolving
        if spec.kind == "stage_activations":
            below = float(spec.amount) * mf
        elif spec.kind == "bytes" and s.costs.memory_unit == "bytes":
            below = float(spec.amount)
        if below is not None and 0 < below < mf * (1 - 1e-9):
            read[s.label] = below / s.unit
            continue
        if spec.kind == "bytes" and s.costs.memory_unit != "bytes":
            # said here: the cap's own message points at optimize's --memory-model, which design has not
            raise ParameterError(
                "budgets",
                text,
                "a size needs presets (--system/--model), whose cost model counts bytes; this one (--costs) "
                "counts activations: give a number of activations (one microbatch on a device's share of layers)",
            )
        exact = resolve_memory_cap(spec, s.costs, s.placement).exact
        if exact is not None:  # the least budget that holds the cap: 17625128960B holds a peak of those bytes
            read[s.label] = budget_holding(exact / exact_fraction(s.unit))
    values = list(read.values())
    if not values:
        raise ParameterError("budgets", text, f"{item} needs the placements' cost models to be read")
    if max(values) > min(values) * (1 + 1e-9):
        each = ", ".join(f"{label} {v:.4g}" for label, v in read.items())
        raise ParameterError(
            "budgets",
            text,
            f"{item} is a different number of activations on each placement ({each}): "
            "give it in activations, or search one placement",
        )
    return float(values[0])


__all__ = ["budget_items", "parse_budgets"]
