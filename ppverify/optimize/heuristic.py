"""Starting points for the solver: schedules of registered families whose placement matches, and a
memory-aware greedy list scheduler; each is timed with the shared program-order engine
(:func:`ppverify.engines.core.list_schedule`). :func:`.starts.best_candidate` picks the best of
them for the CP-SAT hint.

All times are ticks of the :class:`~ppverify.optimize.problem.Instance`; ``starts`` lists are
indexed by the instance's op positions.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.dag import build_dag, structural_problems
from ..core.errors import PPVerifyError
from ..core.ops import B, F, I, Op, W, compute_ops
from ..core.program_order import list_schedule
from ..core.schedule import Schedule
from .problem import Instance


@dataclass(frozen=True, eq=False)
class Candidate:
    """A complete schedule for the instance: per-device op order, start ticks, objective (ticks)."""

    source: str
    programs: tuple[tuple[Op, ...], ...]
    starts: list[int]
    objective: int


def objective_value(inst: Instance, starts: Sequence[int], objective: str | None = None) -> int:
    """Makespan (the step's collectives included, :mod:`.collectives`), or the longest per-device
    span, of start ticks (op positions of ``inst``).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> objective_value(inst, [0, 4, 1, 2]), objective_value(inst, [0, 4, 1, 2], "span")
        (6, 6)
    """
    objective = objective or inst.problem.objective
    ends = [s + d for s, d in zip(starts, inst.dur)]
    if objective == "makespan":
        from .collectives import collective_times

        last = max((t1 for _, t1 in collective_times(ends, inst.coll_dur, inst.colls)), default=0)
        return max(max(ends, default=0), last)
    spans = [
        max(ends[i] for i in inst.device_ops(d)) - min(starts[i] for i in inst.device_ops(d))
        for d in range(inst.p)
        if len(inst.device_ops(d))
    ]
    return max(spans, default=0)


def memory_ok(inst: Instance, programs: Sequence[Sequence[Op]]) -> bool:
    """True when running each program in order never holds more than the cap (frees at an op's
    end come before the next op's allocation on the same device).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.schedules import build
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 3, CostModel.abstract(pl), split=False, memory_cap=2))
        >>> memory_ok(inst, build("gpipe", p=2, m=3).programs), memory_ok(inst, build("1f1b", p=2, m=3).programs)
        (False, True)
    """
    if inst.cap is None:
        return True
    pos = position_map(inst)
    return all(peak <= inst.cap for peak in order_peaks(inst, [[pos[op] for op in prog] for prog in programs]))


def order_peaks(inst: Instance, order: Sequence[Sequence[int]]) -> list[int]:
    """Each device's activation peak (in the instance's memory units) when it runs its ops in
    ``order`` (positions of ``inst``), whatever their times: one op at a time per device, and
    each activation is allocated and freed by ops of its own device (F at its start, I, W or B
    at its end), so what a device holds is fixed by how far along its order it is.

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.evaluate import problem_for
        >>> from ppverify.optimize.problem import instance
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=4, m=8)  # device d runs p - d forwards before its first backward
        >>> inst = instance(problem_for(s, CostModel.abstract(s.placement, F=1, B=2)), s)
        >>> order_peaks(inst, [list(inst.device_ops(d)) for d in range(inst.p)])
        [4, 3, 2, 1]
    """
    peaks = []
    for ops in order:
        held = peak = 0
        for i in ops:
            held += inst.alloc[i]
            peak = max(peak, held)
            held -= inst.free[i]
        peaks.append(peak)
    return peaks


def position_map(inst: Instance) -> dict[Op, int]:
    """Op -> its position in the instance.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(1)
        >>> position_map(instance(Problem(pl, 1, CostModel.abstract(pl), split=False)))[Op("B", 0, 0)]
        1
    """
    return {op: i for i, op in enumerate(inst.dag.ops)}


def time_programs(inst: Instance, programs: Sequence[Sequence[Op]], source: str = "order") -> Candidate:
    """Time per-device op orders as soon as possible (the async engine's rule) in the instance's
    ticks; raises :class:`~ppverify.core.errors.DeadlockError` if the orders cannot complete.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> time_programs(inst, [[Op("F", 0, 0), Op("B", 0, 0)], [Op("F", 1, 0), Op("B", 1, 0)]]).objective
        6
    """
    sched = Schedule(
        inst.problem.placement, inst.problem.m, tuple(tuple(p) for p in programs), inst.dag.schedule.pipe_of_mb, source
    )
    dag = build_dag(sched)
    pos = position_map(inst)
    idx = [pos[op] for op in dag.ops]
    start, _ = list_schedule(dag, [inst.dur[i] for i in idx], [inst.delay[i] for i in idx])
    starts = [0] * len(idx)
    for j, i in enumerate(idx):
        starts[i] = int(round(start[j]))  # noqa: RUF046  (numpy scalars stay numpy under round)
    return Candidate(source, tuple(tuple(p) for p in programs), starts, objective_value(inst, starts))


def adapt_schedule(schedule: Schedule, split: bool) -> tuple[tuple[Op, ...], ...]:
    """A family's programs with the backward made to match: ``B`` becomes ``I`` then ``W`` in the
    same place, or ``I`` becomes ``B`` and ``W`` is dropped; overlapped slots are run in sequence.

    Example:
        >>> from ppverify.schedules import build
        >>> [str(o) for o in adapt_schedule(build("gpipe", p=2, m=1), split=True)[0]]
        ['0F0', '0I0', '0W0']
    """
    out = []
    for prog in schedule.programs:
        ops: list[Op] = []
        for op in compute_ops(prog):
            if split and op.kind == B:
                ops += [Op(I, op.stage, op.mb), Op(W, op.stage, op.mb)]
            elif not split and op.kind in (I, W):
                if op.kind == I:
                    ops.append(Op(B, op.stage, op.mb))
            else:
                ops.append(op)
        out.append(tuple(ops))
    return tuple(out)


def family_candidates(inst: Instance, deadline: float | None = None) -> list[Candidate]:
    """Every registered family (default parameters, plus ``v`` chunks for the loop placement) whose
    placement and microbatch pipes match the instance, timed; those breaking the cap are left out.
    Stops building further families once ``time.monotonic()`` passes ``deadline``.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> sorted(c.source for c in family_candidates(inst))[:2]
        ['1f1b', '1f1b-split']
    """
    import time

    from ..schedules import build, families

    pr = inst.problem
    pl = pr.placement
    out: list[Candidate] = []
    tries: list[dict] = [{}]
    if pl.name == "loop":
        tries.append({"v": pl.num_stages // pl.p})
    if pl.name == "wave":
        tries.append({"waves": pl.num_stages // (2 * pl.p)})
    for fam in families():
        if deadline is not None and time.monotonic() > deadline:
            break
        names = {prm.name for prm in fam.params}
        for extra in tries:
            if not set(extra) <= names:
                continue
            try:
                sched = build(fam.name, pr.p, pr.m, **extra)
            except (PPVerifyError, ValueError, TypeError):
                continue
            if sched.placement.maps != pl.maps or tuple(sched.pipe_of_mb) != tuple(inst.dag.schedule.pipe_of_mb):
                continue
            cand = schedule_candidate(inst, sched, fam.name)
            if cand is not None:
                out.append(cand)
    return out


def schedule_candidate(inst: Instance, schedule: Schedule, source: str) -> Candidate | None:
    """``schedule``'s program order (its backward made the instance's, :func:`adapt_schedule`)
    timed as a start named ``source``; ``None`` when it is not one of the instance's schedules or
    breaks its cap. Placement and pipes are the caller's to match.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.schedules import build
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> schedule_candidate(inst, build("gpipe", p=2, m=4), "given").objective  # (m + p - 1)(F + B)
        15
    """
    programs = adapt_schedule(schedule, inst.problem.split)
    trial = schedule.with_programs(programs)
    if structural_problems(trial, limit=1) or not memory_ok(inst, programs):
        return None
    try:
        return time_programs(inst, programs, source)
    except PPVerifyError:
        return None


def greedy(
    inst: Instance,
    priority: str = "GFW",
    lookahead: bool = False,
    inflight: Sequence[int] | None = None,
    wait_for_grad: bool = False,
    deadline: float | None = None,
) -> Candidate | None:
    """Memory-aware list scheduling: whenever a device is free it runs, in ``priority`` order of
    kinds (``G`` = the gradient op I or B, ``F``, ``W``; ``M`` = a W, but only while a forward
    that has arrived waits for the memory that W frees; ``"AW"``: alternate G and F as 1F1B does,
    W last; ``"FMGW:k"``: that order on devices ``0..k-1``, ``GFW`` on the others), an op whose
    inputs have arrived; a
    forward only if the cap allows it (and, with ``inflight``, only while device d holds fewer
    than ``inflight[d]`` forwards whose gradient op has not run), forwards of a stage in
    microbatch order. With ``lookahead`` a device leaves a gap rather than start a ``W`` that
    would delay a gradient or forward already known to arrive before the ``W`` ends (those are on
    the critical path; the ``W`` fills a later gap); with ``wait_for_grad`` it also leaves a gap
    rather than start a warm-up forward during which the first gradient op's input arrives (so the
    first backward chain through the pipeline is not held up by forwards). ``None`` when the greedy choice runs into a
    memory deadlock, or when ``time.monotonic()`` passes ``deadline`` (checked after the set-up and
    every 64 steps: a step visits every device, so 1024 of them take a second at p = 64).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(4)
        >>> inst = instance(Problem(pl, 8, CostModel.abstract(pl, F=1, I=1, W=1), split=True))
        >>> greedy(inst).objective  # ZB-H2 with equal costs: (p-1)*tF + m*(tF+tI+tW)
        27
        >>> from ppverify.core.comm import FixedDelay
        >>> pl = linear(8)
        >>> pr = Problem(pl, 24, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(1), split=True, memory_cap=16)
        >>> inst = instance(pr)
        >>> greedy(inst).objective, greedy(inst, "FMGW:2").objective  # the bound: 24*3 + 7*(1+1)
        (91, 86)
    """
    dag, n = inst.dag, inst.dag.num_ops
    head, _, upto = priority.partition(":")
    # the devices before k feed the rest of the pipeline with forwards: there a forward goes
    # first; on the later ones a gradient op, whose chain runs back through every device
    rule = [head if not upto or d < int(upto) else "GFW" for d in range(inst.p)]
    succ = dag.successors()
    npred = [sum(1 for q in ps if q >= 0) for ps in dag.pred]
    ready = [0] * n
    start = [-1] * n
    free_at = [0] * inst.p
    level = [0] * inst.p
    open_fwd = [0] * inst.p
    last_kind = [W] * inst.p
    grad_seen = [False] * inst.p
    # per device: pending gradient ops and weight ops (heaps of (ready, mb, -stage, pos)); forwards
    # per (pipe, stage) in microbatch order
    grads: list[list] = [[] for _ in range(inst.p)]
    weights: list[list] = [[] for _ in range(inst.p)]
    fwd_queue: dict[tuple[int, int], list[int]] = {}
    for i, op in enumerate(dag.ops):
        if op.kind == F:
            fwd_queue.setdefault((dag.device[i], op.stage), []).append(i)
    for key in fwd_queue:
        fwd_queue[key].sort(key=lambda i: dag.ops[i].mb, reverse=True)
    fwd_done = [False] * n

    def release(i: int) -> None:
        op = dag.ops[i]
        d = dag.device[i]
        if op.kind in (I, B):
            heapq.heappush(grads[d], (ready[i], op.mb, -op.stage, i))
        elif op.kind == W:
            heapq.heappush(weights[d], (ready[i], op.mb, -op.stage, i))
        else:
            fwd_done[i] = True  # inputs known; queue order decides

    for i in range(n):
        if npred[i] == 0:
            release(i)
    remaining = n
    left_on = [len(inst.device_ops(d)) for d in range(inst.p)]
    active = {d for d in range(inst.p) if left_on[d]}
    stages_of = {d: sorted({s for (dd, s) in fwd_queue if dd == d}, reverse=True) for d in range(inst.p)}
    steps = 0
    if deadline is not None and time.monotonic() > deadline:
        return None
    while remaining:
        steps += 1
        if deadline is not None and steps % 64 == 0 and time.monotonic() > deadline:
            return None
        now = min(free_at[d] for d in active)
        progressed = False
        for d in sorted(active):
            if free_at[d] != now:
                continue
            prio = rule[d]
            if prio == "AW":  # alternate: after a gradient op prefer a forward, else the reverse
                prio = "FGW" if last_kind[d] in (I, B) else "GFW"
            pick = _choose(
                inst,
                d,
                now,
                prio,
                grads,
                weights,
                fwd_queue,
                stages_of[d],
                fwd_done,
                ready,
                level,
                lookahead,
                None if inflight is None else inflight[d] - open_fwd[d],
                wait_for_grad and not grad_seen[d],
            )
            if pick is None:
                continue
            i = pick
            start[i] = now
            end = now + inst.dur[i]
            free_at[d] = end
            level[d] += inst.alloc[i] - inst.free[i]
            kind = dag.ops[i].kind
            if kind != W:
                last_kind[d] = kind
            grad_seen[d] = grad_seen[d] or kind in (I, B)
            open_fwd[d] += 1 if kind == F else (-1 if kind in (I, B) else 0)
            remaining -= 1
            progressed = True
            for j in succ[i]:
                k = dag.pred[j].index(i)
                ready[j] = max(ready[j], end + inst.delay[j][k])
                npred[j] -= 1
                if npred[j] == 0:
                    release(j)
            left_on[d] -= 1
            if not left_on[d]:
                active.discard(d)
        if not progressed:
            later = [t for d in active for t in _next_times(d, grads, weights, fwd_queue, fwd_done, ready) if t > now]
            later += [free_at[d] for d in active if free_at[d] > now]
            if not later:
                return None  # memory deadlock under this rule
            nxt = min(later)
            for d in active:
                if free_at[d] == now:
                    free_at[d] = nxt
    return Candidate(f"greedy-{priority}", inst.programs_by_start(start), start, objective_value(inst, start))


def _choose(
    inst,
    d,
    now,
    priority,
    grads,
    weights,
    fwd_queue,
    stages,
    fwd_done,
    ready,
    level,
    lookahead=False,
    room=None,
    wait_for_grad=False,
):
    def fwd_allowed(i: int) -> bool:
        return (inst.cap is None or level[d] + inst.alloc[i] <= inst.cap) and (room is None or room > 0)

    for kind in priority:
        if (
            kind == "M"
            and weights[d]
            and weights[d][0][0] <= now
            and _memory_blocked(inst, d, fwd_queue, level, lambda i: fwd_done[i] and ready[i] <= now)
        ):
            return heapq.heappop(weights[d])[3]
        if kind == "G" and grads[d] and grads[d][0][0] <= now:
            return heapq.heappop(grads[d])[3]
        if kind == "W" and weights[d] and weights[d][0][0] <= now:
            if lookahead:
                w_end = now + inst.dur[weights[d][0][3]]
                soon = [t for t, *_ in grads[d][:1]]
                soon += [
                    ready[q[-1]]
                    for (dd, _), q in fwd_queue.items()
                    if dd == d and q and fwd_done[q[-1]] and fwd_allowed(q[-1])
                ]
                if any(now < t < w_end for t in soon) and not _memory_blocked(inst, d, fwd_queue, level):
                    continue
            return heapq.heappop(weights[d])[3]
        if kind == "F":
            for s in stages:
                q = fwd_queue[(d, s)]
                if q and fwd_done[q[-1]] and ready[q[-1]] <= now and fwd_allowed(q[-1]):
                    if wait_for_grad and grads[d] and now < grads[d][0][0] < now + inst.dur[q[-1]]:
                        return None  # the gradient arrives during this forward: keep the chain on time
                    return q.pop()
    return None


def _memory_blocked(inst, d, fwd_queue, level, arrived=None) -> bool:
    """True when a next forward of device d (with ``arrived``, one it accepts) waits for memory
    that only a W can free (not for an open-forward limit, which no W changes)."""
    if inst.cap is None:
        return False
    return any(
        q and level[d] + inst.alloc[q[-1]] > inst.cap and (arrived is None or arrived(q[-1]))
        for (dd, _), q in fwd_queue.items()
        if dd == d
    )


def _next_times(d, grads, weights, fwd_queue, fwd_done, ready):
    if grads[d]:
        yield grads[d][0][0]
    if weights[d]:
        yield weights[d][0][0]
    for (dd, _), q in fwd_queue.items():
        if dd == d and q and fwd_done[q[-1]]:
            yield ready[q[-1]]


def canonical_starts(inst: Instance, starts: Sequence[int]) -> list[int]:
    """Relabel microbatches so that, for every kind, stage and pipe, start times increase with the
    microbatch (the sorted k-th start goes to the k-th microbatch of the pipe). Same objective and
    memory profile, still feasible (see :mod:`ppverify.optimize.model`): this is how any schedule
    is made to satisfy the symmetry-breaking constraints before it is used as a hint.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(1)
        >>> inst = instance(Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> [str(o) for o in inst.dag.ops], canonical_starts(inst, [3, 4, 0, 1])
        (['0F0', '0B0', '0F1', '0B1'], [0, 1, 3, 4])
    """
    dag = inst.dag
    pipes = dag.schedule.pipe_of_mb
    groups: dict[tuple[str, int, int], list[int]] = {}
    for i, op in enumerate(dag.ops):
        groups.setdefault((op.kind, op.stage, pipes[op.mb]), []).append(i)
    out = list(starts)
    for members in groups.values():
        members.sort(key=lambda i: dag.ops[i].mb)
        for i, t in zip(members, sorted(starts[i] for i in members)):
            out[i] = t
    return out
