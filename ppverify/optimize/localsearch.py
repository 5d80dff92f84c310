"""Local search on the starting schedule, bounded by a count of evaluations (never by the clock, so
the result does not depend on machine load).

Two neighbourhoods, each move timed exactly by the shared program-order engine
(:func:`.heuristic.time_programs`) or the greedy list scheduler (:func:`.heuristic.greedy`):

* **greedy limits**: the greedy rule of the best start is re-run with per-device limits on open
  forwards (forwards whose gradient op has not run), changed one device at a time by ±1 and ±2
  from the most each device held in the best schedule so far (coordinate descent). The limits
  decide the warm-up depth per device, which is what separates ZB-H1, ZB-H2 and interleaved
  schedules.
* **adjacent swaps**: two neighbouring ops of one device's program trade places; a move is kept
  when the objective, then the sum of the devices' last ends, strictly decreases (the second key
  lets moves that shorten a non-critical device count, so later moves can shorten the step).
  Moves that deadlock or break the memory cap are rejected.

Both only ever keep a schedule at least as good as the one they started from.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from ..core.errors import PPVerifyError
from ..core.ops import B, F, I, Op
from .heuristic import Candidate, greedy, memory_ok, position_map, time_programs
from .problem import Instance
from .variants import greedy_rules


def open_forward_peaks(programs: Sequence[Sequence[Op]]) -> list[int]:
    """Per device, the most forwards open at once (started, gradient op not yet run) in program
    order.

    Example:
        >>> from ppverify.schedules import build
        >>> open_forward_peaks(build("1f1b", p=3, m=6).programs)
        [3, 2, 1]
    """
    out = []
    for prog in programs:
        level = peak = 0
        for op in prog:
            level += 1 if op.kind == F else (-1 if op.kind in (I, B) else 0)
            peak = max(peak, level)
        out.append(max(1, peak))
    return out


def _key(inst: Instance, cand: Candidate) -> tuple[int, int]:
    ends = [s + d for s, d in zip(cand.starts, inst.dur)]
    lasts = sum(max((ends[i] for i in inst.device_ops(d)), default=0) for d in range(inst.p))
    return cand.objective, lasts


def tune_greedy(
    inst: Instance, start: Candidate, max_evals: int = 120, deadline: float | None = None, stop: Any = None
) -> Candidate:
    """Coordinate descent on the greedy's per-device open-forward limits (module doc), starting
    from ``start``'s peaks, for each greedy priority rule; at most ``max_evals`` greedy runs.
    Returns ``start`` unless something strictly better was found. ``deadline``
    (``time.monotonic()``) is a safety stop for machines too slow to finish the count; ``stop``
    (an event: Ctrl-C, SIGTERM) ends it between runs.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(4)
        >>> inst = instance(Problem(pl, 8, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=2))
        >>> g = greedy(inst, "GFW", False, [2, 2, 2, 2])
        >>> tune_greedy(inst, g, 40).objective <= g.objective
        True
    """
    best = start
    evals = 0
    variants = [(prio, look, wait) for prio, look, _, wait in greedy_rules(inst)]
    variants = list(dict.fromkeys(variants))[:4]
    for prio, look, wait in variants:
        limits = open_forward_peaks(best.programs)
        improved = True
        while improved and evals < max_evals:
            improved = False
            for d in range(inst.p):
                for delta in (-1, 1, -2, 2):
                    if evals >= max_evals or _late(deadline, stop):
                        evals = max_evals
                        break
                    trial = list(limits)
                    trial[d] = max(1, trial[d] + delta)
                    if trial == limits:
                        continue
                    evals += 1
                    c = greedy(inst, prio, look, trial, wait)
                    if c is not None and _key(inst, c) < _key(inst, best):
                        best = Candidate(f"{start.source}+tuned", c.programs, c.starts, c.objective)
                        limits = trial
                        improved = True
                        break
    return best


def swap_search(
    inst: Instance,
    start: Candidate,
    max_evals: int = 300,
    seed: int = 0,
    deadline: float | None = None,
    stop: Any = None,
) -> Candidate:
    """Adjacent-swap descent on the program orders (module doc), ``max_evals`` timed moves drawn
    with a seeded generator (same seed, same result). Returns ``start`` unless something strictly
    better was found.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.schedules import build
        >>> pl = linear(3)
        >>> inst = instance(Problem(pl, 3, CostModel.abstract(pl, F=1, B=2), FixedDelay(1), split=False))
        >>> g = time_programs(inst, build("gpipe", p=3, m=3).programs)
        >>> swap_search(inst, g, 200).objective <= g.objective
        True
    """
    rng = random.Random(seed)
    pos = position_map(inst)
    best = start
    best_key = _key(inst, best)
    programs = [list(p) for p in best.programs]
    devices = [d for d in range(inst.p) if len(programs[d]) > 1]
    if not devices:
        return best
    for _ in range(max_evals):
        if _late(deadline, stop):
            break
        ends = [s + d for s, d in zip(best.starts, inst.dur)]
        # favour the devices that end last: they decide the makespan
        weights = [1 + max((ends[pos[o]] for o in programs[d]), default=0) for d in devices]
        d = rng.choices(devices, weights)[0]
        k = rng.randrange(len(programs[d]) - 1)
        a, b = programs[d][k], programs[d][k + 1]
        if a.mb == b.mb or (a.kind == b.kind and a.stage == b.stage):
            continue  # a dependency or the microbatch order of a group: the swap cannot help
        programs[d][k], programs[d][k + 1] = b, a
        try:
            ok = memory_ok(inst, [programs[d]])
            c = time_programs(inst, programs, best.source) if ok else None
        except PPVerifyError:
            c = None
        if c is not None and _key(inst, c) < best_key:
            best = Candidate(
                f"{start.source}+swaps" if "+swaps" not in start.source else start.source,
                c.programs,
                c.starts,
                c.objective,
            )
            best_key = _key(inst, best)
        else:
            programs[d][k], programs[d][k + 1] = a, b
    return best


def improve(
    inst: Instance,
    start: Candidate,
    max_evals: int = 400,
    seed: int = 0,
    deadline: float | None = None,
    stop: Any = None,
) -> Candidate:
    """Greedy-limit tuning, then adjacent swaps, sharing ``max_evals`` evaluations (fewer on large
    instances: each costs time linear in the ops); never worse than ``start``. Both stop at
    ``deadline`` (``time.monotonic()``) or once ``stop`` (an event) is set.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), split=True))
        >>> g = greedy(inst)
        >>> improve(inst, g).objective <= g.objective
        True
    """
    # keep the work near 3e6 op-evaluations whatever the size (a count, not a clock)
    evals = max(8, min(max_evals, 3_000_000 // max(1, inst.dag.num_ops)))
    best = tune_greedy(inst, start, evals // 3, deadline, stop) if _is_greedy(start) else start
    return swap_search(inst, best, evals - evals // 3, seed, deadline, stop)


def _late(deadline: float | None, stop: Any = None) -> bool:
    return (deadline is not None and time.monotonic() > deadline) or (stop is not None and stop.is_set())


def _is_greedy(c: Candidate) -> bool:
    return c.source.startswith("greedy")
