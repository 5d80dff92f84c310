"""Boundaries of a region on a grid, stated in words.

Given one verdict per grid point (holds / fails / no data), :func:`fit_rule` finds the simplest
rule of the form "holds when A and B" or "holds unless A and B" (at most ``max_conditions``
threshold conditions such as ``m <= 2p`` or ``bandwidth >= 50 GB/s``, thresholds taken from the
grid's own values) that agrees with the most points. The rule reports how many points it gets
right, so a sentence built from it never claims more than the data shows: an imperfect boundary
says "k of n points agree", a finding that fails somewhere is never said to hold "everywhere"
(it holds "at k of n grid points"), and no rule hinges on a single interior grid value ("unless
bandwidth = 7 GB/s" describes a grid line, not a region).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Axis:
    """One dimension of the grid: the verdict-frame column, its name in sentences and a formatter
    of its values.

    Example:
        >>> Axis("bandwidth_GBps", "bandwidth", lambda v: f"{v:g} GB/s").fmt(50.0)
        '50 GB/s'
    """

    column: str
    name: str
    fmt: Callable[[float], str] = lambda v: f"{v:g}"


def _m_fmt(v: float) -> str:
    return "p" if v == 1 else f"{v:g}p"


#: the axes of the findings map, in the order ties are broken
MAP_AXES: tuple[Axis, ...] = (
    Axis("m_factor", "m", _m_fmt),
    Axis("bandwidth_GBps", "bandwidth", lambda v: f"{v:g} GB/s"),
    Axis("latency_us", "latency", lambda v: f"{v:g} µs"),
    Axis("params_B", "model size", lambda v: f"{v:g}B parameters"),
    Axis("p", "p"),
)


@dataclass(frozen=True)
class Condition:
    """``axis op value`` with ``op`` one of ``<=``, ``>=``, ``==`` (the last when the threshold
    leaves a single grid value).

    Example:
        >>> c = Condition(MAP_AXES[0], "<=", 2.0)
        >>> c.text, c.mask(np.array([1.0, 2.0, 4.0])).tolist()
        ('m ≤ 2p', [True, True, False])
    """

    axis: Axis
    op: str
    value: float

    def mask(self, values: np.ndarray) -> np.ndarray:
        """Which of ``values`` satisfy the condition."""
        if self.op == "<=":
            return values <= self.value
        if self.op == ">=":
            return values >= self.value
        return values == self.value

    @property
    def text(self) -> str:
        """``m ≤ 2p``, ``bandwidth ≥ 50 GB/s``, ``p = 4``."""
        sym = {"<=": "≤", ">=": "≥", "==": "="}[self.op]
        return f"{self.axis.name} {sym} {self.axis.fmt(self.value)}"


@dataclass(frozen=True)
class Rule:
    """A region of the grid: the conjunction of ``conditions``; the finding holds exactly inside
    it (``holds_inside``) or exactly outside it. ``matched`` of ``total`` points with a verdict
    agree with the rule."""

    conditions: tuple[Condition, ...]
    holds_inside: bool
    matched: int
    total: int

    @property
    def exact(self) -> bool:
        """True when every point with a verdict agrees."""
        return self.matched == self.total

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        """The rule's verdict (True = holds) at each row of ``frame``.

        Example:
            >>> r = Rule((Condition(MAP_AXES[0], "<=", 1.0),), True, 2, 2)
            >>> r.predict(pd.DataFrame({"m_factor": [1, 2]})).tolist()
            [True, False]
        """
        inside = np.ones(len(frame), dtype=bool)
        for c in self.conditions:
            inside &= c.mask(frame[c.axis.column].to_numpy(dtype=float))
        return inside if self.holds_inside else ~inside

    def sentence(self, subject: str) -> str:
        """The rule in words, with its agreement.

        Example:
            >>> c = (Condition(MAP_AXES[0], "<=", 2.0), Condition(MAP_AXES[1], ">=", 50.0))
            >>> Rule(c, True, 10, 10).sentence("Chimera is faster than 1F1B")
            'Chimera is faster than 1F1B when m ≤ 2p and bandwidth ≥ 50 GB/s (all 10 grid points agree)'
            >>> Rule((), True, 10, 10).sentence("X"), Rule((), True, 9, 10).sentence("X")
            ('X everywhere on the grid (all 10 grid points)', 'X at 9 of 10 grid points')

        No point with a verdict is no evidence either way (not "nowhere"), and one point is one:
            >>> Rule((), True, 0, 0).sentence("X"), Rule((), True, 1, 1).sentence("X")
            ('X: no verdict at any grid point (the schedules it compares do not apply there)', 'X everywhere on the grid (its 1 grid point)')
        """
        if self.total == 0:
            none = "no verdict at any grid point (the schedules it compares do not apply there)"
            return f"{subject}: {none}" if subject else none
        every = f"all {self.total} grid points" if self.total > 1 else "its 1 grid point"
        if not self.conditions:  # no boundary: say where it holds, by count
            holding = self.matched if self.holds_inside else self.total - self.matched
            if holding in (0, self.total):
                return f"{subject} {'nowhere' if holding == 0 else 'everywhere'} on the grid ({every})"
            return f"{subject} at {holding} of {self.total} grid points"
        # a condition needs two values on its axis, so a rule with one always covers >= 2 points
        body = f"{subject} {'when' if self.holds_inside else 'unless'} {' and '.join(_merged(self.conditions))}"
        agree = f"{every} agree" if self.exact else f"{self.matched} of {self.total} grid points agree"
        return f"{body} ({agree})"


def _merged(conditions: tuple[Condition, ...]) -> list[str]:
    """Condition texts, a lower and an upper bound on one axis written as one interval.

    Example:
        >>> bw = MAP_AXES[1]
        >>> _merged((Condition(bw, "<=", 15.0), Condition(bw, ">=", 7.0)))
        ['7 GB/s ≤ bandwidth ≤ 15 GB/s']
        >>> _merged((Condition(bw, "<=", 7.0), Condition(bw, ">=", 7.0)))
        ['bandwidth = 7 GB/s']
    """
    out: list[str] = []
    for i, c in enumerate(conditions):
        other = next((o for o in conditions[i + 1 :] if o.axis.column == c.axis.column), None)
        if any(o.axis.column == c.axis.column for o in conditions[:i]):
            continue  # written with its partner
        if other is None or {c.op, other.op} != {"<=", ">="}:
            out.append(c.text)
            continue
        lo, hi = (c, other) if c.op == ">=" else (other, c)
        if lo.value == hi.value:
            out.append(f"{c.axis.name} = {c.axis.fmt(lo.value)}")
        else:
            out.append(f"{c.axis.fmt(lo.value)} ≤ {c.axis.name} ≤ {c.axis.fmt(hi.value)}")
    return out


def _candidates(frame: pd.DataFrame, axes: Sequence[Axis]) -> list[Condition]:
    out = []
    for ax in axes:
        vals = sorted(set(frame[ax.column].astype(float)))
        if len(vals) < 2:
            continue  # a constant axis cannot separate anything
        for i, v in enumerate(vals[:-1]):
            out.append(Condition(ax, "==" if i == 0 else "<=", v))
        for i, v in enumerate(vals[1:], 1):
            out.append(Condition(ax, "==" if i == len(vals) - 1 else ">=", v))
    return out


def _single_interior_value(conditions: Sequence[Condition], grid_values: dict[str, list[float]]) -> bool:
    """True when a lower and an upper threshold on one axis leave fewer than two of its grid values.

    Example:
        >>> bw = MAP_AXES[1]
        >>> vals = {bw.column: [1.0, 7.0, 15.0, 50.0]}
        >>> _single_interior_value([Condition(bw, "<=", 7.0), Condition(bw, ">=", 7.0)], vals)
        True
        >>> _single_interior_value([Condition(bw, "<=", 15.0), Condition(bw, ">=", 7.0)], vals)
        False
    """
    for c in conditions:
        if c.op != "<=":
            continue
        for o in conditions:
            if o.axis.column == c.axis.column and o.op == ">=":
                inside = [v for v in grid_values.get(c.axis.column, []) if o.value <= v <= c.value]
                if len(inside) < 2:
                    return True
    return False


def fit_rule(
    frame: pd.DataFrame, holds: str = "holds", axes: Sequence[Axis] = MAP_AXES, max_conditions: int = 2
) -> Rule:
    """The rule with at most ``max_conditions`` conditions that agrees with the most verdicts in
    column ``holds`` (True/False; None rows are ignored). Ties go to fewer conditions, then to
    "holds when", then to the earlier axis and lower threshold.

    Example:
        >>> g = pd.DataFrame([(m, bw) for m in (1, 2, 4) for bw in (1, 10, 100)], columns=["m_factor", "bandwidth_GBps"])
        >>> g["holds"] = (g.m_factor <= 2) & (g.bandwidth_GBps >= 10)
        >>> fit_rule(g, axes=MAP_AXES[:2]).sentence("it holds")
        'it holds when m ≤ 2p and bandwidth ≥ 10 GB/s (all 9 grid points agree)'
    """
    known = frame[frame[holds].notna()]
    y = known[holds].astype(bool).to_numpy()
    n = len(y)
    if n == 0:
        return Rule((), True, 0, 0)
    cands = _candidates(known, axes)
    grid_values = {ax.column: sorted(set(known[ax.column].astype(float))) for ax in axes if ax.column in known}
    masks = [c.mask(known[c.axis.column].to_numpy(dtype=float)) for c in cands]
    best: tuple | None = None

    def consider(idx: tuple[int, ...], inside: np.ndarray) -> None:
        nonlocal best
        agree = int(np.sum(inside == y))
        for holds_inside, score in ((True, agree), (False, n - agree)):
            key = (-score, len(idx), not holds_inside, idx)
            if best is None or key < best[0]:
                best = (key, idx, holds_inside, score)

    consider((), np.ones(n, dtype=bool))
    for k in range(1, max_conditions + 1):
        for idx in combinations(range(len(cands)), k):
            if len({(cands[i].axis.column, cands[i].op) for i in idx}) < k:
                continue  # two thresholds on one side of one axis: one of them is redundant
            if _single_interior_value([cands[i] for i in idx], grid_values):
                continue  # a rule on one grid line between others is noise, not a boundary
            inside = masks[idx[0]].copy()
            for i in idx[1:]:
                inside &= masks[i]
            consider(idx, inside)
    assert best is not None
    _, idx, holds_inside, score = best
    return Rule(tuple(cands[i] for i in idx), holds_inside, score, n)
