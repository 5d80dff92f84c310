"""``ppverify design``: the fastest schedule at every memory budget, certified and verified.

For every placement and memory budget, CP-SAT's best schedule and its certified lower bound
(:mod:`.points`, with the registered families and greedy rules as starts); the frontier of
Pareto-optimal (peak memory, step time) points; the registered families as points beside it
(:mod:`.families`); Z3's verdict on every frontier schedule (:mod:`.run`); the files of each
(:mod:`.output`). :mod:`.spec` says what is explored and in which units, :mod:`.options` the
command's own options and their checks.
"""

from .budget_list import parse_budgets
from .points import FamilyPoint, Point, frontier, solve_point, value_at
from .run import Design, DesignRequest, design
from .spec import Limits, Setup, setups

__all__ = [
    "Design",
    "DesignRequest",
    "FamilyPoint",
    "Limits",
    "Point",
    "Setup",
    "design",
    "frontier",
    "parse_budgets",
    "setups",
    "solve_point",
    "value_at",
]
