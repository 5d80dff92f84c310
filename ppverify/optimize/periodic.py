"""Periodic starting schedules: one microbatch's passes (its building block, every op at its
earliest start in an otherwise empty pipeline) repeated at an interval ``T``, as Qi et al. build
their V-Min and V-Half schedules (*Pipeline Parallelism with Controllable Memory*, NeurIPS 2024,
arXiv 2405.15362, section 3).

Microbatch ``j``'s op runs nominally at ``head(op) + j*T`` (``head`` from
:func:`~ppverify.optimize.bounds.heads_tails`; each ``W`` right after its gradient op). Each
device runs its ops in order of those nominal times (at a tie, what frees memory first: ``W``,
then the gradient op, then ``F``) and the orders are then timed as soon as possible
(:func:`~ppverify.optimize.heuristic.time_programs`, the "squeeze"). Every dependency goes
strictly forward in nominal time, so the orders cannot deadlock; memory depends on the orders
only, so a pattern whose orders keep the cap keeps it after squeezing. The interval trades
memory for time: a microbatch holds its activation on a device for its round trip, so about
``round trip / T`` of them are live at once. Candidates for every interval from the busiest
device's work per microbatch up to one microbatch's whole step are tried, and the fastest that
keeps the cap is the start.

Under a tight cap on placements with several stages per device (V, loop) the greedy rules of
:mod:`.heuristic` either deadlock or start far from the optimum; a periodic pattern at the right
interval is the steady state those optima have (unit costs, V, p = 8, m = 24, cap of one
microbatch: interval 9, step 223.5, where the memory cycle forces at least 9 per microbatch).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from ..core.errors import PPVerifyError
from ..core.ops import B, F, I, W
from .heuristic import Candidate, memory_ok, time_programs
from .problem import Instance

#: at most this many intervals are tried (evenly spread over the range when there are more)
MAX_INTERVALS = 48

#: order at equal nominal times: what frees memory first
_TIE = {W: 0, I: 1, B: 1, F: 2}


def building_block(
    inst: Instance, interval: Fraction | None = None, w_last: bool = True
) -> Sequence[Fraction | int] | None:
    """Each op's nominal offset within its microbatch's block. Without ``interval``: its
    earliest start from the dependencies and delays alone (``head``). With one (one pipe only),
    the block is modulo-scheduled as Qi et al. squeeze theirs: microbatch 0's ops in order of
    their heads, ``W``'s last, each at its earliest time (after its inputs) whose slot, repeated
    every ``interval``, meets no op already placed on its device, so that the repeated blocks
    never collide; every microbatch of the pipe copies microbatch 0's offsets. None when some op
    finds no free slot (the interval is below a device's work per microbatch).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1, I=1, W=1), split=True))
        >>> [str(o) for o in inst.dag.ops], building_block(inst)
        (['0F0', '0I0', '0W0', '1F0', '1I0', '1W0'], [0, 3, 4, 1, 2, 3])
        >>> [str(t) for t in building_block(inst, Fraction(3))]  # device 0: I at 3 = 0 (mod 3) meets F: 4
        ['0', '4', '5', '1', '2', '3']
    """
    from .bounds import heads_tails

    head, _ = heads_tails(inst)
    if interval is None:
        return head
    dag = inst.dag
    if len(set(dag.schedule.pipe_of_mb)) != 1:
        return None
    mine = inst.mb_members[dag.ops[0].mb]
    order: list[int] = []
    seen: set[int] = set()

    def take(i: int) -> None:
        # at equal heads (a stage of 0 layers takes no time) an op could sort before its input:
        # its inputs are taken first (the recursion is as deep as a chain of such ops)
        if i not in seen:
            seen.add(i)
            for q in dag.pred[i]:
                if q >= 0:
                    take(q)
            order.append(i)

    for i in sorted(mine, key=lambda i: (w_last and dag.ops[i].kind == W, head[i], i)):
        take(i)
    placed: dict[int, list[tuple[Fraction, int]]] = {}
    at: dict[int, Fraction] = {}
    for i in order:
        ready = Fraction(0)
        for k, q in enumerate(dag.pred[i]):
            if q >= 0:
                ready = max(ready, at[q] + inst.dur[q] + inst.delay[i][k])
        t = _free_slot(placed.setdefault(dag.device[i], []), ready, inst.dur[i], interval)
        if t is None:
            return None
        at[i] = t
        placed[dag.device[i]].append((t, inst.dur[i]))
    key = {(op.kind, op.stage): at[i] for i, op in ((i, dag.ops[i]) for i in mine)}
    return [key[(op.kind, op.stage)] for op in dag.ops]


def _free_slot(placed: list[tuple[Fraction, int]], ready: Fraction, dur: int, interval: Fraction) -> Fraction | None:
    """The earliest ``t >= ready`` whose slot ``[t, t + dur)`` repeated every ``interval`` meets
    none of ``placed``'s; None when there is none within one interval. A slot of 0 ticks meets
    nothing (a zero-length op takes no time on its device).

    Example:
        >>> _free_slot([(Fraction(0), 2)], Fraction(0), 1, Fraction(3)), _free_slot([(Fraction(0), 2)], Fraction(0), 2, Fraction(3))
        (Fraction(2, 1), None)
        >>> _free_slot([(Fraction(0), 0)], Fraction(0), 1, Fraction(3))
        Fraction(0, 1)
    """
    if dur > interval:
        return None
    # a slot of 0 ticks (a zero-length op) meets nothing; kept, it would "move" t by 0 forever.
    # Every other meeting moves t forward to that slot's end, so the loop passes each slot's
    # repeats at most twice within one interval: the count bounds it as well
    placed = [(b, db) for b, db in placed if db > 0]
    t = ready
    for _ in range(2 * len(placed) + 2):
        if t >= ready + interval:
            break
        for b, db in placed:
            r = (b - t) % interval
            if r < dur or r > interval - db:
                t = t + (r + db if r < dur else r + db - interval)  # the end of that slot's repeat
                break
        else:
            return t
    return None


def periodic_programs(inst: Instance, block: Sequence[Fraction | int], interval: Fraction) -> tuple[tuple, ...]:
    """Per device, the ops in order of their nominal times ``block[op] + mb * interval`` (ties:
    an op after its inputs, then ``W``, gradient, ``F``; then microbatch, then stage).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 2, CostModel.abstract(pl, F=1, I=1, W=1), split=True))
        >>> [str(o) for o in periodic_programs(inst, building_block(inst), Fraction(1))[0]]
        ['0F0', '0F1', '0I0', '0W0', '0I1', '0W1']
    """
    dag = inst.dag
    nominal = [block[i] + op.mb * interval for i, op in enumerate(dag.ops)]
    # an op after an input at the same nominal time (a zero-length op, no delay) ranks after
    # it, or the memory tie rule (I before F) could put it before its input: a deadlock. With
    # no zero-length op every input is strictly earlier and every rank 0
    rank = [0] * len(dag.ops)
    for i in dag.topological_order():
        rank[i] = max((rank[q] + 1 for q in dag.pred[i] if q >= 0 and nominal[q] == nominal[i]), default=0)
    out = []
    for d in range(inst.p):
        ops = list(inst.device_ops(d))
        ops.sort(key=lambda i: (nominal[i], rank[i], _TIE[dag.ops[i].kind], dag.ops[i].mb, dag.ops[i].stage))
        out.append(tuple(dag.ops[i] for i in ops))
    return tuple(out)


def interval_range(inst: Instance) -> list[Fraction]:
    """The intervals tried (ticks, steps of half a tick): from the busiest device's work per
    microbatch up to one microbatch's whole step, at most :data:`MAX_INTERVALS` of them.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> [str(t) for t in interval_range(instance(Problem(pl, 2, CostModel.abstract(pl, F=1, I=1, W=1), split=True)))]
        ['3', '7/2', '4', '9/2', '5']
    """
    m = inst.problem.m
    work = max(sum(inst.dur[i] for i in inst.device_ops(d)) for d in range(inst.p))
    lo = Fraction(work, m)
    block = building_block(inst)
    assert block is not None
    hi = Fraction(max(b + d for b, d in zip(block, inst.dur)))
    lo2, hi2 = int(lo * 2), int(hi * 2 + 1)
    if lo * 2 != lo2:
        lo2 += 1
    halves = list(range(lo2, max(lo2, hi2 - 1) + 1))
    if len(halves) > MAX_INTERVALS:
        step = len(halves) / MAX_INTERVALS
        halves = sorted({halves[int(k * step)] for k in range(MAX_INTERVALS)} | {halves[-1]})
    return [Fraction(h, 2) for h in halves]


def periodic_candidates(inst: Instance, deadline: float | None = None, stop: Any = None) -> list[Candidate]:
    """The periodic schedule (module doc) at every interval of :func:`interval_range` whose orders
    keep the cap, timed; stops once ``time.monotonic()`` passes ``deadline`` or ``stop`` (an
    event: Ctrl-C, SIGTERM) is set.

    Example:
        >>> from ppverify.core.placement import v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = v_shape(4)  # cap: one microbatch's two stages on a device
        >>> inst = instance(Problem(pl, 12, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=1))
        >>> best = min(periodic_candidates(inst), key=lambda c: c.objective)
        >>> best.source, best.objective * inst.tick  # 11 microbatches apart by 6, then one whole step
        ('modulo-T6', 74.5)

    (Device 3 holds stages 3 and 4: between ``F(4, j)`` and ``F(4, j+1)`` the gradient comes
    back through stages 5-7 (3.5) and the device runs ``I(4)``, ``I(3)``, both ``W``'s and
    ``F(3, j+1)`` (2.5): 6 per microbatch; the one-device relaxation proves 74.5 optimal.)
    """
    head = building_block(inst)
    assert head is not None
    out: list[Candidate] = []
    tick = Fraction(inst.tick)
    for t in interval_range(inst):
        blocks = (("periodic", head), ("modulo", building_block(inst, t)), ("modulo-w", building_block(inst, t, False)))
        for name, block in blocks:
            if (deadline is not None and time.monotonic() > deadline) or (stop is not None and stop.is_set()):
                return out
            if block is None:
                continue
            progs = periodic_programs(inst, block, t)
            if not memory_ok(inst, progs):
                continue
            try:
                out.append(time_programs(inst, progs, f"{name}-T{float(t * tick):g}"))
            except PPVerifyError:  # pragma: no cover - the nominal order cannot deadlock (module doc)
                continue
    return out
