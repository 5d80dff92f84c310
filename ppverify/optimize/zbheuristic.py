"""The zero-bubble paper's own scheduling heuristic as a starting schedule, so that the optimizer
never returns anything worse than it (*Zero Bubble Pipeline Parallelism*, Qi et al., ICLR 2024,
arXiv:2401.10241, section 3.1 "heuristic algorithm").

It applies to one pipe of a linear placement with the backward split into ``I`` and ``W``. The
heuristic walks the microbatches in order. For the first one it decides how many warm-up forwards
each stage runs before its first ``I``: as many as fit under the cap and keep the stage busy
until that ``I``'s input arrives (or, in a variant, until just before it). For each later
microbatch every stage runs one forward and then, from the last stage down, one ``I``. Before an
op whose input is still in flight, a stage fills the wait with pending ``W``'s. A gap it cannot
fill exactly is filled with one more ``W`` only while the stage's accumulated idle time stays
below the worst stage's (a variant always fills it). A stage may also hold back a forward when it
is two or more forwards ahead of the next stage and the forward would delay its next ``I``.
Forwards that would break the cap first run ``W``'s to free memory. Remaining ``W``'s close each
stage.

The three yes/no choices give eight variants; each yields per-device program orders that are
then timed as soon as possible (:func:`~ppverify.optimize.heuristic.time_programs`), which never
starts an op later than the heuristic's own timing does, so the span is at most the heuristic's.
"""

from __future__ import annotations

import itertools
import time

from ..core.errors import PPVerifyError
from ..core.ops import F, I, Op, W
from .heuristic import Candidate, memory_ok, position_map, time_programs
from .problem import Instance


class _Stuck(Exception):
    """A variant cannot go on (memory cannot be freed, or an input was never placed)."""


def applies(inst: Instance) -> bool:
    """True for one pipe of a linear placement with split backward (the heuristic's setting).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> applies(instance(Problem(pl, 2, CostModel.abstract(pl), split=True)))
        True
        >>> applies(instance(Problem(pl, 2, CostModel.abstract(pl), split=False)))
        False
    """
    pr = inst.problem
    pl = pr.placement
    return (
        pr.split
        and pl.name == "linear"
        and pl.num_pipes == 1
        and pl.num_stages == inst.p
        and inst.dag.num_ops == 3 * inst.p * pr.m
        and all(op.stage == inst.dag.device[i] for i, op in enumerate(inst.dag.ops))
    )


