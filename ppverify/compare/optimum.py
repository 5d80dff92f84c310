"""The ``optimum`` level: CP-SAT's best makespan for a schedule's placement (any op order), or a
proven lower bound when the per-point time limit ends first.

Thin adapter over :mod:`ppverify.optimize` so the comparison keeps working (with the level marked
unavailable) on an installation where the optimizer is missing.
"""

from __future__ import annotations

from ..comm import CommModel
from ..costs import CostModel
from ..schedule import Schedule
from .evaluate import LevelResult


def solve_placement(schedule: Schedule, costs: CostModel, comm: CommModel, time_limit: float) -> LevelResult:
    """Optimum (or bound) for ``schedule``'s placement, pipes and op kinds under ``costs``/``comm``."""
    try:
        from ..optimize import optimize_schedule  # type: ignore[attr-defined]
    except ImportError as exc:
        return LevelResult("optimum", "unavailable", note=f"CP-SAT optimizer not installed ({exc})")
    r = optimize_schedule(schedule, costs, comm, time_limit=time_limit)
    status = str(r.status).lower()
    if r.objective is None:
        return LevelResult("optimum", status, lower_bound=r.bound, note="no solution within the time limit")
    return LevelResult("optimum", status, float(r.objective), None, None, float(r.bound),
                       exact=status == "optimal")
