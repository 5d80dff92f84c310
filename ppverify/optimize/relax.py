"""The one-device relaxation: a certified lower bound from a small exact model per device.

Keep one device's ops and forget the other devices' capacity: every other device is assumed free
whenever needed. What is left is a single-machine problem whose constraints every real schedule
satisfies on that device:

* each op's release (earliest start from the dependencies) and tail (least time after its end
  before the step can finish, the collectives that wait for it included: :mod:`.collectives`),
  from :func:`ppverify.optimize.bounds.heads_tails`;
* between two ops of the same microbatch on this device, the longest dependency path between them
  as a minimum lag (a forward to its backward: the microbatch's round trip through the rest of
  the pipeline);
* the device's memory cap, and microbatch order per kind and stage (symmetry, as in the full
  model).

Its optimum, or CP-SAT's proven bound on it after a short run, is a lower bound on the full
problem. It is much smaller (one device's ops) and captures what the closed-form window bound
(:mod:`.bounds`) cannot: how the round-trip lag, the memory cap and the work interact over the
whole step on the critical device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ortools.sat.python import cp_model

from ..core.ops import B, F, I, Op, W
from .bounds import Bounds, heads_tails
from .interrupt import stoppable
from .model import memory_lags
from .problem import Instance
from .solver_setup import make_solver, run_solver
from .stagepair import slot_cycle_lags, slot_precedences


def _lags(inst: Instance, devices: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(u, v, lag)``: op v starts at least ``lag`` after op u (same microbatch, both on the
    given devices)."""
    dag = inst.dag
    on_d = {i for d in devices for i in inst.device_ops(d)}
    by_mb: dict[int, list[int]] = {}
    for i in on_d:
        by_mb.setdefault(dag.ops[i].mb, []).append(i)
    order = inst.topo
    rank = {i: r for r, i in enumerate(order)}
    out = []
    for mb, mine in by_mb.items():
        members = inst.mb_members[mb]
        for u in mine:
            dist = {u: 0}
            for i in members:
                if rank[i] <= rank[u]:
                    continue
                for k, q in enumerate(dag.pred[i]):
                    if q in dist:
                        dist[i] = max(dist.get(i, 0), dist[q] + inst.dur[q] + inst.delay[i][k])
            out += [(u, v, dist[v]) for v in mine if v != u and v in dist]
    return out