class _Walk:
    """State of one run of the heuristic: per stage the counts of placed F, I and W, the end of
    its last op, the memory held and the idle time accumulated after its first forward."""

    def __init__(self, inst: Instance, deadline: float | None = None) -> None:
        self.inst = inst
        self.deadline = deadline
        self.placed = 0
        self.p, self.m = inst.p, inst.problem.m
        self.pos = position_map(inst)
        self.pred = inst.dag.pred
        self.end: dict[int, int] = {}
        self.n = {F: [0] * self.p, I: [0] * self.p, W: [0] * self.p}
        self.clock = [0] * self.p
        self.level = [0] * self.p
        self.idle = [0] * self.p
        self.programs: list[list[Op]] = [[] for _ in range(self.p)]

    def at(self, kind: str, s: int, mb: int) -> int:
        return self.pos[Op(kind, s, mb)]

    def dur(self, kind: str, s: int, mb: int) -> int:
        return self.inst.dur[self.at(kind, s, mb)]

    def arrival(self, i: int) -> int:
        """When op i's inputs are all in (each placed predecessor's end plus the edge's delay)."""
        t = 0
        for k, q in enumerate(self.pred[i]):
            if q < 0:
                continue
            if q not in self.end:
                raise _Stuck  # an input was never placed: the variant's order is not runnable
            t = max(t, self.end[q] + self.inst.delay[i][k])
        return t

    def put(self, s: int, kind: str) -> None:
        mb = self.n[kind][s]
        i = self.at(kind, s, mb)
        start = max(self.clock[s], self.arrival(i))
        if self.n[F][s] > 0:
            self.idle[s] += start - self.clock[s]
        self.clock[s] = self.end[i] = start + self.inst.dur[i]
        self.level[s] += self.inst.alloc[i] - self.inst.free[i]
        self.n[kind][s] += 1
        self.programs[s].append(Op(kind, s, mb))
        self.placed += 1
        if self.deadline is not None and self.placed % 4096 == 0 and time.monotonic() > self.deadline:
            raise _Stuck  # out of time: this variant is dropped

    def fits(self, s: int, kind: str) -> bool:
        cap = self.inst.cap
        return cap is None or self.level[s] + self.inst.alloc[self.at(kind, s, self.n[kind][s])] <= cap

    def make_room(self, s: int, kind: str) -> None:
        while not self.fits(s, kind):
            if self.n[W][s] >= self.n[I][s]:
                raise _Stuck  # nothing left to free
            self.put(s, W)

    def fill_wait(self, s: int, ready: int, fill_gap: bool) -> None:
        """Run W's that end before ``ready``; then one more if the gap left is worth it."""
        while self.n[W][s] < self.n[I][s] and self.clock[s] + self.dur(W, s, self.n[W][s]) <= ready:
            self.put(s, W)
        if self.n[W][s] < self.n[I][s] and self.clock[s] < ready:
            tolerable = ready - self.clock[s] <= max(self.idle) - self.idle[s]
            if fill_gap or not tolerable:
                self.put(s, W)


def _warm_up(wk: _Walk, bubble_first: bool) -> None:
    """Microbatch 0: every stage's first forward, the warm-up forwards, then the first I's."""
    p, m = wk.p, wk.m
    for s in range(p):
        wk.put(s, F)
    extra = [0] * p
    back = wk.end[wk.at(F, p - 1, 0)] + wk.dur(I, p - 1, 0)  # when the last stage's first I ends
    for s in range(p - 2, -1, -1):
        comm = wk.inst.delay[wk.at(I, s, 0)][1]
        level, clock = wk.level[s], wk.clock[s]
        while wk.n[F][s] + extra[s] < m:
            i = wk.at(F, s, wk.n[F][s] + extra[s])
            if wk.inst.cap is not None and level + wk.inst.alloc[i] > wk.inst.cap:
                break
            if (clock + wk.inst.dur[i] > back + comm) if bubble_first else (clock >= back + comm):
                break
            level += wk.inst.alloc[i]
            clock += wk.inst.dur[i]
            extra[s] += 1
        back = max(clock, back + comm) + wk.dur(I, s, 0)
    for s in range(1, p):  # fewer warm-up forwards downstream, so every input is placed first
        while extra[s] > 0 and extra[s] >= extra[s - 1] and wk.n[F][s] + extra[s] < m:
            extra[s] -= 1
    for s in range(p):
        for _ in range(extra[s]):
            wk.put(s, F)
    for s in range(p - 1, -1, -1):
        wk.put(s, I)


def _wants_forward(wk: _Walk, s: int, prefer_grad: bool) -> bool:
    if wk.n[F][s] >= wk.m:
        return False
    if not (prefer_grad and s + 1 < wk.p and wk.n[F][s] >= wk.n[F][s + 1] + 2):
        return True
    # two forwards ahead of the next stage: hold this one back if it would delay the next I
    nf, nb = wk.n[F][s + 1], wk.n[I][s + 1]
    comm = wk.inst.delay[wk.at(I, s, 0)][1]
    nxt = wk.clock[s + 1] + wk.dur(F, s + 1, nf) + wk.dur(I, s + 1, nb) + comm
    if wk.clock[s] >= nxt:
        return False
    i = wk.at(F, s, wk.n[F][s])
    level, w_time, k = wk.level[s] + wk.inst.alloc[i], 0, wk.n[W][s]
    while wk.inst.cap is not None and level > wk.inst.cap and k < wk.n[I][s]:
        j = wk.at(W, s, k)
        w_time += wk.inst.dur[j]
        level += wk.inst.alloc[j] - wk.inst.free[j]
        k += 1
    if wk.clock[s] + wk.inst.dur[i] + w_time <= nxt:
        return True
    return not nxt - wk.clock[s] <= max(wk.idle) - wk.idle[s]


