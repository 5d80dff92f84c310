"""Analytic lower bounds on the makespan and on the longest per-device span, each valid for every
schedule of an :class:`~ppverify.optimize.problem.Instance` (all in ticks).

* **critical path**: the longest dependency chain, delays included (makespan only).
* **device work**: a device is busy for the sum of its ops; for the makespan it also cannot start
  before its earliest op is released and its last op still has its downstream tail to run (the
  one-machine bound ``r_min + sum p + q_min``). With full backward, uniform stages and a fixed
  delay ``c`` this alone is ``(m+p-1)(tF+tB) + 2(p-1)c``, the GPipe/1F1B optimum.
* **memory window** (devices holding one stage): let ``R`` be the shortest time from the start of
  ``F(s, mb)`` to the start of its first backward (the microbatch's round trip through the later
  stages) and ``k = floor(cap / M_F)``. Before its first backward starts a device can only run
  forwards, and at most ``k`` of them (no memory is freed before a backward ends): at least
  ``R - k*tF`` of that window is idle. Symmetrically, from the start of its *last* forward until
  that microbatch's backward arrives (again ``R``) the device can only run the backward work of the
  microbatches still open, and the memory they hold (each at most ``cap``) limits how much that is:
  at least ``R - tF - pending`` is idle. With ``m > k`` the two windows are disjoint and both
  idles add to the device's span.
* **several stages per device** (:mod:`.window`): the same two windows, with the shortest path
  from a forward to a gradient op of its microbatch on the device and the forwards that fit under
  the cap together; for the makespan also the **end gap**: from the last forward's start the step
  still needs that forward's tail, of which the device can fill only its microbatch's gradient
  and W work and what the memory it still holds allows (V, p = 8, m = 24, unit costs, budget 4:
  83.5 where the two windows gave 80.5, the one-device relaxation's optimum of device 7).
* **memory cycle** (:mod:`.cycle`, one-stage devices): forward ``j`` waits for the memory freed
  one cap's worth of microbatches earlier (a chain of round trips) and, within each cycle, for
  the gradient and W work those frees take; reported and kept as a floor, not posted in the model
  (unit costs, cap p*M_F, c=1 at (32,128): the search proved 603 in 14.5 deterministic s without
  it and not within 33.6 with the 601 it gives posted).
* **warm-up** (:mod:`.warmup`, one stage per device): before its first gradient op a device runs
  only forwards, at most a cap's worth; the first gradient comes back through devices that finish
  the forward they are running first, and each hop leaves a remainder that the next device must
  idle or cover with more forwards. The least objective that lets every device do so is a bound
  (zero-bubble settings at cap 2p·M_F: the work plus 2,475 us at p=8, m=32, the optimum).
* **memory-time** (:mod:`.energy`): the activations' least holding times, summed, must fit under
  the cap within the device's span (with ramps at both ends); reported with the memory window.
* **one machine** (:mod:`.onemachine`): on any device, the ops released at least ``r`` after the
  reference start and followed by at least ``q`` take ``r + their work + q``, maximized over the
  thresholds; for the span, releases and tails are measured from the start and to the end of
  *another* device (the last device's F and I work, squeezed between the first forward's arrival
  and the last gradient's return, bounds device 0's span).

The collectives that end the step (the replica all-reduce of two-pipe placements, a data-parallel
all-reduce; :mod:`.collectives`) enter every makespan bound through the tails: an op that a
collective waits for is followed by at least that collective's time (and that of the collectives
waiting for it), and the step cannot end before. Each bound above then counts them soundly (a
collective runs on no device under ``async`` timing, so it adds to tails, never to device work).

The bounds are reported on their own and added to the CP-SAT model as redundant constraints.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from ..core.ops import B, F, I, W
from .cycle import memory_cycle_bounds
from .deadline import Deadline, check
from .energy import memory_energy_spans
from .onemachine import cross_device_span_bounds, makespan_bounds
from .problem import Instance, Problem, bound_time
from .warmup import warmup_bound
from .window import multi_stage_end_gap, multi_stage_head_idle, multi_stage_tail_idle


@dataclass(frozen=True)
class Bounds:
    """Lower bounds (ticks) on the chosen objective, by argument; ``best`` is their maximum.

    ``per_device`` is each device's own bound (work + unavoidable idle, plus release and tail for
    the makespan); ``idle`` the unavoidable idle found by the memory-window argument per device.
    """

    objective: str
    critical_path: int
    device_work: int
    memory_window: int
    per_device: tuple[int, ...]
    idle: tuple[int, ...]
    #: the one-device relaxation's proven bound (:mod:`.relax`), 0 when not computed
    device_relaxation: int = 0
    #: the one-machine threshold bound (:mod:`.onemachine`; cross-device for the span)
    one_machine: int = 0
    #: that bound per device (on the device's span, or for the makespan from its ops); empty: none
    machine_per_device: tuple[int, ...] = ()
    #: the memory-cycle bound (:mod:`.cycle`); reported and kept as a floor, not posted in the model
    memory_cycle: int = 0
    #: the warm-up bound (:mod:`.warmup`): the first gradient's way back, hop by hop
    warmup: int = 0

    def floor(self, d: int) -> int:
        """The best bound on device d's own span (or busy window): ``per_device`` or the
        one-machine bound."""
        return max(self.per_device[d], self.machine_per_device[d] if self.machine_per_device else 0)

    @property
    def best(self) -> int:
        """The strongest of the bounds."""
        return max(
            self.critical_path,
            self.device_work,
            self.memory_window,
            self.device_relaxation,
            self.one_machine,
            self.memory_cycle,
            self.warmup,
        )

    def unposted(self) -> Bounds:
        """The same bounds with none of them to post in the model (plain CP-SAT: ``optimize(...,
        redundant_bounds=False)`` reports them but keeps them out of the search).

        Example:
            >>> b = Bounds("makespan", 5, 7, 9, (9, 8), (2, 1), device_relaxation=10)
            >>> b.unposted().best, b.unposted().per_device
            (0, (0, 0))
        """
        return replace(
            self,
            critical_path=0,
            device_work=0,
            memory_window=0,
            device_relaxation=0,
            one_machine=0,
            memory_cycle=0,
            warmup=0,
            per_device=tuple(0 for _ in self.per_device),
            machine_per_device=(),
        )

    def as_dict(self, tick: float) -> dict[str, float]:
        """The bounds in time units (for reports and ``--json``), each rounded toward -inf
        (:func:`~ppverify.optimize.problem.bound_time`): never above the exact optimum.

        Example:
            >>> b = Bounds("makespan", 12, 12, 0, (12, 12), (0, 0))  # 12 ticks of 1/10: 6/5
            >>> b.as_dict(0.1)["best"], 12 * 0.1
            (1.2, 1.2000000000000002)
        """
        names: tuple[str, ...] = ("critical_path", "device_work", "memory_window", "device_relaxation")
        names += ("one_machine", "memory_cycle", "warmup", "best")
        return {k: bound_time(getattr(self, k), tick) for k in names}


def heads_tails(inst: Instance, deadline: Deadline | None = None) -> tuple[list[int], list[int]]:
    """Earliest start of every op (``head``) and the least time that must follow its end
    (``tail``), from the dependencies, delays and the step's collectives (:mod:`.collectives`);
    ``deadline`` is checked every 65,536 ops.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> heads_tails(inst)
        ([0, 4, 1, 2], [5, 0, 4, 2])
    """
    dag = inst.dag
    check(deadline)
    order = inst.topo
    head = [0] * dag.num_ops
    for n, i in enumerate(order):
        if n % 65536 == 0:
            check(deadline)
        for k, q in enumerate(dag.pred[i]):
            if q >= 0:
                head[i] = max(head[i], head[q] + inst.dur[q] + inst.delay[i][k])
    from .collectives import collective_tails

    tail = collective_tails(dag.num_ops, inst.coll_dur, inst.colls)
    for n, i in enumerate(reversed(order)):
        if n % 65536 == 0:
            check(deadline)
        for k, q in enumerate(dag.pred[i]):
            if q >= 0:
                tail[q] = max(tail[q], inst.delay[i][k] + inst.dur[i] + tail[i])
    return head, tail


def _round_trip(inst: Instance, src: int, dst: int) -> int:
    """Longest path from the start of op ``src`` to the start of op ``dst`` (same microbatch)."""
    dag = inst.dag
    mb = dag.ops[src].mb
    dist: dict[int, int] = {src: 0}
    for i in inst.mb_members[mb]:  # one topological order, computed once per instance
        for k, q in enumerate(dag.pred[i]):
            if q in dist:
                dist[i] = max(dist.get(i, 0), dist[q] + inst.dur[q] + inst.delay[i][k])
    return dist.get(dst, 0)


def memory_window_idle(inst: Instance, deadline: Deadline | None = None) -> list[int]:
    """Per device, the idle time the memory-window argument forces into its span (module doc);
    for devices holding several stages the same two windows (:mod:`.window`).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(4)
        >>> pr = Problem(pl, 8, CostModel.abstract(pl, F=1, I=1, W=1), split=True, memory_cap=4)
        >>> memory_window_idle(instance(pr))  # device d: R - k*tF = (4-d) + (3-d) - 4; tail 0
        [3, 1, 0, 0]
    """
    dag, pr = inst.dag, inst.problem
    m = pr.m
    out = []
    for d in range(inst.p):
        check(deadline)
        ops = list(inst.device_ops(d))
        if not ops:
            out.append(0)
            continue
        if _several_stages(inst, ops):
            # window.py; the windows are disjoint once the forwards cannot all be held at once
            head_w, tail_w = multi_stage_head_idle(inst, d), multi_stage_tail_idle(inst, d)
            out.append(head_w + tail_w if _forwards_over_cap(inst, ops) else max(head_w, tail_w))
            continue
        pos = {(dag.ops[i].kind, dag.ops[i].mb): i for i in ops}
        mb0 = dag.ops[ops[0]].mb
        f0 = pos[(F, mb0)]
        g0 = pos.get((I, mb0), pos.get((B, mb0)))
        assert g0 is not None  # the forward's gradient op (I or B) runs on its device too
        w0 = pos.get((W, mb0))
        lag = _round_trip(inst, f0, g0)
        tf, tg = inst.dur[f0], inst.dur[g0]
        tw = inst.dur[w0] if w0 is not None else 0
        act = inst.alloc[f0]
        held_after_g = act - inst.free[g0] if w0 is not None else 0
        # a stage holding no activation (0 layers) is bounded by no cap: every forward fits
        k = m if inst.cap is None or act == 0 else min(m, inst.cap // act)
        if k < 1:
            out.append(0)  # infeasible cap; reported elsewhere
            continue
        head_idle = max(0, lag - k * tf)
        pending = 0
        for a in range(0, min(k - 1, m - 1) + 1):
            room = None if inst.cap is None else inst.cap - (1 + a) * act
            if w0 is None or held_after_g == 0 or room is None:
                b = m - 1 - a if w0 is not None else 0
            else:
                b = min(m - 1 - a, room // held_after_g)
            pending = max(pending, a * (tg + tw) + b * tw)
        tail_idle = max(0, lag - tf - pending)
        out.append(head_idle + tail_idle if m > k else max(head_idle, tail_idle))
    return out


def lower_bounds(inst: Instance, objective: str | None = None, deadline: Deadline | None = None) -> Bounds:
    """All analytic bounds for the instance's objective (or the one given); raises
    :class:`.deadline.WallLimitReached` once ``deadline`` passes (see :func:`work_bounds`).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(4)  # (m+p-1)(tF+tB) + 2(p-1)c = 11*3 + 6*1 = 39
        >>> lower_bounds(instance(Problem(pl, 8, CostModel.abstract(pl, F=1, B=2), FixedDelay(1), split=False))).best
        39
    """
    objective = objective or inst.problem.objective
    head, tail = heads_tails(inst, deadline)
    check(deadline)
    crit = max(h + d + t for h, d, t in zip(head, inst.dur, tail)) if inst.dur else 0
    check(deadline)
    idle = memory_window_idle(inst, deadline)
    energy = memory_energy_spans(inst, deadline)
    check(deadline)
    cycle = memory_cycle_bounds(inst, head, tail, objective)
    per_device = []
    work_only = []
    for d in range(inst.p):
        ops = list(inst.device_ops(d))
        if not ops:
            per_device.append(0)
            work_only.append(0)
            continue
        work = sum(inst.dur[i] for i in ops)
        if objective == "makespan":
            extra = min(head[i] for i in ops) + min(tail[i] for i in ops)
        else:
            extra = 0
        work_only.append(work + extra)
        # the memory-time bound (energy.py) on the same span, with the same release and tail
        here = max(work + idle[d], energy[d]) + extra
        if objective == "makespan":
            here = max(here, _end_gap_bound(inst, d, ops, work, head, tail))
        per_device.append(here)
    check(deadline)
    if objective == "span":
        crit = 0  # a span starts at the device's own first op; the round trip is in the window bound
        machine = cross_device_span_bounds(inst, deadline)
    else:
        machine = makespan_bounds(inst, head, tail)
    return Bounds(
        objective,
        crit,
        max(work_only),
        max(per_device),
        tuple(per_device),
        tuple(idle),
        one_machine=max(machine, default=0),
        machine_per_device=tuple(machine),
        memory_cycle=max(cycle, default=0),
        warmup=warmup_bound(inst, head, tail, objective),
    )


def _several_stages(inst: Instance, ops: list[int]) -> bool:
    # a device's ops of more than one (pipe, stage): window.py's bounds
    dag = inst.dag
    return len({(dag.schedule.pipe_of_mb[dag.ops[i].mb], dag.ops[i].stage) for i in ops}) > 1


def _forwards_over_cap(inst: Instance, ops: list[int]) -> bool:
    # the device cannot hold all of its forwards' activations at once
    return inst.cap is not None and sum(inst.alloc[i] for i in ops) > inst.cap


def _end_gap_bound(inst: Instance, d: int, ops: list[int], work: int, head: list[int], tail: list[int]) -> int:
    """Makespan bound of a device holding several stages under a cap whose forwards do not all
    fit at once (0 otherwise): its least release, the head window's idle, its work and the
    non-busy time from its last forward to the end of the step (:func:`.window.multi_stage_end_gap`).
    The windows are disjoint: memory is freed only by gradient or W ops, so the last forward
    starts after the first gradient op."""
    if not (_several_stages(inst, ops) and _forwards_over_cap(inst, ops)):
        return 0
    return min(head[i] for i in ops) + multi_stage_head_idle(inst, d) + work + multi_stage_end_gap(inst, d, tail)


def work_bounds(inst: Instance, objective: str | None = None) -> Bounds:
    """The cheapest sound bound, for a run whose deadline cut :func:`lower_bounds`: each device
    is busy for the sum of its ops (linear in the ops; no paths, no memory arguments).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(4)  # m * (tF + tB) = 8 * 3
        >>> work_bounds(instance(Problem(pl, 8, CostModel.abstract(pl, F=1, B=2), split=False))).best
        24
    """
    objective = objective or inst.problem.objective
    work = [sum(inst.dur[i] for i in inst.device_ops(d)) for d in range(inst.p)]
    return Bounds(objective, 0, max(work, default=0), 0, tuple(work), tuple(0 for _ in work))


def problem_bounds(problem: Problem) -> dict[str, float]:
    """Bounds in time units from the problem alone, without numbering its ops (for a run whose
    deadline cut the model building; linear in stages and pipes, not in ops): each device runs
    its stages' work for every microbatch of each pipe (device work) and, for the makespan, one
    microbatch's forwards, its backwards and the last W run one after another (critical path;
    delays and collectives only lengthen both, so leaving them out keeps the bounds sound).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem
        >>> pl = linear(4)  # device work m (tF + tB) = 8 * 3; one microbatch's path 4 * (1 + 2)
        >>> problem_bounds(Problem(pl, 8, CostModel.abstract(pl, F=1, B=2), split=False))
        {'critical_path': 12.0, 'device_work': 24.0, 'best': 24.0}
    """
    pl, dur = problem.placement, problem.costs.duration
    grad = I if problem.split else B
    stages = range(pl.num_stages)
    per_stage = [float(dur[F][s]) + float(dur[grad][s]) + (float(dur[W][s]) if problem.split else 0.0) for s in stages]
    work = [0.0] * pl.p
    for pipe, count in Counter(problem.pipes).items():
        for s in stages:
            work[pl.device(pipe, s)] += count * per_stage[s]
    path = 0.0
    if problem.objective == "makespan" and pl.num_stages:
        path = sum(float(dur[F][s]) + float(dur[grad][s]) for s in stages)
        path += float(dur[W][0]) if problem.split else 0.0
    return {"critical_path": path, "device_work": max(work, default=0.0), "best": max(path, max(work, default=0.0))}
