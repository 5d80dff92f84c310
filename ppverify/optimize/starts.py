"""The starting schedules of :func:`~ppverify.optimize.optimize`'s search: the best of the greedy
rules and the registered families, the zero-bubble paper's heuristic (8 variants), and on placements
with several stages per device the building blocks at an interval (:mod:`.periodic`; under a cap,
blocks placed by CP-SAT too, :mod:`.modulo` and :mod:`.coarse`). The search is hinted with the
fastest, so its result is never slower than any of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .coarse import block_candidates
from .heuristic import Candidate, best_candidate
from .periodic import periodic_candidates
from .problem import Instance
from .tail import several_stages_per_device
from .zbheuristic import zb_candidates


@dataclass(frozen=True)
class Starts:
    """What the starting schedules gave: the fastest (``best``; None: none is feasible), the fastest
    of another source (``second``: the windows through the step run from it too where they find
    nothing from the best), the deterministic work the CP-SAT blocks took from the search's
    (``block_work``), and whether the clock cut the phase (``cut``).

    Example:
        >>> Starts(None, None, 0.0, False).best is None
        True
    """

    best: Candidate | None
    second: Candidate | None
    block_work: float
    cut: bool


def starting_schedules(
    inst: Instance,
    use_families: bool = True,
    block_share: float = 0.2,
    work: float = 1.0,
    safety: float | None = None,
    hard: float | None = None,
    stop: Any = None,
) -> Starts:
    """Every starting schedule of the search, ranked by makespan (then source).

    The phase is bounded by counts (greedy rules, families, heuristic variants, intervals); the
    clock only cuts it on a machine too slow to finish them: no further variant starts once
    ``time.monotonic()`` passes ``safety``, and none runs past ``hard``. The CP-SAT blocks get at
    most ``block_share`` of ``work`` (deterministic seconds) and stop on ``stop`` (an event).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(3)
        >>> st = starting_schedules(instance(Problem(pl, 6, CostModel.abstract(pl, F=1, B=2), split=False)))
        >>> st.best.objective, st.block_work, st.cut  # 1F1B without transfers: (m + p - 1)(F + B) = 24
        (24, 0.0, False)
    """
    block_work = 0.0
    best = best_candidate(inst, use_families, deadline=safety, hard=hard)
    candidates = [c for c in (best, *zb_candidates(inst, hard)) if c is not None]
    if several_stages_per_device(inst):  # building blocks at an interval: V, loop under a cap
        candidates += periodic_candidates(inst, safety)
        if inst.cap is not None and block_share > 0:
            top = min((c.objective for c in candidates), default=None)
            wall = 60.0 if safety is None else max(0.0, safety - time.monotonic())
            blocks, block_work = block_candidates(inst, top, block_share * work, wall, stop)
            candidates += [c for c in blocks if top is None or c.objective < top]
    ranked = sorted(candidates, key=lambda c: (c.objective, c.source))
    second = next((c for c in ranked[1:] if c.source != ranked[0].source), None) if ranked else None
    cut = safety is not None and time.monotonic() > safety
    return Starts(ranked[0] if ranked else None, second, block_work, cut)


__all__ = ["Starts", "starting_schedules"]