def _steady(wk: _Walk, mb: int, prefer_grad: bool, fill_gap: bool) -> None:
    """Microbatch mb >= 1: one forward per stage (where wanted), then its I's bottom-up."""
    p = wk.p
    want = [_wants_forward(wk, s, prefer_grad) for s in range(p)]
    for s in range(p - 2, -1, -1):
        want[s] = want[s] and want[s + 1]
    for s in range(p):
        if not want[s]:
            continue
        wk.make_room(s, F)
        if s > 0:
            wk.fill_wait(s, wk.arrival(wk.at(F, s, wk.n[F][s])), fill_gap)
        wk.put(s, F)
    for s in range(p - 1, -1, -1):
        if wk.n[I][s] != mb:
            raise _Stuck
        wk.make_room(s, I)
        if s + 1 < p:
            wk.fill_wait(s, wk.arrival(wk.at(I, s, mb)), fill_gap)
        if s == 0 and wk.n[F][0] == wk.m:
            while wk.n[W][0] < wk.n[I][0]:
                wk.put(0, W)
        wk.put(s, I)


def zb_programs(
    inst: Instance, bubble_first: bool, prefer_grad: bool, fill_gap: bool, deadline: float | None = None
) -> list[list[Op]] | None:
    """Per-device program orders of one variant of the heuristic (``None`` when it gets stuck, or
    when ``time.monotonic()`` passes ``deadline``, checked every 4096 ops).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 3, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=2))
        >>> [" ".join(map(str, prog)) for prog in zb_programs(inst, True, True, True)]
        ['0F0 0F1 0I0 0W0 0F2 0I1 0W1 0I2 0W2', '1F0 1I0 1F1 1I1 1W0 1F2 1I2 1W1 1W2']
    """
    wk = _Walk(inst, deadline)
    try:
        for mb in range(wk.m):
            if mb == 0:
                _warm_up(wk, bubble_first)
            else:
                _steady(wk, mb, prefer_grad, fill_gap)
        for s in range(wk.p):
            while wk.n[W][s] < wk.m:
                wk.put(s, W)
    except _Stuck:
        return None
    if any(wk.n[k][s] != wk.m for k in (F, I, W) for s in range(wk.p)):
        return None
    return wk.programs


def zb_candidates(inst: Instance, deadline: float | None = None) -> list[Candidate]:
    """The heuristic's eight variants as timed candidates (empty when it does not apply); those
    that get stuck or break the cap are left out. No further variant starts once
    ``time.monotonic()`` passes ``deadline``.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(4)
        >>> inst = instance(Problem(pl, 8, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=4))
        >>> min(c.objective for c in zb_candidates(inst))  # ZB-H1: m(tF+tI+tW) + (p-1)(tF+tI-tW)
        27
    """
    if not applies(inst):
        return []
    out: list[Candidate] = []
    for bubble_first, prefer_grad, fill_gap in itertools.product((True, False), repeat=3):
        if deadline is not None and time.monotonic() > deadline:
            break
        programs = zb_programs(inst, bubble_first, prefer_grad, fill_gap, deadline)
        if programs is None or not memory_ok(inst, programs):
            continue
        tag = "zb-heuristic-" + "".join("ny"[b] for b in (bubble_first, prefer_grad, fill_gap))
        try:
            out.append(time_programs(inst, programs, tag))
        except PPVerifyError:
            continue
    return out
