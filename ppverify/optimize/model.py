"""Step 1 of 3 (build): the CP-SAT model of one training step, in the style of OR-Tools' job-shop
example: one fixed-size interval per op, precedences with communication delays, no overlap per
device, memory as a cumulative resource, the objective as a variable.

Model strength (all documented in the manual, docs/optimization.md, "How the model is built"):

* **Analytic bounds** (:mod:`.bounds`) are posted as redundant constraints on the objective and on
  each device's span, so a hint that meets them is proven optimal at once.
* **Symmetry breaking**: for every kind, stage and pipe, microbatches start in increasing order.
  Exchange argument: costs, memory and delays depend on the stage, never on the microbatch, and
  every dependency links two ops of the *same* microbatch with a lag that does not depend on it.
  Given any feasible schedule, give the k-th earliest start of each (kind, stage, pipe) group to
  the k-th microbatch of the pipe. A dependency ``start(y, mb) >= start(x, mb) + lag`` that holds
  for every mb holds between the sorted sequences too (order statistics are monotone); each
  device runs the same set of intervals, so no-overlap holds; memory events keep their times and
  amounts, so the memory profile and every objective are unchanged. Hence some optimal schedule
  is ordered, and the constraint loses nothing. (Not used in evaluate mode, where the program
  order is given.)
* **Collectives** (:mod:`.collectives`): the replica and data-parallel all-reduces occupy no
  device; each gets its end as a variable, after the ops and collectives it waits for plus its
  duration, and the makespan is at least every such end (not the span: a span counts a device's
  own ops). Relabelling microbatches keeps every collective's release (a maximum over all
  microbatches of a stage or device), so the symmetry argument above still holds.
* **Memory-implied precedences** on devices holding one stage: a forward of microbatch j needs at
  least ``j + 1 - floor(cap / M_F)`` earlier backwards of that stage to have ended (each frees at
  most one activation), and those are the first ones by the symmetry order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ..core.ops import B, F, I, Op, W
from .bounds import Bounds, heads_tails
from .deadline import Deadline, check
from .problem import Instance


@dataclass(frozen=True, eq=False)
class BuiltModel:
    """The CP-SAT model and the variables the reading step needs."""

    model: cp_model.CpModel
    start: list[cp_model.IntVar]
    objective: cp_model.IntVar
    horizon: int


def build_model(
    inst: Instance,
    bounds: Bounds,
    order: Sequence[Sequence[int]] | None = None,
    hint: Sequence[int] | None = None,
    upper: int | None = None,
    symmetry: bool = True,
    deadline: Deadline | None = None,
) -> BuiltModel:
    """Build the model. ``order`` (op positions per device) fixes each device's program order
    (evaluate mode); ``hint`` gives start ticks to try first; ``upper`` is an objective value
    already achieved (a cut: only better or equal schedules are searched). ``deadline``
    (:mod:`.deadline`) is checked between the groups of constraints and every 8192 ops.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import lower_bounds
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> built = build_model(inst, lower_bounds(inst))
        >>> len(built.start), built.horizon
        (8, 12)
    """
    dag = inst.dag
    n = dag.num_ops
    objective = inst.problem.objective
    model = cp_model.CpModel()
    # horizon: running every op one after another, every transfer included, always fits
    check(deadline)
    horizon = sum(inst.dur) + sum(sum(row) for row in inst.delay) + sum(inst.coll_dur)
    if upper is not None and objective == "makespan":
        horizon = min(horizon, upper)
    head, tail = heads_tails(inst, deadline)
    start, end, interval = [], [], []
    for i in range(n):
        if i % 8192 == 0:
            check(deadline)
        start.append(model.new_int_var(head[i], max(head[i], horizon - inst.dur[i] - tail[i]), f"start_{dag.ops[i]}"))
        end.append(start[i] + inst.dur[i])
        interval.append(model.new_fixed_size_interval_var(start[i], inst.dur[i], f"run_{dag.ops[i]}"))

    # dependencies: an op starts once each input has ended and crossed the link
    for i in range(n):
        if i % 8192 == 0:
            check(deadline)
        for k, q in enumerate(dag.pred[i]):
            if q >= 0:
                model.add(start[i] >= end[q] + inst.delay[i][k])

    # one op at a time per device
    for d in range(inst.p):
        model.add_no_overlap([interval[i] for i in inst.device_ops(d)])

    check(deadline)
    pos = {op: i for i, op in enumerate(dag.ops)}
    if inst.cap is not None:
        _add_memory(model, inst, pos, start, end, horizon)

    if order is not None:
        for prog in order:
            for a, b in zip(prog, prog[1:]):
                model.add(start[b] >= end[a])
    elif symmetry:
        _add_symmetry(model, inst, pos, start, end)
        if inst.cap is not None:
            for d in range(inst.p):
                # the plain pairs, not memory_lags: the extra lag slowed the proofs down (unit
                # (16,64) c=1: not proven within 8.4 deterministic s with it, 3.9 without)
                for f, g in memory_precedences(inst, list(inst.device_ops(d)), pos):
                    model.add(start[f] >= end[g])

    check(deadline)
    # objective
    lo = bounds.best
    hi = max(lo, horizon if upper is None else min(upper, horizon))
    obj = model.new_int_var(lo, hi, objective)
    sinks = [i for i, op in enumerate(dag.ops) if op.kind in (W, B)]
    if objective == "makespan":
        for i in sinks:
            model.add(obj >= end[i])
        done: list = []
        for n, c in enumerate(inst.colls):
            t = inst.coll_dur[n]
            fin = model.new_int_var(t, hi, f"done_{c.kind}_{c.stage}_{n}")
            for g in c.gates:
                model.add(fin >= end[g] + t)
            for a in c.after:
                model.add(fin >= done[a] + t)
            model.add(obj >= fin)
            done.append(fin)
    else:
        for d in range(inst.p):
            ops = list(inst.device_ops(d))
            if not ops:
                continue
            first = model.new_int_var(0, horizon, f"first_{d}")
            last = model.new_int_var(0, horizon, f"last_{d}")
            for i in ops:
                if dag.ops[i].kind == F:  # a device's first op is always a forward
                    model.add(first <= start[i])
                if dag.ops[i].kind in (W, B):  # ... and its last a W or B
                    model.add(last >= end[i])
            model.add(last - first >= bounds.floor(d))
            model.add(obj >= last - first)
    model.minimize(obj)
    check(deadline)

    if hint is not None:
        for i in range(n):
            model.add_hint(start[i], int(hint[i]))
    return BuiltModel(model, start, obj, horizon)


def _add_memory(model, inst: Instance, pos, start, end, horizon: int) -> None:
    """Activations as a cumulative resource: ``(stage, mb)`` holds what I frees from the start of
    F to the end of I, and the rest (or all, with B) from the start of F to the end of W (or B)."""
    dag = inst.dag
    by_device: list[tuple[list, list]] = [([], []) for _ in range(inst.p)]
    for i, op in enumerate(dag.ops):
        if op.kind != F:
            continue
        d = dag.device[i]
        for k in (I, W, B):
            j = pos.get(Op(k, op.stage, op.mb))
            if j is None or inst.free[j] == 0:
                continue
            size = model.new_int_var(0, horizon, f"held_{op}_{k}")
            held = model.new_interval_var(start[i], size, end[j], f"mem_{op}_{k}")
            by_device[d][0].append(held)
            by_device[d][1].append(inst.free[j])
    for ivs, demands in by_device:
        if ivs:
            model.add_cumulative(ivs, demands, inst.cap)


def memory_precedences(inst: Instance, ops: list[int], pos: dict[Op, int]) -> list[tuple[int, int]]:
    """``(forward, backward)`` position pairs forced by the cap on a one-stage device: F of the
    j-th microbatch (pipe order) waits for the end of the backward (I or B) of microbatch
    j - floor(cap / M_F) (module doc). Empty when the device holds more than one stage.
    ``pos`` maps each op to its position in ``inst.dag``.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(1)
        >>> inst = instance(Problem(pl, 3, CostModel.abstract(pl, F=1, B=2), split=False, memory_cap=2))
        >>> pos = {op: i for i, op in enumerate(inst.dag.ops)}
        >>> [(str(inst.dag.ops[f]), str(inst.dag.ops[g])) for f, g in memory_precedences(inst, list(inst.device_ops(0)), pos)]
        [('0F2', '0B0')]
    """
    dag = inst.dag
    pipes = dag.schedule.pipe_of_mb
    stages = {(pipes[dag.ops[i].mb], dag.ops[i].stage) for i in ops}
    if len(stages) != 1:
        return []
    ((_, s),) = stages
    mbs = sorted({dag.ops[i].mb for i in ops})
    fpos = [pos[Op(F, s, mb)] for mb in mbs]
    gpos = [pos.get(Op(I, s, mb), pos.get(Op(B, s, mb))) for mb in mbs]
    assert inst.cap is not None  # called under a cap only
    if inst.alloc[fpos[0]] == 0:  # a stage holding nothing (0 layers): the cap orders none of its ops
        return []
    k = inst.cap // inst.alloc[fpos[0]]
    pairs: list[tuple[int, int]] = []
    for j in range(k, len(mbs)):
        g = gpos[j - k]
        assert g is not None  # every forward's gradient op (I or B) runs on its device too
        pairs.append((fpos[j], g))
    return pairs


def memory_lags(inst: Instance, ops: list[int], pos: dict[Op, int]) -> list[tuple[int, int, int]]:
    """:func:`memory_precedences` with the least gap after the backward's end: ``(f, g, extra)``
    means ``start(f) >= end(g) + extra``. Posted in the one-device relaxation (:mod:`.relax`: at
    unit costs, cap p*M_F, c=1, (32,128) its device 0 reaches 601 within 2 deterministic s, 600
    without), not in the full model, whose proofs it slowed down (see :func:`build_model`).

    With split backward, ``I`` frees ``f_I`` of an activation ``a`` and ``W`` the rest ``f_W``.
    Let the cap be ``k*a + r`` (``0 <= r < a``) and ``g = I(n-1)``, ``n = j + 1 - k``. Before
    F(j) starts, ``(j+1)*a - cap = n*a - r`` must have been freed; by the symmetry order the ended
    I's and W's are prefixes ``I(0..nI-1)``, ``W(0..nW-1)`` with ``nW <= nI``. If ``nI = n``
    exactly, ``f_I*n + f_W*nW >= n*a - r`` gives ``nW >= n - r/f_W``, so ``nW >= n`` as soon as
    ``f_W > r``: ``W(n-1)`` has ended (at least ``tW`` after ``I(n-1)``); otherwise ``I(n)``
    has ended (at least ``tI`` after ``I(n-1)``, the I's run in order). So ``extra = min(tI, tW)``
    (``tW`` when I frees nothing: then only W's free memory); 0 with one B or when ``f_W <= r``.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(1)
        >>> costs = CostModel.abstract(pl, F=1, I=2, W=3)
        >>> from dataclasses import replace
        >>> inst = instance(Problem(pl, 3, replace(costs, freed_by_I=(0.5,)), split=True, memory_cap=2))
        >>> pos = {op: i for i, op in enumerate(inst.dag.ops)}
        >>> [(str(inst.dag.ops[f]), str(inst.dag.ops[g]), x) for f, g, x in memory_lags(inst, list(inst.device_ops(0)), pos)]
        [('0F2', '0I0', 2)]
    """
    pairs = memory_precedences(inst, ops, pos)
    if not pairs:
        return []
    assert inst.cap is not None  # memory_precedences gives pairs under a cap only
    op = inst.dag.ops[pairs[0][1]]
    w = pos.get(Op(W, op.stage, op.mb))
    extra = 0
    if op.kind == I and w is not None:
        g = pairs[0][1]
        a = inst.alloc[pairs[0][0]]
        r = inst.cap - (inst.cap // a) * a
        if inst.free[g] == 0:
            extra = inst.dur[w]
        elif inst.free[w] > r:
            extra = min(inst.dur[g], inst.dur[w])
    return [(f, g, extra) for f, g in pairs]


def _add_symmetry(model, inst: Instance, pos, start, end) -> None:
    """Microbatches of one pipe start in increasing order per kind and stage (module doc)."""
    dag = inst.dag
    pipes = dag.schedule.pipe_of_mb
    groups: dict[tuple[str, int, int], list[int]] = {}
    for i, op in enumerate(dag.ops):
        groups.setdefault((op.kind, op.stage, pipes[op.mb]), []).append(i)
    for members in groups.values():
        members.sort(key=lambda i: dag.ops[i].mb)
        for a, b in zip(members, members[1:]):
            model.add(start[b] >= end[a])
