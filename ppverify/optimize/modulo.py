"""Modulo-scheduled building blocks: the passes of one to three microbatches placed by CP-SAT so
that, repeated every period ``P``, they never collide on a device and keep the memory cap in the
steady state, with the shortest block.

The periodic starts of :mod:`.periodic` place the block greedily (each op at its earliest free
slot, in order of its head), so at an interval that fills a device the block's activations live
longer than they must and the interval that keeps the cap is larger than needed (unit costs, V,
p = 8, m = 24, cap 3: no greedy block keeps it below ``T = 4``, a step of 109). Here the block is
the solution of a small exact model (the ops of ``k`` microbatches, about ``6pk`` on V; microbatch
``j`` runs the block of microbatch ``j mod k`` moved by ``(j // k) P``):

* ``start(v) >= start(u) + dur(u) + delay(u, v)`` along each microbatch's dependencies;
* per device, the ops' slots taken modulo ``P`` do not overlap: op ``i``'s phase
  ``r_i = start(i) mod P`` and the two copies ``[r_i, r_i + dur_i)`` and
  ``[r_i + P, r_i + P + dur_i)`` in one no-overlap (two arcs of a circle of length ``P`` meet
  exactly when two of these segments of the line do);
* memory: an activation allocated at ``start(F)`` and freed at the end of its ``I``/``W`` is
  held by the copies ``j`` over ``[start(F) + jP, end(W) + jP)``; at time ``t`` the number of
  them holding it is ``floor((t - start(F)) / P) - floor((t - end(W)) / P)``, which is periodic
  in ``t``, so checking every tick ``t`` of one period, on every device, checks the steady state
  exactly. (The first and last microbatches hold less: the ramps keep the cap too.)
* objective: the block's length (the last op's end), so the whole step at nominal times is
  ``(m/k - 1) P + length``.

The block's orders (each device's ops in order of their nominal times, as
:func:`~.periodic.periodic_programs` sorts them) are then timed as soon as possible: the nominal
times are a valid timing of those orders (no collisions, dependencies met), so the squeezed step
is at most the nominal one, and the orders keep the cap (checked again by
:func:`~.heuristic.memory_ok`). Two or three microbatches per block reach the average intervals
``P/k`` between whole ticks (V, p = 8, m = 24, cap 3: three per 20 ticks give 92.5, the bound of
the one-device relaxation, so optimal). :func:`modulo_candidates` bisects those intervals between
the least one the memory allows (:func:`least_interval`) and the largest that can beat the best
start, within a deterministic work limit. Where the exact tick is too fine for this model
(:data:`MAX_PERIOD_TICKS`), :mod:`.coarse` seeks the block with durations rounded up to a coarser
tick.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from ..core.errors import PPVerifyError
from ..core.ops import F
from .heuristic import Candidate, memory_ok, time_programs
from .interrupt import stoppable
from .periodic import building_block, periodic_programs
from .problem import Instance
from .solver_setup import make_solver, run_solver

#: CP-SAT's deterministic seconds for one block (:func:`modulo_block`'s default)
WORK_PER_INTERVAL = 0.2
#: at most this many intervals are tried
MAX_TRIES = 12
#: at most this many microbatches per block
MAX_COPIES = 3
#: after the bisection, blocks are sought at this many intervals from the least found up
NEIGHBOURS = 2
#: the share of the work each try below the least whole interval gets (most of them find none)
LOWER_SHARE = 0.34
#: a block is at most this many periods longer than the critical path
SLACK = 2
#: the longest period (ticks) a block is sought at: the memory model holds a constraint and a
#: boolean per op for every tick of the period, so a fine time grid (costs in seconds that share
#: no small divisor: ticks of microseconds) would build models of millions of variables; there
#: the periodic starts (:mod:`.periodic`) serve alone
MAX_PERIOD_TICKS = 2000


def modulo_block(
    inst: Instance, period: int, copies: int = 1, work: float = WORK_PER_INTERVAL, seed: int = 0
) -> list[Fraction] | None:
    """Each op's nominal offset such that microbatch ``j``'s op runs at ``offset + j * period /
    copies``: a block of ``copies`` microbatches (their own offsets each, microbatch ``j`` a copy
    of microbatch ``j mod copies`` moved by ``(j // copies) * period``) repeated every ``period``
    ticks that never collides and holds at most the cap on every device in the steady state
    (module doc); the shortest block CP-SAT finds within ``work`` deterministic seconds, None
    when it finds none (one pipe only).

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(2)  # a device's two stages: 0.5 each, F = I = W = 1 per device share
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1))
        >>> block = modulo_block(inst, 8)  # 4 units: one microbatch's work on a device is 3
        >>> max(b + d for b, d in zip(block, inst.dur)) * inst.tick  # the critical path and a tick
        5.0
        >>> modulo_block(inst, 5) is None  # 2.5 < 3: the ops of a device cannot all fit in one period
        True

    (The critical path is 4.5: ``F`` through stages 0-3, ``I`` back, ``W(0)``; but ``W(0)`` at 4
    would meet the next microbatch's ``F(0)`` at 4, modulo 4, so it runs half a unit later.)
    """
    return _solve_block(inst, period, copies, work, seed)[0]


def _solve_block(
    inst: Instance,
    period: int,
    copies: int,
    work: float,
    seed: int = 0,
    wall: float = 60.0,
    hint: list[Fraction] | None = None,
) -> tuple[list[Fraction] | None, float]:
    """:func:`modulo_block`, and the deterministic seconds CP-SAT used (``hint``: a block found
    before at this period, whose solution the search starts from)."""
    dag = inst.dag
    if len(set(dag.schedule.pipe_of_mb)) != 1 or period <= 0 or not 1 <= copies <= inst.problem.m:
        return None, 0.0
    from .bounds import heads_tails

    head, tail = heads_tails(inst)
    mbs = sorted(inst.mb_members)[:copies]
    mine = [i for mb in mbs for i in inst.mb_members[mb]]
    if any(inst.dur[i] > period for i in mine):
        return None, 0.0
    crit = max(head[i] + inst.dur[i] + tail[i] for i in mine)
    horizon = crit + SLACK * period  # a longer block would not be a good start
    model = cp_model.CpModel()
    start = {i: model.new_int_var(head[i], horizon, "") for i in mine}
    for i in mine:
        for k, q in enumerate(dag.pred[i]):
            if q >= 0 and q in start:
                model.add(start[i] >= start[q] + inst.dur[q] + inst.delay[i][k])
    firsts = [inst.mb_members[mb][0] for mb in mbs]
    for a, b in zip(firsts, firsts[1:]):  # symmetry: the copies in microbatch order
        model.add(start[b] >= start[a])
    phase = {}
    for i in mine:
        r = model.new_int_var(0, period - 1, "")
        quot = model.new_int_var(0, horizon // period + 1, "")
        model.add(start[i] == quot * period + r)
        phase[i] = r
    by_device: dict[int, list[int]] = {}
    for i in mine:
        by_device.setdefault(dag.device[i], []).append(i)
    for ops in by_device.values():
        ivs = []
        for i in ops:
            ivs.append(model.new_fixed_size_interval_var(phase[i], inst.dur[i], ""))
            ivs.append(model.new_fixed_size_interval_var(phase[i] + period, inst.dur[i], ""))
        model.add_no_overlap(ivs)
    if inst.cap is not None:
        _post_memory(model, inst, by_device, start, period, horizon)
    end = model.new_int_var(0, horizon + max(inst.dur), "")
    for i in mine:
        model.add(end >= start[i] + inst.dur[i])
    model.minimize(end)
    # hint: a block found before, else the greedy block of periodic.py, copies spread evenly
    step = Fraction(period, copies)
    if hint is not None:
        for i in mine:
            model.add_hint(start[i], int(hint[i] + dag.ops[i].mb * step))
    greedy = building_block(inst, step) if hint is None else None
    if greedy is not None:
        for c, mb in enumerate(mbs):
            for i in inst.mb_members[mb]:
                t = greedy[i] + Fraction(c * period, copies)
                if t.denominator == 1:
                    model.add_hint(start[i], int(t))
    solver = make_solver(wall, 1, seed, work)
    # its linear relaxation off: it costs most of the time and rarely helps find a block (p = 8,
    # m = 24, cap 3, two microbatches per 7: the best block after 0.7 deterministic s, none
    # after 1 with it)
    solver.parameters.linearization_level = 0
    with stoppable(solver):
        code = run_solver(solver, model)
    used = float(solver.deterministic_time)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, used
    at = {(dag.ops[i].kind, dag.ops[i].stage, dag.ops[i].mb): solver.value(start[i]) for i in mine}
    block = [at[(op.kind, op.stage, mbs[op.mb % copies])] + (op.mb // copies) * period - op.mb * step for op in dag.ops]
    return block, used


def _post_memory(
    model: cp_model.CpModel, inst: Instance, by_device: dict, start: dict, interval: int, horizon: int
) -> None:
    """The steady-state memory of every device at every tick of one period (module doc), in
    linear form: with ``x = q T + r`` (``0 <= r < T``), ``floor((t - x) / T) = -q - [t < r]``
    for ``0 <= t < T``, so an activation held over ``[a, e)`` counts ``q_e - q_a + [t >= r_a] -
    [t >= r_e]`` microbatches at phase ``t``."""
    dag = inst.dag
    top = horizon // interval + 2

    def split(x: cp_model.LinearExprT) -> tuple[cp_model.IntVar, list[cp_model.IntVar]]:
        q = model.new_int_var(0, top, "")
        r = model.new_int_var(0, interval - 1, "")
        model.add(x == q * interval + r)
        reached = []  # reached[t] <=> r <= t
        for t in range(interval):
            b = model.new_bool_var("")
            model.add(r <= t).only_enforce_if(b)
            model.add(r >= t + 1).only_enforce_if(~b)
            reached.append(b)
        return q, reached

    for ops in by_device.values():
        held = []  # (alloc op, free op, amount)
        for i in ops:
            if dag.ops[i].kind != F:
                continue
            for j in ops:
                if (
                    j != i
                    and inst.free[j] > 0
                    and (dag.ops[j].stage, dag.ops[j].mb) == (dag.ops[i].stage, dag.ops[i].mb)
                ):
                    held.append((i, j, inst.free[j]))
        if not held:
            continue
        ends = {}
        for f, g, _ in held:
            if f not in ends:
                ends[f] = split(start[f])
            if g not in ends:
                ends[g] = split(start[g] + inst.dur[g])
        for t in range(interval):
            level = [amount * (ends[g][0] - ends[f][0] + ends[f][1][t] - ends[g][1][t]) for f, g, amount in held]
            model.add(sum(level) <= inst.cap)


def _timed(inst: Instance, block: list[Fraction] | None, interval: Fraction, copies: int) -> Candidate | None:
    """A block's orders timed as soon as possible (None without a block, or should the orders
    break the cap, which the steady state's check rules out)."""
    if block is None:
        return None
    progs = periodic_programs(inst, block, interval)
    if not memory_ok(inst, progs):  # pragma: no cover - the steady state is the worst
        return None
    try:
        return time_programs(inst, progs, f"block{copies}-T{float(interval * inst.tick):g}")
    except PPVerifyError:  # pragma: no cover - nominal times are a valid timing
        return None


def interval_terms(inst: Instance) -> tuple[Fraction, Fraction]:
    """The two limits of :func:`least_interval` (ticks per microbatch): the busiest device's work,
    and the most any device's activations' least holding times over the cap (0 without a cap).

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)  # device 0: 12 ops of 0.5 per microbatch; 20 tick-activations over 3
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1.5))
        >>> interval_terms(inst)
        (Fraction(6, 1), Fraction(20, 3))
    """
    dag, m = inst.dag, inst.problem.m
    work = Fraction(max(sum(inst.dur[i] for i in inst.device_ops(d)) for d in range(inst.p)), m)
    if inst.cap is None or inst.cap <= 0:
        return work, Fraction(0)
    mb = min(inst.mb_members)
    members = inst.mb_members[mb]  # topological order
    held: dict[int, int] = {}
    for u in members:
        if dag.ops[u].kind != F or inst.alloc[u] == 0:
            continue
        dist = {u: 0}
        for i in members:
            for k, q in enumerate(dag.pred[i]):
                if q in dist:
                    dist[i] = max(dist.get(i, 0), dist[q] + inst.dur[q] + inst.delay[i][k])
        for g, dg in dist.items():
            op = dag.ops[g]
            if g != u and inst.free[g] > 0 and (op.stage, dag.device[g]) == (dag.ops[u].stage, dag.device[u]):
                held[dag.device[u]] = held.get(dag.device[u], 0) + inst.free[g] * (dg + inst.dur[g])
    return work, max((Fraction(v, inst.cap) for v in held.values()), default=Fraction(0))


def least_interval(inst: Instance) -> Fraction:
    """The least interval (ticks) per microbatch of any periodic schedule in its steady state:
    the busiest device's work per microbatch, and on every device the activations' least holding
    times (the longest dependency path from each forward's start to the end of the op that frees
    it), summed over one microbatch, over the cap (the memory-time argument of :mod:`.energy`,
    per period): the larger of :func:`interval_terms`.

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)  # device 0: stage 0 held 17 ticks (8 F, 8 I, W), stage 7 3 ticks
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1.5))
        >>> least_interval(inst)  # 20 tick-activations over a cap of 3 (0.5 each): above the work's 6
        Fraction(20, 3)
    """
    return max(interval_terms(inst))


def intervals(lo: Fraction, below: Fraction, most: int = MAX_COPIES) -> list[tuple[Fraction, tuple[int, ...]]]:
    """The average intervals ``T = period / copies`` (ticks) with ``lo <= T < below``, in
    increasing order, each with the numbers of microbatches per block to try (the fewest that
    reach ``T`` first, up to ``most``; a whole tick is tried with two as well, whose blocks need
    not be two copies of one).

    Example:
        >>> [(str(t), k) for t, k in intervals(Fraction(6), Fraction(7))]
        [('6', (1, 2)), ('19/3', (3,)), ('13/2', (2,)), ('20/3', (3,))]
    """
    out: dict[Fraction, tuple[int, ...]] = {}
    for k in range(1, most + 1):
        for period in range(math.ceil(lo * k), math.ceil(below * k)):
            t = Fraction(period, k)
            if lo <= t < below and t not in out:
                out[t] = (1, 2) if k == 1 and most >= 2 else (k,)
    return sorted(out.items())


def modulo_candidates(
    inst: Instance,
    best: int | None = None,
    work: float = 1.0,
    wall: float = 60.0,
    stop: Any = None,
    top_first: bool = False,
) -> tuple[list[Candidate], float]:
    """The modulo-scheduled starts (module doc) at the smallest intervals that keep the cap,
    timed, and the deterministic seconds spent. The intervals are :func:`intervals` from
    :func:`least_interval` up to one tick above the largest whose ``(m - 1) T`` plus the critical
    path can still beat ``best`` (ticks; the best start so far: a squeezed block runs its first
    microbatches closer than ``T``), sought in three steps within ``work`` deterministic seconds
    in all (and ``wall`` seconds of the clock, a safety; ``stop``, a :class:`threading.Event` set
    by Ctrl-C: no further block once set):

    1. the least whole interval with a block of one microbatch, bisected (a block is found at
       every interval above some threshold, roughly: a smaller interval needs shorter holding
       times; collisions make it not exactly so), a small share each;
    2. below it, blocks of two microbatches at whole ticks and three between them, bisected,
       :data:`LOWER_SHARE` of the work each (most find none);
    3. the least interval found and the next (:data:`NEIGHBOURS`) with the microbatches per
       block not tried yet, a quarter of the work each or what is left shared evenly: the
       squeezed step is monotone neither in the interval nor in the copies.

    At most :data:`MAX_TRIES` bisection steps each; what is left of the work then shortens the
    block whose squeezed step is least. ``top_first``: the first interval tried is the largest
    whole one (the cheapest model and the likeliest to exist), the bisection only below it once
    one is found (:mod:`.coarse`, where a failed try costs its whole share).

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1.5))
        >>> found, used = modulo_candidates(inst, best=138)  # periodic.py's best: 69
        >>> [(c.source, c.objective * inst.tick) for c in sorted(found, key=lambda c: c.objective)]
        [('block1-T5', 64.0), ('block1-T5.5', 69.0)]
    """
    dag = inst.dag
    if len(set(dag.schedule.pipe_of_mb)) != 1:
        return [], 0.0
    from .bounds import heads_tails

    head, tail = heads_tails(inst)
    crit = max(h + d + t for h, d, t in zip(head, inst.dur, tail))
    m = inst.problem.m
    if best is None:  # one microbatch after another is a periodic schedule too
        best = m * crit
    # one tick above the nominal cut: the squeezed step of a block is below its nominal one (the
    # first microbatches, memory not yet full, run closer than the interval)
    below = Fraction(best - crit, m - 1) + 1 if m > 1 else Fraction(0)
    least = least_interval(inst)
    if least * min(MAX_COPIES, m) > MAX_PERIOD_TICKS:  # a time grid too fine for the memory model
        return [], 0.0  # (coarse.py seeks the block on a coarser one)
    below = min(below, Fraction(MAX_PERIOD_TICKS, min(MAX_COPIES, m)))
    todo = intervals(least, below, min(MAX_COPIES, m))
    out: list[Candidate] = []
    left = work
    until = time.monotonic() + wall
    blocks: dict[tuple[int, int], tuple[list[Fraction], Candidate]] = {}  # (period, copies): block, timed
    tried: set[tuple[int, int]] = set()

    def over() -> bool:  # the work, the clock or a signal ends the search for blocks
        return left <= 0.01 or time.monotonic() > until or (stop is not None and stop.is_set())

    def attempt(t: Fraction, copies: int, share: float) -> Candidate | None:
        nonlocal left
        period = int(t * copies)
        tried.add((period, copies))
        block, used = _solve_block(inst, period, copies, share, wall=max(0.01, until - time.monotonic()))
        left -= used
        found = _timed(inst, block, t, copies)
        if found is not None and block is not None:
            blocks[(period, copies)] = (block, found)
            out.append(found)
        return found

    def bisect(idx: list[int], copies_of: Callable[[tuple[int, ...]], Sequence[int]], share: float) -> None:
        # the least of todo[idx] with a block, tried with copies_of(ks) microbatches per block
        lo, hi = 0, len(idx) - 1
        for _ in range(MAX_TRIES):
            if lo > hi or over():
                return
            mid = (lo + hi + 1) // 2
            if top_first and not out:  # the largest interval first (coarse.py: a failed try costs its share)
                mid = hi
            t, ks = todo[idx[mid]]
            found = None
            for copies in copies_of(ks):
                if over() or (int(t * copies), copies) in tried:
                    continue
                found = attempt(t, copies, min(left, share))
                if found is not None:
                    break
            if found is None:
                lo = mid + 1
            else:
                hi = mid - 1

    # 1. the least whole interval with a block of one microbatch: cheap models, settled quickly
    bisect([j for j, (_, ks) in enumerate(todo) if 1 in ks], lambda ks: (1,), max(0.25 * work / 2, 0.1))
    # 2. below it, two microbatches per block at whole ticks, three between them (two between
    # half ticks found no better start in the cases measured, and a failed try costs its share)
    whole = min((i for i, (t, _) in enumerate(todo) if (int(t), 1) in blocks), default=len(todo))
    below_whole = [i for i in range(whole) if todo[i][0].denominator != 2]
    bisect(below_whole, lambda ks: [k for k in ks if k > 1], max(LOWER_SHARE * work, 0.1))
    # 3. the least interval found, and the next: the squeezed step is monotone neither in the
    # interval nor in the copies (V, p = 8, m = 24, unit costs, delay 0, cap 2: one microbatch
    # every 10 ticks 131.5, two per 20 ticks 129.5, the bound; delay 1, cap 3: one
    # every 16 ticks 228.5, three per 49 ticks 222)
    least_found = min((i for i, (t, ks) in enumerate(todo) if any((int(t * k), k) in blocks for k in ks)), default=None)
    if least_found is not None:
        near = [
            (t, k) for t, ks in todo[least_found : least_found + NEIGHBOURS] for k in ks if (int(t * k), k) not in tried
        ]
        for n, (t, copies) in enumerate(near):
            if not over():  # a quarter of the work, or more where more is left
                attempt(t, copies, min(left, max(work / 4, left / (len(near) - n), 0.1)))
    if blocks and left > 0.05 and not over():
        # 4. what is left of the work: a shorter block where the squeezed step is least
        (period, copies), (block, best_found) = min(blocks.items(), key=lambda kv: kv[1][1].objective)
        better, used = _solve_block(inst, period, copies, left, wall=max(0.01, until - time.monotonic()), hint=block)
        left -= used
        found = _timed(inst, better, Fraction(period, copies), copies)
        if found is not None and found.objective < best_found.objective:
            out.append(found)
    return out, work - left
