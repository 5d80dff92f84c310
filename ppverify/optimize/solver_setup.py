"""What :func:`~ppverify.optimize.optimize` and :func:`~ppverify.optimize.evaluate` share: the
CP-SAT solver's set-up and statuses, a solution's start ticks read back into a schedule and its
timeline, and the results returned when the clock runs out first."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from ..core.errors import ParameterError
from ..core.schedule import Schedule
from ..core.timeline import Timeline, TimelineInfo, Transfers
from .bounds import problem_bounds
from .collectives import collective_times, describe
from .problem import Instance, Problem
from .result import OptimizeResult

#: CP-SAT's status codes by the names ppverify reports (an invalid model reads as UNKNOWN)
STATUS = {
    cp_model.OPTIMAL: "OPTIMAL",
    cp_model.FEASIBLE: "FEASIBLE",
    cp_model.INFEASIBLE: "INFEASIBLE",
    cp_model.UNKNOWN: "UNKNOWN",
    cp_model.MODEL_INVALID: "UNKNOWN",
}


#: CP-SAT's random seed is a signed 32-bit integer: a larger one fails deep in the solver
SEED_RANGE = (-(2**31), 2**31 - 1)


def check_seed(seed: int) -> None:
    """Refuse a seed CP-SAT cannot take (an integer outside :data:`SEED_RANGE`).

    Example:
        >>> check_seed(7)
        >>> check_seed(2**31)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter seed=2147483648: must be an integer from -2147483648 to 2147483647 (CP-SAT's seed is 32-bit)
    """
    low, high = SEED_RANGE
    if isinstance(seed, bool) or not isinstance(seed, int) or not low <= seed <= high:
        raise ParameterError("seed", seed, f"must be an integer from {low} to {high} (CP-SAT's seed is 32-bit)")


def check_limits(time_limit: float, workers: int, seed: int = 0) -> None:
    """Refuse a non-positive time limit, a worker count that is not an integer >= 1, or a seed
    CP-SAT cannot take.

    Example:
        >>> check_limits(1.0, 0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter workers=0: must be an integer >= 1
    """
    if not time_limit > 0:
        raise ParameterError("time-limit", time_limit, "must be > 0 seconds")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ParameterError("workers", workers, "must be an integer >= 1")
    check_seed(seed)


def make_solver(
    time_limit: float, workers: int, seed: int, work_limit: float | None = None, deterministic: bool = False
) -> cp_model.CpSolver:
    """A CP-SAT solver with ppverify's settings: wall and (optionally) deterministic limits,
    workers, seed, and Ctrl-C left to the command. ``deterministic``: several workers search in
    a fixed order (CP-SAT's ``interleave_search``), so that with a work limit the same model
    gives the same answer at any load (one worker always does).

    Example:
        >>> make_solver(2.0, 1, 0, work_limit=0.5).parameters.max_deterministic_time
        0.5
        >>> make_solver(2.0, 2, 0, 0.5, deterministic=True).parameters.interleave_search
        True
    """
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    if work_limit is not None:  # CP-SAT's deterministic clock: the same stop on a loaded machine
        solver.parameters.max_deterministic_time = max(0.01, float(work_limit))
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    # Ctrl-C is the command's (exit 130), as SIGTERM: CP-SAT must not swallow it to end the search
    # quietly; the CLI's signal watcher stops the search instead (interrupt.py)
    solver.parameters.catch_sigint_signal = False
    if deterministic and workers > 1:  # the parallel portfolio otherwise depends on thread timing
        solver.parameters.interleave_search = True
    return solver


#: CP-SAT's subsolvers that run its LP at linearization level 2 (its cuts; OR-Tools 9.15's
#: ``GetNamedParameters``): :func:`run_solver` caps them at level 1 on a model of large magnitudes
LEVEL2_SUBSOLVERS = (
    "max_lp",
    "max_lp_sym",
    "reduced_costs",
    "pseudo_costs",
    "quick_restart_max_lp",
    "probing_max_lp",
    "lb_tree_search",
    "objective_lb_search_max_lp",
    "objective_shaving_max_lp",
    "variables_shaving_max_lp",
)
#: a memory capacity times the largest variable bound from which the level-2 cuts are kept out
#: (2**46; the model that aborted had 2.5e14, abstract-cost models stay under 2**30)
LP_MAGNITUDE_LIMIT = 2**46


def lp_magnitude(model: cp_model.CpModel) -> int:
    """The largest cumulative capacity times the largest bound of any variable: how large the
    products in CP-SAT's energy cuts can grow.

    Example:
        >>> model = cp_model.CpModel()
        >>> x = model.new_int_var(0, 100, "x")
        >>> iv = model.new_fixed_size_interval_var(x, 5, "iv")
        >>> _ = model.add_cumulative([iv], [3], 7)
        >>> lp_magnitude(model)
        700
    """
    proto = model.Proto()
    cap = max((c.cumulative.capacity.offset for c in proto.constraints if c.has_cumulative()), default=0)
    if not cap:
        return 0
    return int(cap) * max((max(abs(int(x)) for x in v.domain) for v in proto.variables), default=0)


def run_solver(solver: cp_model.CpSolver, model: cp_model.CpModel, callback: Any = None) -> cp_model.CpSolverStatus:
    """``solver.solve(model, callback)``, with CP-SAT's level-2 LP kept out of a model whose
    magnitudes would overflow it: on a memory-capped model in bytes and 0.1 us ticks (DualPipe,
    p = 2, m = 4, GPT-3 1.3B on dgx-h100 under ``gap``), OR-Tools 9.15's LP simplification
    multiplies a cut's coefficients by variable bounds past 64 bits and aborts the process
    (``Check failed: threshold > 0``, exit 134, nothing printed). The other subsolvers run as
    they would, so a model of ordinary size is solved exactly as before. An interleaved search
    (``deterministic`` in :func:`make_solver`) runs in a forked child, which OR-Tools may abort
    without taking the command with it (:mod:`.isolated`).

    Example:
        >>> model = cp_model.CpModel()
        >>> x = model.new_int_var(0, 3, "x")
        >>> model.minimize(x)
        >>> run_solver(make_solver(1.0, 1, 0), model) == cp_model.OPTIMAL
        True
    """
    if lp_magnitude(model) >= LP_MAGNITUDE_LIMIT:
        solver.parameters.linearization_level = min(solver.parameters.linearization_level, 1)
        # merged into each named subsolver (the wrapper's repeated field takes no new items)
        solver.parameters.merge_text_format(
            " ".join(f'subsolver_params {{ name: "{name}" linearization_level: 1 }}' for name in LEVEL2_SUBSOLVERS)
        )
    if solver.parameters.interleave_search and hasattr(os, "fork"):
        # OR-Tools 9.15's interleaved search can abort the process: solved in a child (isolated.py)
        from .isolated import solve_in_child

        return solve_in_child(solver, model, callback)
    return solver.solve(model, callback) if callback is not None else solver.solve(model)


def as_soon_as_possible(inst: Instance, starts: Sequence[int], value: int) -> tuple[list[int], int]:
    """The order of ``starts`` (:meth:`~ppverify.optimize.problem.Instance.programs_by_start`)
    timed as soon as possible, and its value, where that is faster than ``value`` (the solver's);
    else ``starts`` and ``value`` as given. A schedule's time is its order's ASAP timing (what
    ``simulate`` gives): a FEASIBLE solver timeline may hold slack the order does not need, and
    it only ever makes the timeline slower, never the order's ASAP timing.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import instance
        >>> inst = instance(Problem(linear(1), 2, CostModel.abstract(linear(1), F=1, B=2), split=False))
        >>> as_soon_as_possible(inst, [0, 5, 1, 2], 7)  # B1 at 2 ends 4, B0 waits to 5: it can start at 4
        ([0, 4, 1, 2], 6)
        >>> as_soon_as_possible(inst, [0, 4, 1, 2], 6)
        ([0, 4, 1, 2], 6)
    """
    from ..core.errors import PPVerifyError
    from .heuristic import time_programs

    try:
        asap = time_programs(inst, inst.programs_by_start(starts))
    except PPVerifyError:  # pragma: no cover - the order of a feasible timeline cannot deadlock
        return list(starts), value
    return (list(asap.starts), asap.objective) if asap.objective < value else (list(starts), value)


def true_timed(problem: Problem, res: OptimizeResult) -> OptimizeResult:
    """``res`` with its schedule's value and timeline at the true durations where the ticks were
    rounded (durations in seconds with no small common tick): the async engine times the order
    found, as ``simulate`` times the saved schedule, instead of the as-soon-as-possible timing of
    the rounded durations, which was up to a tick an op below it (``optimize --system
    ethernet-100g --model gpt3-1.3b``: 0.1169158 s printed, 0.11691931 s simulated). The bound,
    proven on durations rounded down, stays a bound on the true ones; an ``OPTIMAL`` status is
    then an optimum on the rounded durations (``exact`` False says so, as ``gap`` words it).
    Exact ticks, or no schedule: ``res`` as given.

    Example:
        >>> import dataclasses
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize import optimize
        >>> pl = linear(1)  # F = 123.456789 us is 1234 ticks of 0.1 us rounded down, B = 200 us
        >>> costs = dataclasses.replace(CostModel.abstract(pl, F=123.456789e-6, B=200e-6), time_unit="s")
        >>> r = optimize(Problem(pl, 1, costs, split=False), 10)
        >>> r.exact, round(r.objective * 1e6, 6), round(r.bound * 1e6, 6)  # F + B = 323.456789 us; 3234 ticks
        (False, 323.456789, 323.4)
    """
    if res.exact or res.schedule is None or res.objective is None:
        return res
    import dataclasses

    from ..engines import run

    pr = problem
    tl = run(res.schedule, pr.costs, pr.comm, "async", sync=pr.sync, dp_allreduce=pr.dp_allreduce)
    return dataclasses.replace(res, objective=objective_value(tl, pr.objective), timeline=tl)


def objective_value(tl: Timeline, objective: str) -> float:
    """A timeline's value under ``objective``: its makespan, or (``span``) the longest per-device
    span from a device's first op start to its last op end (the zero-bubble paper's ILP objective).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> tl = run(build("1f1b", p=2, m=1))  # unit slots: 0F0 0-1, 1F0 1-2, 1B0 2-3, 0B0 3-4
        >>> objective_value(tl, "makespan"), objective_value(tl, "span")  # device 0 spans 0-4
        (4.0, 4.0)
    """
    if objective == "makespan":
        return float(tl.makespan)
    spans = (
        float(tl.end[tl.device == d].max() - tl.start[tl.device == d].min())
        for d in range(tl.p)
        if (tl.device == d).any()
    )
    return max(spans, default=0.0)


def schedule_from_starts(inst: Instance, starts: Sequence[int], family: str) -> tuple[Schedule, Timeline]:
    """Per-device program order from start ticks (ties in op position order), and the timeline
    with exactly those times (collectives as early as their ops allow, one row per ring hop as the
    engines record them).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import instance
        >>> pl = linear(1)
        >>> inst = instance(Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> [(op.kind, op.mb) for op in inst.dag.ops]
        [('F', 0), ('B', 0), ('F', 1), ('B', 1)]
        >>> sched, tl = schedule_from_starts(inst, [0, 4, 1, 2], "demo")  # B1 at 2, before B0 at 4
        >>> [(op.kind, op.mb) for op in sched.programs[0]], tl.makespan
        ([('F', 0), ('F', 1), ('B', 1), ('B', 0)], 6.0)
    """
    dag = inst.dag
    pr = inst.problem
    params = {"p": pr.p, "m": pr.m, "objective": pr.objective}
    sched = Schedule(pr.placement, pr.m, inst.programs_by_start(starts), dag.schedule.pipe_of_mb, family, params)
    st = np.asarray(starts, dtype=float) * inst.tick
    en = (np.asarray(starts) + np.asarray(inst.dur)) * inst.tick
    transfers = Transfers()
    ends = [int(a) + d for a, d in zip(starts, inst.dur)]
    for c, (t0, t1) in zip(inst.colls, collective_times(ends, inst.coll_dur, inst.colls)):
        for n, dv in enumerate(c.devices):
            transfers.add(
                c.kind, dv, c.devices[(n + 1) % len(c.devices)], -1, -1, t0 * inst.tick, t1 * inst.tick, c.nbytes
            )
    tl = Timeline(
        sched,
        pr.costs,
        "cp-sat",
        list(dag.ops),
        np.asarray(dag.device, dtype=np.int64),
        st,
        en,
        transfers,
        info=TimelineInfo(tick=inst.tick, objective=pr.objective, sync=pr.sync, dp_allreduce=pr.dp_allreduce),
    )
    return sched, tl


def collectives_text(inst: Instance) -> str:
    """What the step's collectives are, for the result (empty on one-pipe steps without DP).

    Example:
        >>> from ppverify.core.placement import bidirectional, linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import instance
        >>> pl = linear(2)
        >>> collectives_text(instance(Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False)))
        ''
        >>> pl = bidirectional(2)  # two pipes, their replica all-reduce switched off
        >>> collectives_text(instance(Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False, sync="none")))
        'replica all-reduce left out (sync none)'
    """
    pr = inst.problem
    text = describe(inst.colls, pr.sync, pr.dp_allreduce, pr.costs.time_unit)
    if text and pr.objective == "span":
        return "collectives left out of the span (a span counts a device's own ops)"
    if not text and pr.sync == "none" and pr.placement.num_pipes > 1:
        text = "replica all-reduce left out (sync none)"
    return text


#: what a stop event stands for while a command's signal handling runs a search (stops_named):
#: the innermost one's words for the signal received; none outside such a block
_STOP_WORDS: list[Callable[[], str]] = []


@contextlib.contextmanager
def stops_named(words: Callable[[], str]) -> Iterator[None]:
    """Within the block, :func:`cut_reason` names what set the stop event: ``words()``, the
    signal received as the command's last line names it (``terminated (SIGTERM)``; empty while
    none has arrived). The command's signal handling wraps its search in it
    (:mod:`ppverify.cli.signals`); elsewhere the event's cause is unknown, and a status says only
    ``interrupted``.

    Example:
        >>> with stops_named(lambda: "terminated (SIGTERM)"):
        ...     cut_reason(["search"], interrupted=True)
        'terminated (SIGTERM) in: search'
        >>> cut_reason(["search"], interrupted=True)
        'interrupted in: search'
    """
    _STOP_WORDS.append(words)
    try:
        yield
    finally:
        _STOP_WORDS.remove(words)


def cut_stats(cut: list[str], interrupted: bool = False) -> dict:
    """The solver statistics' note of the phases the clock (or a signal) cut short (none: empty).
    A cut run is not deterministic whatever its work limit (where it stopped depends on the
    machine's load): ``deterministic`` is then false, over the ``true`` a deterministic run states.

    Example:
        >>> cut_stats(["local search"]), cut_stats([]), cut_stats(["search"], True)
        ({'wall_limited': 'local search', 'deterministic': False}, {}, {'interrupted': 'search', 'deterministic': False})
    """
    # an OPTIMAL value and bound do not depend on the cut, but which start was found first may
    if not cut:
        return {}
    return {"interrupted" if interrupted else "wall_limited": ", ".join(cut), "deterministic": False}


def cut_reason(cut: list[str], interrupted: bool = False) -> str:
    """The result's reason when the clock (or, ``interrupted``, the stop event) cut phases short.
    An interrupt names the signal where the command's signal handling says which
    (:func:`stops_named`), else it is a plain ``interrupted``: the event may have been set by
    SIGTERM, SIGHUP or Python code as well as by Ctrl-C.

    Example:
        >>> cut_reason(["model building"]), cut_reason(["search"], interrupted=True)
        ('wall-clock limit reached in: model building', 'interrupted in: search')
    """
    if not cut:
        return ""
    why = "wall-clock limit reached"
    if interrupted:
        why = (_STOP_WORDS[-1]() if _STOP_WORDS else "") or "interrupted"
    return f"{why} in: {', '.join(cut)}"


def cut_result(problem: Problem, t0: float, time_limit: float, workers: int, seed: int) -> OptimizeResult:
    """The clock ran out while the problem was turned into ticks: nothing found; the bounds that
    need no numbered ops (:func:`.bounds.problem_bounds`).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> pl = linear(4)  # device work m (tF + tB) = 8 * 3
        >>> r = cut_result(Problem(pl, 8, CostModel.abstract(pl, F=1, B=2), split=False), time.monotonic(), 1.0, 1, 0)
        >>> r.status, r.objective, r.bound, r.reason
        ('UNKNOWN', None, 24.0, 'wall-clock limit reached in: model building')
    """
    names = (
        "critical_path",
        "device_work",
        "memory_window",
        "device_relaxation",
        "one_machine",
        "memory_cycle",
        "warmup",
        "best",
    )
    cheap = problem_bounds(problem)
    return OptimizeResult(
        "UNKNOWN",
        objective_name=problem.objective,
        objective=None,
        bound=cheap["best"],
        wall_s=time.monotonic() - t0,
        schedule=None,
        timeline=None,
        bounds={k: cheap.get(k, 0.0) for k in names},
        hint=None,
        hint_objective=None,
        tick=1.0,
        exact=True,
        time_unit=problem.costs.time_unit,
        solver={"workers": workers, "seed": seed, "time_limit_s": time_limit, "wall_limited": "model building"},
        reason=cut_reason(["model building"]),
        memory_cap=problem.memory_cap,
    )


def solver_stats(solver: cp_model.CpSolver, workers: int, seed: int, time_limit: float, status: str) -> dict:
    """What a search cost (CP-SAT's wall and deterministic time, branches, conflicts) and how it was run.

    Example:
        >>> model = cp_model.CpModel()
        >>> _ = model.new_int_var(0, 3, "x")
        >>> solver = make_solver(1.0, 1, 0)
        >>> _ = solver.solve(model)
        >>> solver_stats(solver, 1, 0, 1.0, "OPTIMAL")["cp_sat_status"]
        'OPTIMAL'
    """
    return {
        "cp_sat_status": status,
        "cp_sat_wall_s": round(solver.wall_time, 3),
        "deterministic_s": round(solver.deterministic_time, 3),
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
        "workers": workers,
        "seed": seed,
        "time_limit_s": time_limit,
    }


__all__ = [
    "STATUS",
    "as_soon_as_possible",
    "check_limits",
    "check_seed",
    "collectives_text",
    "cut_reason",
    "cut_result",
    "cut_stats",
    "lp_magnitude",
    "make_solver",
    "objective_value",
    "run_solver",
    "schedule_from_starts",
    "solver_stats",
    "true_timed",
]