def device_bound(
    inst: Instance,
    d: int | Sequence[int],
    objective: str,
    time_limit: float,
    workers: int = 1,
    seed: int = 0,
    lower: int = 0,
    work_limit: float | None = None,
    deterministic: bool = False,
) -> int:
    """Proven lower bound (ticks) on the objective from the relaxation keeping device d (or the
    devices listed) and assuming all others free (``lower``: a bound already known, posted as a
    redundant constraint; ``work_limit``: a budget of CP-SAT deterministic time, load-independent;
    ``deterministic``: several workers search in a fixed order, see
    :func:`~ppverify.optimize.solver_setup.make_solver`).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(3)  # device 0 alone: 3 F, then (wait for the round trip) 3 B: 3+(7-3)+6 = 13
        >>> inst = instance(Problem(pl, 3, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> device_bound(inst, 0, "makespan", 5.0)
        13
    """
    dag = inst.dag
    devices = [d] if isinstance(d, int) else list(d)
    ops = [i for dd in devices for i in inst.device_ops(dd)]
    if not ops:
        return 0
    head, tail = heads_tails(inst)
    model = cp_model.CpModel()
    # one microbatch after another (each within its longest lag and its work) is feasible, so the
    # optimum is within this horizon even where the cap forces idle between microbatches
    nmb = len({dag.ops[i].mb for i in ops})
    horizon = (
        max(head[i] for i in ops)
        + sum(inst.dur[i] for i in ops)
        + max(tail[i] for i in ops)
        + nmb * max((lag for _, _, lag in _lags(inst, devices)), default=0)
    )
    start = {i: model.new_int_var(head[i], horizon, f"start_{dag.ops[i]}") for i in ops}
    iv = {i: model.new_fixed_size_interval_var(start[i], inst.dur[i], f"run_{dag.ops[i]}") for i in ops}
    for dd in devices:
        model.add_no_overlap([iv[i] for i in inst.device_ops(dd)])
    for u, v, lag in _lags(inst, devices):
        model.add(start[v] >= start[u] + lag)
    # symmetry: microbatches of one pipe in order per kind and stage (see model.py)
    pipes = dag.schedule.pipe_of_mb
    groups: dict[tuple, list[int]] = {}
    for i in ops:
        op = dag.ops[i]
        groups.setdefault((op.kind, op.stage, pipes[op.mb]), []).append(i)
    for members in groups.values():
        members.sort(key=lambda i: dag.ops[i].mb)
        for a, b in zip(members, members[1:]):
            model.add(start[b] >= start[a] + inst.dur[a])
    pos = {dag.ops[i]: i for i in ops}
    if inst.cap is not None:
        for dd in devices:
            ivs, demands = [], []
            for i in inst.device_ops(dd):
                op = dag.ops[i]
                if op.kind != F:
                    continue
                for k in (I, W, B):
                    j = pos.get(Op(k, op.stage, op.mb))
                    if j is None or inst.free[j] == 0:
                        continue
                    size = model.new_int_var(0, horizon, "")
                    ivs.append(model.new_interval_var(start[i], size, start[j] + inst.dur[j], ""))
                    demands.append(inst.free[j])
            model.add_cumulative(ivs, demands, inst.cap)
            for f, g, extra in memory_lags(inst, list(inst.device_ops(dd)), pos):
                model.add(start[f] >= start[g] + inst.dur[g] + extra)
            # several stages per device (stagepair.py): memory slots, and the slot cycle
            for u, v, lag in slot_precedences(inst, dd) + slot_cycle_lags(inst, dd):
                model.add(start[v] >= start[u] + lag)
    obj = model.new_int_var(lower, max(lower, 2 * horizon), "obj")
    if objective == "makespan":
        for i in ops:
            model.add(obj >= start[i] + inst.dur[i] + tail[i])
    else:
        for dd in devices:
            first = model.new_int_var(0, horizon, f"first_{dd}")
            for i in inst.device_ops(dd):
                model.add(first <= start[i])
                model.add(obj >= start[i] + inst.dur[i] - first)
    model.minimize(obj)
    solver = make_solver(time_limit, workers, seed, work_limit, deterministic)
    with stoppable(solver):  # Ctrl-C / SIGTERM stop it (interrupt.py)
        status = run_solver(solver, model)
    if status == cp_model.OPTIMAL:
        return round(solver.objective_value)
    proven = solver.best_objective_bound
    # an unfinished run may report no bound at all (presolve cut short): fall back to ``lower``
    return max(lower, math.ceil(proven - 1e-9) if math.isfinite(proven) else 0)


def relaxation_bound(
    inst: Instance,
    bounds: Bounds,
    time_limit: float,
    workers: int = 1,
    seed: int = 0,
    work_limit: float | None = None,
    deterministic: bool = False,
    stop: Any = None,
) -> tuple[int, list[int]]:
    """Best device-relaxation bound (ticks), solving devices in decreasing order of their analytic
    bound and sharing ``time_limit`` (and ``work_limit``, deterministic seconds) among them; also the per-device values (0 = not solved).
    ``stop`` (a :class:`threading.Event`, e.g. set by Ctrl-C): solve no further device once set.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import lower_bounds
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> relaxation_bound(inst, lower_bounds(inst), 5.0)[0]  # (m+p-1)(tF+tB)
        9
    """
    import time

    objective = inst.problem.objective
    order = sorted(range(inst.p), key=lambda d: -bounds.per_device[d])
    per = [0] * inst.p
    deadline = time.monotonic() + time_limit
    for n, d in enumerate(order):
        left = deadline - time.monotonic()
        if left <= 0.05 or (stop is not None and stop.is_set()):
            break
        # the most critical device (largest analytic bound) gets half the budget, the rest share
        share = left / 2 if n == 0 and len(order) > 1 else left / (len(order) - n)
        # the deterministic budget is shared the same way, by count, never by what the clock says
        wshare = (
            None
            if work_limit is None
            else (work_limit / 2 if n == 0 and len(order) > 1 else work_limit / 2 / max(1, len(order) - 1))
        )
        per[d] = device_bound(inst, d, objective, share, workers, seed, bounds.per_device[d], wshare, deterministic)
    return max(per, default=0), per
