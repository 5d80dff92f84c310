"""The ``optimum`` level: CP-SAT's best makespan for a schedule's placement, pipes and op kinds (any
op order), or the proven lower bound when the per-point time limit ends first.

Thin adapter over :func:`ppverify.optimize.optimize` returning the comparison's
:class:`~ppverify.compare.results.LevelResult`. The solver models
point-to-point transfers as edge delays and the replica gradient all-reduce of two-pipe placements
as the ``async`` engine runs it (default ``sync``, :mod:`ppverify.optimize.collectives`), so the
optimum and the async row time the same step. What it cannot model is a family whose ops are not
the solver's: overlapped F&B slots (DualPipe) or a backward mixing ``B`` with ``I``/``W``; the
row's note then starts with :data:`UNLIKE` (the table marks that gap with ``+``).

Durations in seconds are not commensurable, so they are first put on an integer grid
(:data:`GRID` ticks per shortest op), every duration and transfer time rounded *down*: the grid
problem's optimum is then at most the true optimum, so its proven bound stays a valid lower bound.
The schedule CP-SAT finds is re-timed with the true costs by the ``async`` engine, so the reported
makespan is a real schedule's (an upper bound on the true optimum).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from ..core.timeline import Timeline
from .results import LevelResult

#: CP-SAT workers per solve: the comparison runs many small solves on a shared machine
WORKERS = 1
#: wall-clock stop of a solve, as a multiple of its deterministic work limit (``--time-limit``),
#: with :data:`~ppverify.optimize.solver_run.WALL_ALLOWANCE` seconds on top for the phases the work
#: count leaves out (:func:`wall_limit`); ``PPVERIFY_WALL_FACTOR`` raises it where a table must not
#: depend on load (the stored-run test)
WALL_FACTOR = 4.0


def wall_factor() -> float:
    """The wall-clock stop as a multiple of the work limit: ``PPVERIFY_WALL_FACTOR`` if set (a
    number >= 1), else :data:`WALL_FACTOR`. The commands that solve optimum rows (``compare``,
    ``sweep``, ``report``) call it once before any row, so a bad value is one line and exit code 2, never an
    error row kept in a store.

    Example:
        >>> wall_factor()
        4.0
        >>> os.environ["PPVERIFY_WALL_FACTOR"] = "abc"
        >>> wall_factor()
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter PPVERIFY_WALL_FACTOR=abc: the environment variable must be a number in 1..1e6 (unset: 4)
        >>> del os.environ["PPVERIFY_WALL_FACTOR"]
    """
    raw = os.environ.get("PPVERIFY_WALL_FACTOR")
    if raw is None:
        return WALL_FACTOR
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (1.0 <= value <= 1e6):
        raise ParameterError(
            "PPVERIFY_WALL_FACTOR", raw, f"the environment variable must be a number in 1..1e6 (unset: {WALL_FACTOR:g})"
        )
    return value


def wall_limit(work: float) -> float:
    """The wall-clock ceiling of one optimum solve of ``work`` deterministic seconds: what
    ``optimize`` takes by default (:func:`~ppverify.optimize.solver_run.wall_ceiling`), with
    :func:`wall_factor` as the factor: 4 x the work + 30 s for the Python phases (starting
    schedules, local search, periodic starts, model building) that CP-SAT's count leaves out.

    Example:
        >>> wall_limit(0.2)   # 4 x 0.2 + 30
        30.8
    """
    from ..optimize.solver_run import wall_ceiling

    return wall_ceiling(work, wall_factor())


#: grid resolution for second-valued costs: ticks per shortest op duration
GRID = 200
#: note prefix of a family whose ops the solver does not model (its gap compares unlike steps)
UNLIKE = "unlike ops"


@dataclass(frozen=True)
class GridComm:
    """A communication model whose transfer times are rounded down to whole ticks."""

    comm: CommModel
    tick: float

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        """Whole ticks of the wrapped model's time (rounded down)."""
        return float(math.floor(self.comm.transfer_time(src, dst, nbytes) / self.tick + 1e-9))


def on_grid(costs: CostModel, comm: CommModel, ticks_per_op: int = GRID) -> tuple[CostModel, CommModel, float]:
    """Integer-tick cost and communication models (durations rounded down) and the tick length.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.comm import FixedDelay
        >>> c = CostModel.abstract(linear(2), F=0.003, B=0.0061)
        >>> g, gc, tick = on_grid(c, FixedDelay(0.0011), 10)
        >>> g.duration["F"], g.duration["B"], gc.transfer_time(0, 1, 0), round(tick, 6)
        ((10.0, 10.0), (20.0, 20.0), 3.0, 0.0003)
    """
    positive = [x for k in ("F", "B", "I", "W") for x in costs.duration[k] if x > 0]
    tick = min(positive) / ticks_per_op
    dur = {k: tuple(max(1.0, float(math.floor(x / tick + 1e-9))) for x in v) for k, v in costs.duration.items()}
    return replace(costs, duration=dur, time_unit="ticks"), GridComm(comm, tick), tick


