"""What ``ppverify gap`` times and prints beside the solver's summary: the family's value under
the async engine, and the line that states the optimum."""

from __future__ import annotations

from typing import Any


def family_value(
    schedule: Any, costs: Any, comm: Any, objective: str, sync: str = "eager", dp_allreduce: int = 0
) -> tuple[float, Any]:
    """The schedule's makespan (or longest per-device span) under the async engine, and the
    timeline. Replica all-reduces (two-pipe families) are included as the engine runs them under
    ``sync`` (the bound includes the same collectives).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("gpipe", p=4, m=4)
        >>> family_value(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(1), "makespan")[0]
        27.0
    """
    from ..engines import run as run_engine
    from ..optimize.solver_setup import objective_value

    tl = run_engine(schedule, costs, comm, "async", sync=sync, dp_allreduce=dp_allreduce)
    return objective_value(tl, objective), tl


def what_ended(res: Any, wall: float, stopped: bool) -> str:
    """What ended a search that proved nothing, as the optimum line says it: a signal, the wall
    clock (``--time-limit``, named in ``reason`` and ``solver["wall_limited"]``), the gap limit, or
    CP-SAT's deterministic work (``--work-limit``), which gives the same answer at any load.

    Example:
        >>> from types import SimpleNamespace
        >>> cut = SimpleNamespace(solver={"wall_limited": "search", "work_limit_s": 0.5}, reason="wall-clock limit reached in: search")
        >>> what_ended(cut, 32.0, False)
        'when the wall clock stopped it at 32 s (wall-clock limit reached in: search)'
        >>> what_ended(SimpleNamespace(solver={"work_limit_s": 0.5}, reason=""), 32.0, False)
        'within the work limit of 0.5 deterministic s'
    """
    if stopped:  # a signal cut it, not a limit
        return "when stopped"
    solver = getattr(res, "solver", None) or {}
    reason = getattr(res, "reason", "") or ""
    if solver.get("wall_limited") or reason.startswith("wall-clock"):
        return f"when the wall clock stopped it at {wall:g} s" + (f" ({reason})" if reason else "")
    if solver.get("stopped") or reason.startswith("within the gap limit"):
        return reason or "within the gap limit"
    work = solver.get("work_limit_s")
    if work is not None:
        return f"within the work limit of {work:g} deterministic s"
    return f"within {wall:g} s"


def optimum_line(
    res: Any, best: float | None, value: float, over_cap: bool, wall: float, stopped: bool, peak: str
) -> str:
    """The line after the gap: the proven optimum, the best schedule on a rounded grid (optimal
    there, the true optimum at most its own time), or the best found when the search ended
    first; empty without a schedule. ``peak`` is the best schedule's peak as text.

    Example:
        >>> from types import SimpleNamespace
        >>> res = SimpleNamespace(status="OPTIMAL", exact=True, time_unit="units", tick=1.0)
        >>> optimum_line(res, 9.0, 9.0, False, 60.0, False, "2")
        'optimum      9  (proven, peak 2; the family is 0 above it)'
        >>> optimum_line(res, 23 / 3, 23 * (1 / 3), False, 60.0, False, "")  # 23 ticks of 1/3, summed apart
        'optimum      7.66667  (proven; the family is 0 above it)'
        >>> res = SimpleNamespace(status="FEASIBLE", exact=True, time_unit="units", objective=12.0, hint="1f1b", hint_objective=12.0)
        >>> optimum_line(res, 12.0, 12.0, False, 0.05, False, "2")
        'best found   12  (the start 1f1b, nothing better found within 0.05 s; FEASIBLE, peak 2)'
    """
    if best is None:
        return ""
    u = "" if res.time_unit != "s" else " s"
    peak_text = f", peak {peak}" if peak else ""
    if res.status != "OPTIMAL":
        ended = what_ended(res, wall, stopped)
        start, start_value = getattr(res, "hint", None), getattr(res, "hint_objective", None)
        if start and start_value is not None and res.objective is not None and res.objective >= start_value - 1e-9:
            # the best is the starting schedule (a family's, a heuristic's): CP-SAT found nothing better
            return (
                f"best found   {best:g}{u}  (the start {start}, nothing better found {ended}; {res.status}{peak_text})"
            )
        return f"best found   {best:g}{u}  (CP-SAT {res.status} {ended}{peak_text})"
    ahead = value - best
    if abs(ahead) < 1e-9 * max(1.0, abs(value)):  # one value in two float sums: never "-2.66e-15 above it"
        ahead = 0.0
    than = (
        f"the family is {ahead:g}{u} above it"
        if not over_cap
        else f"the family, over the cap, is {abs(ahead):g}{u} {'faster' if ahead < 0 else 'slower'}"
    )
    if res.exact:
        return f"optimum      {best:g}{u}  (proven{peak_text}; {than})"
    grid = f"optimal on durations rounded down to ticks of {res.tick:g}{u}: the optimum is at most it"
    return f"best found   {best:g}{u}  ({grid}{peak_text}; {than})"


def over_texts(peak: float, problem: Any) -> tuple[str, str]:
    """A family's ``peak`` over ``problem``'s memory cap and the cap, both in the unit the cap's
    label counts (bytes as GiB, else activations), with the digits that tell them apart, as
    ``verify`` says a breach (:func:`~ppverify.core.memory_text.held_and_cap`; docs/memory.md: a
    level over its cap never prints as equal to it).

    Example:
        >>> from ppverify.optimize import Problem
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> over_texts(2.0, Problem(linear(2), 4, CostModel.abstract(linear(2)), memory_cap=1.9999999995))
        ('2 activations', '1.999999999')
    """
    from ..core.exact import exact_fraction
    from ..core.memory_text import held_and_cap
    from ..core.memory_unit import printed_unit

    one = printed_unit(problem.costs, problem.placement)
    unit = problem.costs.memory_unit
    return held_and_cap(exact_fraction(peak) / one, exact_fraction(problem.memory_cap) / one, unit)
