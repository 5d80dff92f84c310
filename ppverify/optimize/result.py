"""Step 3 of 3 (read): what an optimization returns, in the cost model's time unit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..core.schedule import Schedule
from ..core.timeline import Timeline

#: solver outcomes, CP-SAT's names
STATUSES: tuple[str, ...] = ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNKNOWN")


def relative_gap(value: float | None, bound: float) -> float | None:
    """``(value - bound) / value``: how far a schedule may be above the optimum, as a fraction of
    its own value (0 = proven optimal); ``None`` without a value.

    Example:
        >>> relative_gap(110.0, 99.0), relative_gap(None, 3.0), relative_gap(0.0, 0.0)
        (0.1, None, 0.0)
    """
    if value is None:
        return None
    if value <= 0:
        return 0.0
    return max(0.0, (value - bound) / value)


class CommonFields(TypedDict):
    """The :class:`OptimizeResult` fields that every result of one run shares (passed as
    ``**common`` by :func:`ppverify.optimize.optimize` and :func:`ppverify.optimize.evaluate`)."""

    objective_name: str
    bounds: Mapping[str, float]
    tick: float
    exact: bool
    time_unit: str
    collectives: str
    memory_cap: float | None


@dataclass(frozen=True, eq=False)
class OptimizeResult:
    """Outcome of :func:`ppverify.optimize.optimize` or :func:`ppverify.optimize.evaluate`.

    ``objective`` is the best schedule's value (makespan or longest per-device span) and
    ``bound`` a proven lower bound on every schedule's value; ``gap = (objective - bound) /
    objective``. ``schedule`` is the best schedule found (per-device program order) and
    ``timeline`` its start/end times as the solver placed them. ``bounds`` holds the analytic
    bounds on their own; ``hint`` names the starting schedule (a family or a greedy rule);
    ``collectives`` says which collectives the makespan includes (empty when the step has none);
    ``memory_cap`` the cap the result holds for, in the cost model's memory unit (None: none).
    """

    status: str
    objective_name: str
    objective: float | None
    bound: float
    wall_s: float
    schedule: Schedule | None
    timeline: Timeline | None
    bounds: Mapping[str, float]
    hint: str | None
    hint_objective: float | None
    tick: float
    exact: bool
    time_unit: str
    solver: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""
    collectives: str = ""
    memory_cap: float | None = None

    @property
    def gap(self) -> float | None:
        """Relative gap between the objective and the bound (see :func:`relative_gap`)."""
        return relative_gap(self.objective, self.bound)

    def to_dict(self) -> dict[str, Any]:
        """The summary ``--json`` prints (the schedule as per-device action text). An INFEASIBLE
        problem's bound is infinite (no schedule; ``reason`` says why) and stays so here:
        :func:`ppverify.cli.json_output.print_json` writes it ``null`` and names it under
        ``non_finite_as_null``, as it does every number JSON cannot hold (nulled here, it went
        unnamed). ``memory_cap`` is a number (the cost model's memory unit) or ``None`` for none,
        as in ``gap --json``.

        Example:
            >>> r = OptimizeResult("INFEASIBLE", "makespan", None, float("inf"), 0.0, None, None, {}, None, None, 1.0, True, "units", reason="cap")
            >>> r.to_dict()["bound"], r.to_dict()["reason"], r.to_dict()["memory_cap"]
            (inf, 'cap', None)
        """
        out: dict[str, Any] = {
            "status": self.status,
            "objective": self.objective_name,
            "value": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "gap_to_bound": self.gap,  # the name gap, compare and report give (value - bound) / value
            "wall_s": round(self.wall_s, 3),
            "time_unit": self.time_unit,
            "tick": self.tick,
            "exact_ticks": self.exact,
            "analytic_bounds": dict(self.bounds),
            "hint": self.hint,
            "hint_value": self.hint_objective,
            "solver": dict(self.solver),
            "memory_cap": self.memory_cap,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.collectives:
            out["collectives"] = self.collectives
        if self.schedule is not None:
            out["programs"] = [[str(a) for a in prog] for prog in self.schedule.programs]
            out["pipe_of_mb"] = list(self.schedule.pipe_of_mb)
        if self.timeline is not None:
            out["peak_memory"] = self.timeline.peak_memory().tolist()
        return out
