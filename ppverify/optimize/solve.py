"""Step 2 of 3 (solve) and the main entry point: :func:`optimize` (find the best schedule or a
proven bound). :mod:`.evaluate` fixes the program order instead (CP-SAT's makespan then equals
the async engine's); :mod:`.solver_setup` holds what both share. A family's makespan against the
certified bound is ``ppverify gap``, with :func:`~ppverify.optimize.relative_gap`.

:func:`optimize` runs its phases in turn, each able to end the run with a proof, the requested gap
or the clock: the instance and its analytic bounds, the starting schedules (:mod:`.starts`) and the
local search, a probe of the one-device relaxation, the search after the warm-up, the CP-SAT search
(build, solve, read), the unhinted search and the search of the step's end, the rest of the
relaxation, and the result.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..core.errors import ParameterError
from ..core.schedule import Schedule
from .below import search_below
from .bounds import lower_bounds, work_bounds
from .cap_text import cap_infeasibility
from .deadline import Deadline, WallLimitReached
from .heuristic import Candidate, canonical_starts
from .phases import (
    Run,
    cp_search,
    gap_met,
    improved,
    infeasible_result,
    proven,
    relaxed,
    search_ending,
    start_result,
)
from .problem import Problem, instance
from .result import CommonFields, OptimizeResult
from .solver_run import Progress
from .solver_setup import (
    as_soon_as_possible,
    check_limits,
    collectives_text,
    cut_reason,
    cut_result,
    cut_stats,
    schedule_from_starts,
    solver_stats,
    true_timed,
)
from .starts import Starts, starting_schedules
from .tail import search_after_warmup, several_stages_per_device

#: share of the relaxation's budget tried before the search (all of it runs after an unproven one)
_RELAX_PROBE = 0.1
#: share of a point's work the unhinted search adds on several stages per device under a cap
#: (below.py)
UNHINTED_SHARE = 0.3


def _true_times(search: Callable[..., OptimizeResult]) -> Callable[..., OptimizeResult]:
    """Every result of ``search`` with its schedule timed at the true durations where the ticks
    were rounded (:func:`~ppverify.optimize.solver_setup.true_timed`): what ``simulate`` gives
    the saved schedule, on every path that returns one."""

    @functools.wraps(search)
    def timed(problem: Problem, *args: Any, **kwargs: Any) -> OptimizeResult:
        return true_timed(problem, search(problem, *args, **kwargs))

    return timed


@_true_times
def optimize(
    problem: Problem,
    time_limit: float = 60.0,
    workers: int = 2,
    seed: int = 0,
    use_families: bool = True,
    symmetry: bool = True,
    redundant_bounds: bool = True,
    relax_share: float = 0.3,
    block_share: float = 0.2,
    hints: bool = True,
    work_limit: float | None = None,
    local_search: bool = True,
    deadline: Deadline | None = None,
    relax_first: bool = False,
    gap_limit: float | None = None,
    tail_share: float = 0.1,
    deterministic: bool = False,
    progress: Progress | None = None,
    start: Schedule | None = None,
) -> OptimizeResult:
    """Minimize the problem's objective with CP-SAT, starting from the best family or greedy
    schedule (or ``start``, a schedule of the problem, where it is faster: ``optimize FILE`` never
    ends slower than its file within the cap); returns the best schedule and a proven lower bound
    even on timeout.

    ``symmetry``/``redundant_bounds``/``hints`` switch off the model-strength constraints and the
    starting schedules (to measure what they bring; all off is plain CP-SAT); the analytic
    bounds are still reported. ``relax_share`` of the time limit goes to the
    one-device relaxation bound (:mod:`.relax`): a tenth of it as a probe before the search (it
    may prove the starting schedule optimal), all of it only when the search ends without proving
    its schedule optimal (``relax_first``: all of it before the search; the search does not use
    that bound, so its schedule is the same either way, but a proof by search then also pays for
    the relaxation).

    ``work_limit`` bounds the solver by CP-SAT's deterministic time (default ``time_limit``): the
    relaxation and the search stop on that work count, so results do not depend on machine load;
    ``time_limit`` stays a wall-clock stop. ``local_search`` improves the starting schedule first
    (:mod:`.localsearch`, a fixed count of evaluations).

    ``deadline`` (:mod:`.deadline`; default ``time_limit`` from the call) bounds the whole run,
    model building and bounds included: each phase stops at its share of it, the solver gets
    what is left, and a phase the clock cut is named in ``reason`` and
    ``solver["wall_limited"]`` (the result then has the best schedule and bound found so far).

    On placements with several stages per device under a cap, blocks of one or two microbatches
    placed by CP-SAT and repeated at an interval (:mod:`.modulo`) are starts too, with
    at most ``block_share`` of the work (what they use is taken from the search's; 0 turns them
    off).

    On placements with several stages per device a search of the rest of the step with the
    start's warm-up kept (:mod:`.tail`) runs first, with ``tail_share`` of the search's work and
    of the time limit on top of the search's own (0 turns it off); the search then runs from the
    same start as without it, and the better schedule of the two is kept.

    ``gap_limit`` (a fraction: 0.01 = 1 %) ends the run as soon as the best schedule is within
    that relative gap of the proven bound (:func:`~ppverify.optimize.relative_gap`): checked after
    the starting schedules, after the local search and after the relaxation probe, and passed to
    CP-SAT (its ``relative_gap_limit``, the same definition); the result is then FEASIBLE (or
    OPTIMAL) with ``solver["stopped"]`` naming the phase. None (the default): search to the limits.

    ``deterministic``: several workers search in a fixed order too (:mod:`.solver_run`), so that
    a run the wall clock does not cut gives the same result at any load. ``progress``
    (:class:`~ppverify.optimize.solver_run.Progress`) is told each phase, incumbent and bound as
    they change. A ``deadline`` with a stop event that is set (Ctrl-C) ends the run as the clock
    would: the best schedule and bound so far, with ``reason`` and ``solver["interrupted"]``
    naming the phases cut.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.costs import CostModel
        >>> pl = linear(3)
        >>> r = optimize(Problem(pl, 4, CostModel.abstract(pl, F=1, B=2), FixedDelay(1), split=False), time_limit=10)
        >>> r.status, r.objective, r.bound  # (m+p-1)(tF+tB) + 2(p-1)c = 18 + 4
        ('OPTIMAL', 22.0, 22.0)
    """
    check_limits(time_limit, workers, seed)
    if gap_limit is not None and not 0 <= gap_limit < 1:
        raise ParameterError("gap-limit", gap_limit, "must be a fraction in [0, 1), e.g. 0.01 for 1 %")
    if not 0 <= block_share <= 1:
        raise ParameterError("block_share", block_share, "must be a fraction in [0, 1]; 0 turns the blocks off")
    if not 0 <= tail_share <= 1:
        raise ParameterError("tail_share", tail_share, "must be a fraction in [0, 1]; 0 turns it off")
    dl = deadline if deadline is not None else Deadline.after(time_limit)
    t0 = dl.start
    hard = dl.at(0.9)  # the last 10 % for the solver's answer and the result
    cut: list[str] = []  # the phases the wall clock cut

    # the instance and its analytic bounds
    try:
        inst = instance(problem, deadline=hard)
    except WallLimitReached:
        return cut_result(problem, t0, time_limit, workers, seed)
    if progress is not None:
        progress.phase("bounds")
    try:
        bounds = lower_bounds(inst, deadline=hard)
    except WallLimitReached:
        bounds = work_bounds(inst)
        cut.append("bounds")
    if progress is not None:
        progress.phase("starting schedules", bound=inst.bound_time(bounds.best))
    common: CommonFields = dict(
        objective_name=problem.objective,
        bounds=bounds.as_dict(inst.tick),
        tick=inst.tick,
        exact=inst.exact,
        time_unit=problem.costs.time_unit,
        collectives=collectives_text(inst),
        memory_cap=problem.memory_cap,
    )
    reason = cap_infeasibility(inst)
    if reason:
        return infeasible_result(t0, common, reason)
    work = float(time_limit if work_limit is None else work_limit)
    limits_note: dict[str, Any] = {"workers": workers, "seed": seed, "time_limit_s": time_limit}
    if deterministic:
        limits_note.update(work_limit_s=work, deterministic=True)
    run = Run(
        inst, dl, hard, time_limit, work, workers, seed, symmetry, deterministic, gap_limit, progress, common,
        limits_note, cut,
    )  # fmt: skip

    # the starting schedules, the best improved by the local search: the search's hint
    safety = dl.at(0.8).end  # the clock cuts the counted phases only on a machine too slow for them
    starts = (
        starting_schedules(inst, use_families, block_share, work, safety, hard.end, dl.stop, start)
        if hints
        else Starts(None, None, 0.0, False)
    )
    if starts.cut:
        cut.append("starting schedules")
    best, second = starts.best, starts.second
    floor = bounds.best if redundant_bounds else 0
    phase = "the starting schedules"
    if local_search:
        best, phase = improved(run, best, floor, safety)
    hint = canonical_starts(inst, best.starts) if (best is not None and symmetry) else (best.starts if best else None)
    if best is not None and best.objective <= floor:
        return proven(run, best, hint, "hint meets the analytic bound")
    if best is not None and hint is not None and run.within_gap(best, floor):
        return gap_met(run, best, hint, floor, phase)

    # a probe of the one-device relaxation (relax.py): a small exact model per device. Unless
    # relax_first, only _RELAX_PROBE of its share runs here: it often proves the start optimal at
    # once (unit costs, cap p*M_F, c=1 at (16,32): 0.1 deterministic s); the rest runs after the
    # search, and only when the search found no proof
    analytic = bounds
    if redundant_bounds and relax_share > 0 and not hard.expired():
        share = 1.0 if relax_first else _RELAX_PROBE
        budget = min(share * relax_share * time_limit, 0.5 * hard.remaining())
        run.phase("device relaxation", best.objective if best else None)
        bounds = relaxed(run, bounds, bounds, max(0.0, budget), share * relax_share * work)
        if best is not None and best.objective <= bounds.best:
            return proven(run, best, hint, "hint meets the device-relaxation bound")
        if best is not None and hint is not None and run.within_gap(best, bounds.best):
            return gap_met(run, best, hint, bounds.best, "the device relaxation")
        # reported and kept as the floor, but not posted: the search proves faster on the analytic
        # bounds alone (unit costs, cap p*M_F, c=1 at (16,64): optimal at 3.9 deterministic s
        # without, not within 10.5 with the relaxation's per-device floors)
        floor = max(floor, bounds.best)
    elif redundant_bounds and relax_share > 0:
        cut.append("device relaxation")
    # the memory-cycle bound stays out of the model (bounds.py): a floor only, like the relaxation's
    used_bounds = replace(analytic, memory_cycle=0) if redundant_bounds else bounds.unposted()
    search_work = max(0.01, (work * (1 - relax_share) if redundant_bounds else work) - starts.block_work)
    # several stages per device under a cap, one pipe: an unhinted search (below.py) after the
    # hinted one, with work of its own (the blocks may leave the hinted search 0.01, and a
    # periodic hint holds it: V, p = 4, m = 12, delay 1, budget 3 stayed at 64.5, 62.5 unhinted);
    # the hinted search runs as before, so no result is worse than without it
    unhinted = (
        hint is not None
        and inst.cap is not None
        and several_stages_per_device(inst)
        and inst.problem.placement.num_pipes == 1
    )

    # placements with several stages per device: the search on the whole model rarely moves the
    # start; the rest of the step after its warm-up does (tail.py). The search below still starts
    # from the same start with its whole budget, so what it finds or proves is what it did
    # without this step; the better of the two is kept
    tail_best: Candidate | None = None
    if (
        best is not None
        and hint is not None
        and tail_share > 0
        and several_stages_per_device(inst)
        and not hard.expired()
    ):
        run.phase("search after the warm-up", best.objective, floor)
        tail_best = search_after_warmup(
            inst, used_bounds, best, hint, min(tail_share * time_limit, hard.remaining()), tail_share * search_work,
            workers, seed, gap_limit, symmetry, deterministic, progress,
        )  # fmt: skip
        if hard.expired():
            cut.append("search after the warm-up")
        if tail_best is not None and (tail_best.objective <= floor or run.within_gap(tail_best, floor)):
            if tail_best.objective <= floor:
                return proven(run, tail_best, tail_best.starts, "the search after the warm-up meets the bound")
            return gap_met(run, tail_best, tail_best.starts, floor, "the search after the warm-up")

    # the CP-SAT search from the hint
    searched = cp_search(run, used_bounds, best, hint, floor, search_work)
    if searched is None:  # no time left to search: the best schedule and bound found so far
        return start_result(run, best, hint, floor, {}, cut_reason(cut, dl.stopped()))
    solver, cp_status = searched.solver, searched.status
    status, bound_ticks, starts_found, value = cp_status, searched.bound, searched.starts, searched.value
    if status == "INFEASIBLE" and best is None:
        stats = solver_stats(solver, workers, seed, time_limit, cp_status)
        return infeasible_result(t0, common, "CP-SAT proved that no schedule meets the constraints", solver=stats)

    # the searches that may still move the schedule: unhinted, after the warm-up, the step's end
    tail_note: dict[str, str] = {}
    if (
        unhinted
        and value is not None
        and bound_ticks < value
        and not run.gap_reached(value, bound_ticks)
        and not hard.expired()
    ):
        below = search_below(
            inst, used_bounds, value, hard.remaining(), UNHINTED_SHARE * work, workers, seed, symmetry,
            deterministic, gap_limit,
        )  # fmt: skip
        if hard.expired():
            cut.append("unhinted search")
        bound_ticks = max(bound_ticks, below.bound)
        if below.value is not None and below.starts is not None:
            starts_found, value = below.starts, below.value
            tail_note = {"unhinted": "the unhinted search found the schedule"}
    if tail_best is not None and (value is None or tail_best.objective < value):
        starts_found, value = tail_best.starts, tail_best.objective
        tail_note = {"after_warmup": "the search after the warm-up found the schedule"}
    if (
        unhinted
        and starts_found is not None
        and value is not None
        and not run.gap_reached(value, bound_ticks)
        and not hard.expired()
    ):
        # the same points: their best schedule is often periodic, and its end is what the
        # searches above leave (ending.py: V, p = 8, m = 24, budget 4: 85.5 -> 84.5 in 0.1 CPU s).
        # From the best start, then, where the windows find nothing there, from the fastest start
        # of another source: a slower start can leave them more to move (V, p = 8, m = 24, delay 1,
        # budget 5: nothing from two microbatches per 10 units, 158.5; 155.5 from one per 5, 159.5)
        run.phase("search of the step's end", value, bound_ticks)
        origins: list[tuple[Sequence[int], int]] = [(starts_found, value)]
        if second is not None:
            origins.append((canonical_starts(inst, second.starts) if symmetry else second.starts, second.objective))
        ending = search_ending(run, used_bounds, origins, value)
        if hard.expired():
            cut.append("search of the step's end")
        if ending is not None:
            starts_found, value = ending.starts, ending.objective
            where = "the step's end" if ending.source == "end" else "windows through the step"
            tail_note = {"ending": f"the search of {where} found the schedule"}

    # no proof from the search: the one-device relaxation may still raise the bound. It runs after
    # the search so that a proof by search costs nothing more (unit costs, cap p*M_F, c=1 at
    # (16,64): 20 of 38 CPU seconds went to a relaxation the proof did not need)
    if (
        value is not None
        and bound_ticks < value
        and redundant_bounds
        and relax_share > 0
        and not relax_first
        and not run.gap_reached(value, bound_ticks)
    ):
        if hard.expired():
            cut.append("device relaxation")
        else:
            # the whole share again from the analytic bounds, not the rest of it after the probe's:
            # the same bound as a relaxation run first
            wall = max(0.0, min(relax_share * time_limit, hard.remaining()))
            run.phase("device relaxation", value, bound_ticks)
            bounds = relaxed(run, bounds, analytic, wall, relax_share * work)
            bound_ticks = max(bound_ticks, bounds.best)

    # the result: the schedule's time is its order's ASAP timing (a FEASIBLE solver timeline may
    # hold slack that simulate of the saved schedule would not show)
    if starts_found is not None and value is not None:
        starts_found, value = as_soon_as_possible(inst, starts_found, value)
    if value is not None:
        bound_ticks = min(bound_ticks, value)
        status = "OPTIMAL" if bound_ticks >= value else "FEASIBLE"
        run.phase("done", value, bound_ticks)
    sched = tl = None
    if starts_found is not None:
        sched, tl = schedule_from_starts(inst, starts_found, "cp-sat")
    stats = solver_stats(solver, workers, seed, time_limit, cp_status)
    stats.update(limits_note)
    stats.update(cut_stats(cut, dl.stopped()))
    stats.update(tail_note)
    reason = cut_reason(cut, dl.stopped()) if status != "OPTIMAL" else ""
    if status == "FEASIBLE" and run.gap_reached(value, bound_ticks):
        stats.update(stopped="within the gap limit during the search", gap_limit=gap_limit)
        reason = f"within the gap limit {gap_limit:.4g} of the bound during the search"
    return OptimizeResult(
        status,
        objective=None if value is None else value * inst.tick,
        bound=inst.bound_time(bound_ticks),
        wall_s=time.monotonic() - t0,
        schedule=sched,
        timeline=tl,
        hint=best.source if best else None,
        hint_objective=best.objective * inst.tick if best else None,
        solver=stats,
        reason=reason,
        **common,
    )


__all__ = ["optimize"]
