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

from ..core.schedule import Schedule
from .coarse import block_candidates
from .heuristic import Candidate, family_candidates, greedy, schedule_candidate
from .periodic import periodic_candidates
from .problem import Instance
from .tail import several_stages_per_device
from .variants import forward_first_rules, named_rules
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


def _past(deadline: float | None, hard: float | None, found: bool, stop: Any = None) -> bool:
    """Whether to try no further rule: past ``deadline`` with a start ``found``, or past
    ``hard`` (without a start the rules keep trying until the hard stop), or ``stop`` (an event:
    Ctrl-C, SIGTERM) is set."""
    now = time.monotonic()
    if stop is not None and stop.is_set():
        return True
    return (deadline is not None and now > deadline and found) or (hard is not None and now > hard)


def best_candidate(
    inst: Instance,
    use_families: bool = True,
    deadline: float | None = None,
    hard: float | None = None,
    stop: Any = None,
) -> Candidate | None:
    """The best of the greedy variants and the family schedules (``None`` if none is feasible);
    stops trying further variants once ``time.monotonic()`` passes ``deadline`` or ``stop`` (an
    event) is set, and stops any variant at ``hard`` (what was found by then is kept).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(3)
        >>> best_candidate(instance(Problem(pl, 6, CostModel.abstract(pl, F=1, B=2), split=False))).objective
        24
    """
    if hard is not None and time.monotonic() > hard:
        return None  # the rules' own set-up is linear in the ops: not even that once past the stop
    cands: list[Candidate] = []
    for name, (prio, look, infl, wait) in named_rules(inst):
        if _past(deadline, hard, bool(cands), stop):
            break
        c = greedy(inst, prio, look, infl, wait, hard)
        if c is not None:
            tag = "" if infl is None else "-open" + ",".join(map(str, infl[:2])) + (",..." if len(infl) > 2 else "")
            tag = f"-{name}" if name else tag
            cands.append(
                Candidate(
                    c.source + ("-lookahead" if look else "") + ("-wait" if wait else "") + tag,
                    c.programs,
                    c.starts,
                    c.objective,
                )
            )
    # the forward-first rules replace the start only where strictly faster: on a tie the start
    # stays what the rules above give (and with it the search that follows)
    for prio, look, infl, wait in forward_first_rules(inst):
        if _past(deadline, hard, bool(cands), stop):
            break
        c = greedy(inst, prio, look, infl, wait, hard)
        if c is not None and (not cands or c.objective < min(x.objective for x in cands)):
            cands.append(c)
    late = deadline is not None and time.monotonic() > (deadline if cands else (hard or deadline))
    late = late or (stop is not None and stop.is_set())
    if use_families and not late:  # after the greedy rules: on large instances those start better
        cands += family_candidates(inst, deadline if cands else hard)
    if not cands:
        return None
    return min(cands, key=lambda c: (c.objective, c.source))


def starting_schedules(
    inst: Instance,
    use_families: bool = True,
    block_share: float = 0.2,
    work: float = 1.0,
    safety: float | None = None,
    hard: float | None = None,
    stop: Any = None,
    given: Schedule | None = None,
) -> Starts:
    """Every starting schedule of the search, ranked by makespan (then source).

    The phase is bounded by counts (greedy rules, families, heuristic variants, intervals); the
    clock only cuts it on a machine too slow to finish them: no further variant starts once
    ``time.monotonic()`` passes ``safety``, and none runs past ``hard``. The CP-SAT blocks get at
    most ``block_share`` of ``work`` (deterministic seconds) and stop on ``stop`` (an event).
    ``given``: a schedule of the instance (``optimize FILE``) whose order is a start too, so the
    search never ends slower than the schedule it was given (unless that breaks the cap).

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
    best = best_candidate(inst, use_families, deadline=safety, hard=hard, stop=stop)
    candidates = [c for c in (best, *zb_candidates(inst, hard)) if c is not None]
    if given is not None:  # only where strictly faster: on a tie the starts (and search) stay as without it
        own = schedule_candidate(inst, given, "given")
        if own is not None and all(own.objective < c.objective for c in candidates):
            candidates.append(own)
    if several_stages_per_device(inst):  # building blocks at an interval: V, loop under a cap
        candidates += periodic_candidates(inst, safety, stop)
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
