"""Step 2 of 3 (solve) and the main entry point: :func:`optimize` (find the best schedule or a
proven bound). :mod:`.evaluate` fixes the program order instead (CP-SAT's makespan then equals
the async engine's); :mod:`.solver_setup` holds what both share. A family's makespan against the
certified bound is ``ppverify gap``, with :func:`~ppverify.optimize.relative_gap`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..core.errors import ParameterError
from .below import search_below
from .bounds import lower_bounds, work_bounds
from .coarse import block_candidates
from .deadline import Deadline, WallLimitReached
from .ending import search_windows
from .heuristic import Candidate, best_candidate, canonical_starts
from .interrupt import stoppable
from .localsearch import improve
from .model import build_model
from .periodic import periodic_candidates
from .problem import Problem, cap_infeasibility, instance
from .relax import relaxation_bound
from .result import CommonFields, OptimizeResult, relative_gap
from .solver_run import Progress
from .solver_setup import (
    STATUS,
    check_limits,
    collectives_text,
    cut_reason,
    cut_result,
    cut_stats,
    make_solver,
    schedule_from_starts,
    solver_stats,
)
from .tail import search_after_warmup, several_stages_per_device
from .zbheuristic import zb_candidates

#: share of the relaxation's budget tried before the search (all of it runs after an unproven one)
_RELAX_PROBE = 0.1
#: share of a point's work the unhinted search adds on several stages per device under a cap
#: (below.py)
UNHINTED_SHARE = 0.3
#: and the search of the step's end and windows through it (ending.py) these shares, after the others
ENDING_SHARE, MIDDLE_SHARE = 0.1, 0.4


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
) -> OptimizeResult:
    """Minimize the problem's objective with CP-SAT, starting from the best family or greedy
    schedule; returns the best schedule and a proven lower bound even on timeout.

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
    check_limits(time_limit, workers)
    if gap_limit is not None and not 0 <= gap_limit < 1:
        raise ParameterError("gap-limit", gap_limit, "must be a fraction in [0, 1), e.g. 0.01 for 1 %")
    if not 0 <= block_share <= 1:
        raise ParameterError("block_share", block_share, "must be a fraction in [0, 1]; 0 turns the blocks off")
    if not 0 <= tail_share <= 1:
        raise ParameterError("tail_share", tail_share, "must be a fraction in [0, 1]; 0 turns it off")
    dl = deadline if deadline is not None else Deadline.after(time_limit)
    t0 = dl.start
    cut: list[str] = []  # the phases the wall clock cut
    hard = dl.at(0.9)  # the last 10 % for the solver's answer and the result
    try:
        inst = instance(problem, deadline=hard)
    except WallLimitReached:
        return cut_result(problem, t0, time_limit, workers, seed)
    unit = problem.costs.time_unit
    tick = inst.tick
    if progress is not None:
        progress.phase("bounds")
    try:
        bounds = lower_bounds(inst, deadline=hard)
    except WallLimitReached:
        bounds = work_bounds(inst)
        cut.append("bounds")
    if progress is not None:
        progress.phase("starting schedules", bound=bounds.best * tick)
    common: CommonFields = dict(
        objective_name=problem.objective,
        bounds=bounds.as_dict(inst.tick),
        tick=inst.tick,
        exact=inst.exact,
        time_unit=unit,
        collectives=collectives_text(inst),
    )
    reason = cap_infeasibility(inst)
    if reason:
        return OptimizeResult(
            "INFEASIBLE",
            objective=None,
            bound=float("inf"),
            wall_s=time.monotonic() - t0,
            schedule=None,
            timeline=None,
            hint=None,
            hint_objective=None,
            reason=reason,
            **common,
        )
    work = float(time_limit if work_limit is None else work_limit)
    limits_note = {"workers": workers, "seed": seed, "time_limit_s": time_limit}
    if deterministic:
        limits_note.update(work_limit_s=work, deterministic=True)
    # the hint phase is bounded by counts (greedy rules, families, local-search moves); the clock
    # only cuts it on a machine too slow to finish them within most of the time limit
    safety = dl.at(0.8).end
    block_work = 0.0  # the work the modulo blocks took from the search's (modulo.py)
    best: Candidate | None = best_candidate(inst, use_families, deadline=safety, hard=hard.end) if hints else None
    second: Candidate | None = None
    if hints:  # the zero-bubble paper's heuristic (8 variants) too: the result is never worse than it
        start_cands = [c for c in (best, *zb_candidates(inst, hard.end)) if c is not None]
        if several_stages_per_device(inst):  # building blocks at an interval (periodic.py): V, loop under a cap
            start_cands += periodic_candidates(inst, safety)
            if inst.cap is not None and block_share > 0:  # blocks placed by CP-SAT (modulo.py, coarse.py)
                top = min((c.objective for c in start_cands), default=None)
                blocks, block_work = block_candidates(
                    inst, top, block_share * work, max(0.0, safety - time.monotonic()), dl.stop
                )
                start_cands += [c for c in blocks if top is None or c.objective < top]
        ranked = sorted(start_cands, key=lambda c: (c.objective, c.source))
        best = ranked[0] if ranked else None
        # the fastest start of another source: the windows through the step also run from it
        # where they find nothing from the best (see there)
        second = next((c for c in ranked[1:] if c.source != ranked[0].source), None)
    if hints and time.monotonic() > safety:
        cut.append("starting schedules")
    phase = "the starting schedules"
    start_floor = bounds.best if redundant_bounds else 0

    def gap_reached(value_ticks: int | None, bound_ticks: int) -> bool:
        # a schedule within the requested gap of a proven bound (no gap limit: never)
        return (
            gap_limit is not None
            and value_ticks is not None
            and (relative_gap(value_ticks, bound_ticks) or 0.0) <= gap_limit
        )

    if (
        best is not None
        and local_search
        and best.objective > start_floor
        and time.monotonic() < safety
        and not gap_reached(best.objective, start_floor)
    ):
        phase = "the local search"
        if progress is not None:
            progress.phase("local search", best.objective * tick)
        best = improve(inst, best, seed=seed, deadline=dl.at(0.5).end)
        if time.monotonic() > dl.at(0.5).end:
            cut.append("local search")
    hint = canonical_starts(inst, best.starts) if (best is not None and symmetry) else (best.starts if best else None)
    floor = bounds.best if redundant_bounds else 0

    def start_result(bound_ticks: int, note: dict, reason: str = "") -> OptimizeResult:
        # the starting schedule (if any) without search: OPTIMAL when it meets the bound, UNKNOWN
        # without one (``best``, ``hint`` and ``common`` read at the call)
        sched = tl = None
        value = best.objective if best is not None else None
        if value is not None and hint is not None:
            sched, tl = schedule_from_starts(inst, hint, "cp-sat")
        bound = bound_ticks if value is None else min(bound_ticks, value)
        return OptimizeResult(
            "UNKNOWN" if value is None else ("OPTIMAL" if bound >= value else "FEASIBLE"),
            objective=None if value is None else value * inst.tick,
            bound=bound * inst.tick,
            wall_s=time.monotonic() - t0,
            schedule=sched,
            timeline=tl,
            hint=best.source if best is not None else None,
            hint_objective=None if value is None else value * inst.tick,
            solver={**note, **limits_note, **cut_stats(cut, dl.stopped())},
            reason=reason,
            **common,
        )

    def hint_proven(proof: str) -> OptimizeResult:
        return start_result(best.objective if best is not None else 0, {"proof": proof})

    def within_gap(bound_ticks: int, cand: Candidate | None = None) -> bool:
        # the best start (or ``cand``) is already within the requested gap of the proven bound
        c = best if cand is None else cand
        return c is not None and c.objective > bound_ticks and gap_reached(c.objective, bound_ticks)

    def gap_met(bound_ticks: int, phase: str) -> OptimizeResult:
        # stopped within the gap limit before the search: the start and the bound so far
        note = {"stopped": f"within the gap limit after {phase}", "gap_limit": gap_limit}
        reason = f"within the gap limit {gap_limit:.4g} of the bound after {phase}; not searched further"
        return start_result(bound_ticks, note, reason)

    if best is not None and best.objective <= floor:
        # the hint meets the analytic bound: proven optimal without search
        return hint_proven("hint meets the analytic bound")
    if best is not None and hint is not None and within_gap(floor):
        return gap_met(floor, phase)
    analytic = bounds
    if redundant_bounds and relax_share > 0 and not hard.expired():
        # the one-device relaxation (relax.py): a small exact model per device, a share of the time.
        # Unless relax_first, only a probe (_RELAX_PROBE of that share) runs here: it often proves
        # the start optimal at once (unit costs, cap p*M_F, c=1 at (16,32): 0.1 deterministic s);
        # the rest runs after the search, and only when the search found no proof
        share = 1.0 if relax_first else _RELAX_PROBE
        budget = min(share * relax_share * time_limit, 0.5 * hard.remaining())
        if progress is not None:
            progress.phase("device relaxation", best.objective * tick if best else None)
        relax_best, relax_per = relaxation_bound(
            inst, bounds, max(0.0, budget), workers, seed, share * relax_share * work, deterministic, dl.stop
        )
        bounds = replace(
            bounds,
            device_relaxation=relax_best,
            per_device=tuple(max(a, b) for a, b in zip(bounds.per_device, relax_per)),
        )
        common["bounds"] = bounds.as_dict(inst.tick)
        if best is not None and best.objective <= bounds.best:
            return hint_proven("hint meets the device-relaxation bound")
        if best is not None and hint is not None and within_gap(bounds.best):
            return gap_met(bounds.best, "the device relaxation")
        # reported and kept as the floor, but not posted: the search proves faster on the analytic
        # bounds alone (unit costs, cap p*M_F, c=1 at (16,64): optimal at 3.9 deterministic s
        # without, not within 10.5 with the relaxation's per-device floors)
        floor = max(floor, bounds.best)
    elif redundant_bounds and relax_share > 0:
        cut.append("device relaxation")
    # the memory-cycle bound stays out of the model (bounds.py): a floor only, like the relaxation's
    used_bounds = replace(analytic, memory_cycle=0) if redundant_bounds else bounds.unposted()
    search_work = max(0.01, (work * (1 - relax_share) if redundant_bounds else work) - block_work)
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
    unhinted_work = UNHINTED_SHARE * work if unhinted else 0.0
    tail_best: Candidate | None = None
    if (
        best is not None
        and hint is not None
        and tail_share > 0
        and several_stages_per_device(inst)
        and not hard.expired()
    ):
        # placements with several stages per device: the search on the whole model rarely moves
        # the start; the rest of the step after its warm-up does (tail.py). The search below
        # still starts from the same start with its whole budget, so what it finds or proves is
        # what it did without this step; the better of the two is kept
        if progress is not None:
            progress.phase("search after the warm-up", best.objective * tick, floor * tick)
        tail_best = search_after_warmup(
            inst,
            used_bounds,
            best,
            hint,
            min(tail_share * time_limit, hard.remaining()),
            tail_share * search_work,
            workers,
            seed,
            gap_limit,
            symmetry,
            deterministic,
            progress,
        )
        if hard.expired():
            cut.append("search after the warm-up")
        if tail_best is not None and (tail_best.objective <= floor or within_gap(floor, tail_best)):
            best, hint = tail_best, tail_best.starts  # (start_result reads them)
            if best.objective <= floor:
                return hint_proven("the search after the warm-up meets the bound")
            return gap_met(floor, "the search after the warm-up")
    try:
        built = build_model(
            inst, used_bounds, hint=hint, upper=best.objective if best else None, symmetry=symmetry, deadline=hard
        )
    except WallLimitReached:
        built = None
        cut.append("model building")
    if built is None or hard.remaining() < 0.01:
        # no time left to search: the best schedule and bound found so far
        if built is not None:
            cut.append("search")
        return start_result(floor, {}, cut_reason(cut, dl.stopped()))
    tail_note: dict[str, str] = {}
    solver = make_solver(hard.remaining(), workers, seed, search_work, deterministic)
    if gap_limit is not None:
        solver.parameters.relative_gap_limit = float(gap_limit)  # CP-SAT's gap is ours: (value - bound) / value
    callback = None
    if progress is not None:
        progress.phase("search", best.objective * tick if best else None, floor * tick)
        callback = progress.search_callback(tick)
        progress.watch_bound(solver, tick)
    with stoppable(solver):  # Ctrl-C / SIGTERM stop it (interrupt.py)
        code = solver.solve(built.model, callback)
    if hard.expired():
        cut.append("search")
    status = cp_status = STATUS.get(code, "UNKNOWN")
    solver_bound = solver.best_objective_bound if status in ("OPTIMAL", "FEASIBLE", "UNKNOWN") else None
    # without redundant bounds (plain CP-SAT) only what the solver proved is reported
    bound_ticks = max(
        floor, int(np.ceil(solver_bound - 1e-9)) if solver_bound is not None and np.isfinite(solver_bound) else 0
    )
    starts: list[int] | None = None
    value: int | None = None
    if status in ("OPTIMAL", "FEASIBLE"):
        starts = [solver.value(v) for v in built.start]
        value = round(solver.objective_value)
    if best is not None and (value is None or best.objective < value):
        assert hint is not None  # set together with best (above)
        starts, value = list(hint), best.objective
    if status == "INFEASIBLE" and best is None:
        return OptimizeResult(
            "INFEASIBLE",
            objective=None,
            bound=float("inf"),
            wall_s=time.monotonic() - t0,
            schedule=None,
            timeline=None,
            hint=None,
            hint_objective=None,
            reason="CP-SAT proved that no schedule meets the constraints",
            solver=solver_stats(solver, workers, seed, time_limit, cp_status),
            **common,
        )
    if value is not None and status == "INFEASIBLE":
        # the cut `objective <= hint` was infeasible below the hint: the hint is optimal
        bound_ticks = value
    if (
        unhinted
        and value is not None
        and bound_ticks < value
        and not gap_reached(value, bound_ticks)
        and not hard.expired()
    ):
        below = search_below(
            inst, used_bounds, value, hard.remaining(), unhinted_work, workers, seed, symmetry,
            deterministic, gap_limit,
        )  # fmt: skip
        if hard.expired():
            cut.append("unhinted search")
        bound_ticks = max(bound_ticks, below.bound)
        if below.value is not None and below.starts is not None:
            starts, value = below.starts, below.value
            tail_note = {"unhinted": "the unhinted search found the schedule"}
    if tail_best is not None and (value is None or tail_best.objective < value):
        starts, value = tail_best.starts, tail_best.objective
        tail_note = {"after_warmup": "the search after the warm-up found the schedule"}
    if (
        unhinted
        and starts is not None
        and value is not None
        and not gap_reached(value, bound_ticks)
        and not hard.expired()
    ):
        # the same points: their best schedule is often periodic, and its end is what the
        # searches above leave (ending.py: V, p = 8, m = 24, budget 4: 85.5 -> 84.5 in 0.1 CPU s)
        if progress is not None:
            progress.phase("search of the step's end", value * tick, bound_ticks * tick)
        # from the best start, then, where the windows find nothing there, from the fastest start
        # of another source: a slower start can leave them more to move (V, p = 8, m = 24, delay 1,
        # budget 5: nothing from two microbatches per 10 units, 158.5; 155.5 from one per 5, 159.5)
        origins: list[tuple[Sequence[int], int]] = [(starts, value)]
        if second is not None:
            origins.append((canonical_starts(inst, second.starts) if symmetry else second.starts, second.objective))
        ending = None
        for from_starts, from_value in origins:
            if hard.expired():
                break
            found = search_windows(
                inst, used_bounds, from_starts, from_value, hard, ENDING_SHARE * work, MIDDLE_SHARE * work, seed,
                symmetry, deterministic,
            )  # fmt: skip
            if found is not None and found.objective < value:
                ending = found
                break
        if hard.expired():
            cut.append("search of the step's end")
        if ending is not None:
            starts, value = ending.starts, ending.objective
            where = "the step's end" if ending.source == "end" else "windows through the step"
            tail_note = {"ending": f"the search of {where} found the schedule"}
    searched_within_gap = gap_reached(value, bound_ticks)
    if (
        value is not None
        and bound_ticks < value
        and redundant_bounds
        and relax_share > 0
        and not relax_first
        and not searched_within_gap
    ):
        # no proof from the search: the one-device relaxation may still raise the bound.
        # It runs after the search so that a proof by search costs nothing more (unit costs, cap
        # p*M_F, c=1 at (16,64): 20 of 38 CPU seconds went to a relaxation the proof did not need)
        if hard.expired():
            cut.append("device relaxation")
        else:
            # the whole share again from the analytic bounds, not the rest of it after the probe's:
            # the same bound as a relaxation run first
            wall = max(0.0, min(relax_share * time_limit, hard.remaining()))
            if progress is not None:
                progress.phase("device relaxation", value * tick, bound_ticks * tick)
            relax_best, relax_per = relaxation_bound(
                inst, analytic, wall, workers, seed, relax_share * work, deterministic, dl.stop
            )
            bounds = replace(
                bounds,
                device_relaxation=max(bounds.device_relaxation, relax_best),
                per_device=tuple(max(a, b) for a, b in zip(bounds.per_device, relax_per)),
            )
            common["bounds"] = bounds.as_dict(inst.tick)
            bound_ticks = max(bound_ticks, bounds.best)
    if value is not None:
        bound_ticks = min(bound_ticks, value)
        status = "OPTIMAL" if bound_ticks >= value else "FEASIBLE"
        if progress is not None:
            progress.phase("done", value * tick, bound_ticks * tick)
    sched = tl = None
    if starts is not None:
        sched, tl = schedule_from_starts(inst, starts, "cp-sat")
    stats = solver_stats(solver, workers, seed, time_limit, cp_status)
    stats.update(limits_note)
    stats.update(cut_stats(cut, dl.stopped()))
    stats.update(tail_note)
    reason = cut_reason(cut, dl.stopped()) if status != "OPTIMAL" else ""
    if status == "FEASIBLE" and gap_reached(value, bound_ticks):
        stats.update(stopped="within the gap limit during the search", gap_limit=gap_limit)
        reason = f"within the gap limit {gap_limit:.4g} of the bound during the search"
    return OptimizeResult(
        status,
        objective=None if value is None else value * inst.tick,
        bound=bound_ticks * inst.tick,
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