def solve_placement(
    schedule: Schedule, costs: CostModel, comm: CommModel, time_limit: float, memory_cap: float | None = None
) -> LevelResult:
    """Optimum (or bound) for ``schedule``'s placement, pipes and op kinds under ``costs``/``comm``,
    every device's activation memory at most ``memory_cap`` (the cost model's unit; ``None``:
    unlimited memory).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("1f1b", p=3, m=3)
        >>> r = solve_placement(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(1), 5.0)
        >>> r.status, r.makespan   # (m+p-1)(tF+tB) + 2(p-1)c = 15 + 4
        ('optimal', 19.0)
    """
    from ..engines import run
    from ..optimize import optimize, problem_for
    from ..optimize.problem import bound_time

    notes: list[str] = []  # the per-schedule "unlike ops" note is added by the caller (results are cached)
    grid = costs.time_unit == "s"
    if grid:
        gcosts, gcomm, tick = on_grid(costs, comm)
        notes.append(
            f"solved on a {tick * 1e6:.3g} µs grid (durations rounded down; makespan re-timed with true costs)"
        )
    else:
        gcosts, gcomm, tick = costs, comm, 1.0
    # the per-point limit is CP-SAT's deterministic work, so a loaded machine gives the same table;
    # the wall clock only stops a machine that is far slower than that work implies, and the row
    # then says so (its note, exact False): its value may differ on a less loaded machine
    r = optimize(
        problem_for(schedule, gcosts, gcomm, memory_cap),
        time_limit=wall_limit(time_limit),
        work_limit=time_limit,
        workers=WORKERS,
    )
    status = r.status.lower()
    # the product rounded toward -inf: a certified bound never reads above the exact optimum
    # (gpipe p=2 m=3 at F=0.01,B=0.02 s: 2400 ticks of 5e-05 s, exactly 0.12 s, are 0.12000000000000001 in floats)
    bound = bound_time(r.bound, tick) if math.isfinite(r.bound) else None
    cut = clock_cut(r)
    if r.objective is None or r.schedule is None:
        notes.insert(0, r.reason or cut or "no schedule within the time limit")
        return LevelResult(
            "optimum",
            "error" if status == "infeasible" else status,
            lower_bound=bound,
            note="; ".join(notes),
            memory_cap=memory_cap,
        )
    # the found order re-timed by the async engine on both paths: the solver's own timeline records
    # only collectives, so without this the page's optimum chart has no p2p transfers and calls an
    # input-in-flight wait "held back"
    tl: Timeline = run(r.schedule, costs, comm, semantics="async")
    makespan = float(tl.makespan)
    if grid:
        # the grid optimum is a bound only; the re-timed order is a real schedule
        status = (
            "optimal"
            if bound is not None and makespan <= bound * (1 + 1e-9)
            else ("optimal on grid" if status == "optimal" else status)
        )
    else:
        # same costs, same order: as-soon-as-possible timing is never later than the solver's
        objective = float(r.objective)
        assert makespan <= objective + 1e-9 * max(1.0, objective), (
            f"optimum: async re-timing {makespan} exceeds the solver's objective {objective}"
        )
    bubble = float(tl.bubble_ratio)
    peaks = tuple(float(x) for x in tl.peak_memory())
    return LevelResult(
        "optimum",
        status,
        makespan,
        bubble,
        peaks,
        bound,
        exact=status == "optimal" and not cut,
        note="; ".join(x for x in (r.reason or cut, *notes) if x),
        timeline=tl,
        memory_cap=memory_cap,
    )


def clock_cut(r: object) -> str:
    """What a solve's result says when the wall clock (or a stop event) cut a phase short, as the
    row's note puts it (``optimize``'s own words, :func:`~ppverify.optimize.solver_setup.cut_reason`);
    empty when nothing was cut: the row then does not depend on the machine's load.

    Example:
        >>> from types import SimpleNamespace
        >>> clock_cut(SimpleNamespace(solver={"wall_limited": "local search, search"}))
        'wall-clock limit reached in: local search, search'
        >>> clock_cut(SimpleNamespace(solver={"workers": 1}))
        ''
    """
    from ..optimize.solver_setup import cut_reason

    solver = getattr(r, "solver", {}) or {}
    if solver.get("wall_limited"):
        return cut_reason(str(solver["wall_limited"]).split(", "))
    if solver.get("interrupted"):
        return cut_reason(str(solver["interrupted"]).split(", "), interrupted=True)
    return ""


def unlike_ops(schedule: Schedule) -> str:
    """Why the solver's ops differ from the family's (overlapped F&B slots, a backward mixing ``B``
    with ``I``/``W``), as a note starting with :data:`UNLIKE`; empty when they are the same.

    Example:
        >>> from ppverify.schedules import build
        >>> unlike_ops(build("chimera", p=4, m=4)), unlike_ops(build("dualpipe", p=4, m=8))[:10]
        ('', 'unlike ops')
    """
    from ..core.ops import B, I, Overlap, compute_ops

    why = []
    if any(type(a) is Overlap for prog in schedule.programs for a in prog):
        why.append("overlapped F&B slots run in sequence")
    kinds = {op.kind for prog in schedule.programs for op in compute_ops(prog)}
    if B in kinds and I in kinds:
        why.append("every backward split into I + W")
    return f"{UNLIKE}: the solver's step differs ({', '.join(why)})" if why else ""
