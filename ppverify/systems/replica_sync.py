"""The collectives that end a step: the gradient all-reduce between the replicas of a stage held
by several devices (two-pipe placements such as Chimera's, per synchronisation mode) and the
data-parallel all-reduce of everything a device holds. The engines time them, and the optimizer
and the verifier's timing claims add them to their models from this one definition (the
optimizer's and the verifier's through :func:`step_collectives` and :func:`collective_tails`), so
none of them disagree on what a collective is or when it may start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ..core.comm import SYNC_MODES, CommModel
from ..core.costs import CostModel
from ..core.dag import DagArrays, StepDAG, build_dag_arrays
from ..core.errors import ParameterError
from ..core.ops import KIND_CODE, B, W
from ..core.placement import Placement
from ..core.schedule import Schedule

ALLREDUCE, DP_ALLREDUCE = "allreduce", "dp-allreduce"

_Num = TypeVar("_Num", int, float)  # ticks (the solver) or times: the result has the inputs' type


def replica_groups(schedule: Schedule) -> list[tuple[int, tuple[int, ...]]]:
    """``(stage, devices)`` for every stage held by more than one device (over the pipes that
    carry microbatches): the groups whose weight gradients must be all-reduced.

    Example:
        >>> from ppverify.schedules import build
        >>> replica_groups(build("chimera", p=4, m=4))
        [(0, (0, 3)), (1, (1, 2)), (2, (1, 2)), (3, (0, 3))]
        >>> replica_groups(build("1f1b", p=4, m=4))
        []
    """
    return stage_replicas(schedule.placement, schedule.pipe_of_mb)


def stage_replicas(placement: Placement, pipe_of_mb: Sequence[int]) -> list[tuple[int, tuple[int, ...]]]:
    """:func:`replica_groups` of a placement whose microbatches run on the pipes ``pipe_of_mb``
    (a schedule not built yet: its placement and pipe split are enough).

    Example:
        >>> from ppverify.core.placement import bidirectional
        >>> stage_replicas(bidirectional(2), (0, 1)), stage_replicas(bidirectional(2), (0, 0))
        ([(0, (0, 1)), (1, (0, 1))], [])
    """
    used = sorted(set(pipe_of_mb))
    if len(used) < 2:
        return []  # one pipe holds each stage on one device
    out = []
    for s in range(placement.num_stages):
        devs = tuple(sorted({placement.maps[pipe][s] for pipe in used}))
        if len(devs) > 1:
            out.append((s, devs))
    return out


@dataclass(frozen=True)
class Collective:
    """One collective of the step: kind (``allreduce`` between stage replicas, ``dp-allreduce``),
    devices, bytes, earliest start given compute end times, uncontended duration, and the stage
    (-1 for a data-parallel all-reduce of everything a device holds)."""

    kind: str
    devices: tuple[int, ...]
    nbytes: float
    ready: float
    duration: float
    stage: int = -1


def collectives(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel,
    dag: DagArrays,
    end: np.ndarray,
    sync: str = "eager",
    dp_allreduce: int = 0,
) -> list[Collective]:
    """Replica all-reduces (per ``sync``) and data-parallel all-reduces, with their ready times
    given the compute ``end`` times. The DP all-reduce of a device waits for that device's replica
    syncs, so it is returned with ``ready`` = its compute end and resolved by the engines.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("chimera", p=2, m=2)
        >>> from ppverify.core.dag import build_dag_arrays
        >>> dag = build_dag_arrays(s)
        >>> [(c.kind, c.devices, c.duration) for c in collectives(s, CostModel.abstract(s.placement), FixedDelay(1), dag, np.ones(dag.num_ops))]
        [('allreduce', (0, 1), 2.0), ('allreduce', (0, 1), 2.0)]
    """
    from .system import allreduce_time, dp_allreduce_time

    if sync not in SYNC_MODES:
        raise ParameterError("sync", sync, f"expected one of {', '.join(SYNC_MODES)}")
    if isinstance(dp_allreduce, bool) or not isinstance(dp_allreduce, int) or dp_allreduce < 0:
        raise ParameterError("dp-allreduce", dp_allreduce, "must be an integer >= 0 (data-parallel replicas)")
    frac = float(costs.extra.get("grad_fraction", 0.0)) if costs.extra else 0.0
    grad = [w * frac for w in costs.weight_bytes]
    p = schedule.p
    dev_end = device_ends(dag, end, p)
    out: list[Collective] = []
    if sync != "none":
        is_last_bwd = (dag.kind == KIND_CODE[B]) | (dag.kind == KIND_CODE[W])
        for s, devs in replica_groups(schedule):
            if sync == "eager":
                sel = is_last_bwd & (dag.stage == s)
                ready = float(end[sel].max()) if sel.any() else 0.0
            else:
                ready = float(max(dev_end[d] for d in devs))
            out.append(Collective(ALLREDUCE, devs, grad[s], ready, allreduce_time(comm, list(devs), grad[s]), s))
    if dp_allreduce >= 2:
        held = [0.0] * p
        pl = schedule.placement
        for pipe in sorted(set(schedule.pipe_of_mb)):
            for s, d in enumerate(pl.maps[pipe]):
                held[d] += grad[s]
        for d in range(p):
            out.append(
                Collective(
                    DP_ALLREDUCE, (d,), held[d], float(dev_end[d]), dp_allreduce_time(comm, dp_allreduce, held[d])
                )
            )
    return out


def device_ends(dag: DagArrays, end: np.ndarray, p: int) -> np.ndarray:
    """Each device's last op end (0 for a device without ops).

    Example:
        >>> from ppverify.core.dag import build_dag_arrays
        >>> from ppverify.schedules import build
        >>> device_ends(build_dag_arrays(build("gpipe", p=2, m=1)), np.array([1.0, 4.0, 2.0, 3.0]), 3).tolist()
        [4.0, 3.0, 0.0]
    """
    dev_end = np.zeros(p)
    if len(end):
        # ops are grouped by device (positions): one max per segment, not the slow ufunc.at
        off = np.asarray(dag.offsets)
        nz = np.flatnonzero(np.diff(off) > 0)
        dev_end[nz] = np.maximum(dev_end[nz], np.maximum.reduceat(end, off[nz]))
    return dev_end


@dataclass(frozen=True)
class StepCollective:
    """One collective: ``kind`` (``allreduce`` or ``dp-allreduce``), ``stage`` (-1 for a DP
    all-reduce), ``devices``, ``nbytes``, ``duration`` (time units), the op positions it waits for
    (``gates``) and the indices of earlier collectives it waits for (``after``)."""

    kind: str
    stage: int
    devices: tuple[int, ...]
    nbytes: float
    duration: float
    gates: tuple[int, ...]
    after: tuple[int, ...] = ()


def step_collectives(
    dag: StepDAG, costs: CostModel, comm: CommModel, sync: str = "eager", dp_allreduce: int = 0
) -> list[StepCollective]:
    """The collectives of a step over ``dag``'s ops (module doc), replica all-reduces first.

    Example:
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("chimera", p=2, m=2)
        >>> dag = build_dag(s)
        >>> cs = step_collectives(dag, CostModel.abstract(s.placement), FixedDelay(1))
        >>> [(c.stage, c.devices, c.duration, [str(dag.ops[g]) for g in c.gates]) for c in cs]
        [(0, (0, 1), 2.0, ['0B0', '0B1']), (1, (0, 1), 2.0, ['1B1', '1B0'])]
        >>> step_collectives(build_dag(s), CostModel.abstract(s.placement), FixedDelay(1), "none")
        []
    """
    schedule = dag.schedule
    if (sync == "none" or not replica_groups(schedule)) and dp_allreduce < 2 and sync in SYNC_MODES:
        return []  # no collective ends this step (the DAG arrays below are not needed)
    arrays = build_dag_arrays(schedule)
    engine = collectives(schedule, costs, comm, arrays, np.zeros(arrays.num_ops), sync, dp_allreduce)
    out: list[StepCollective] = []
    for c in engine:
        if c.kind == ALLREDUCE:
            if sync == "eager":
                gates = [i for i, op in enumerate(dag.ops) if op.stage == c.stage and op.kind in (B, W)]
            else:  # after-flush
                gates = [i for d in c.devices for i in range(dag.offsets[d], dag.offsets[d + 1])]
            out.append(StepCollective(c.kind, c.stage, c.devices, c.nbytes, c.duration, tuple(gates)))
    replica = len(out)
    for c in engine:
        if c.kind != ALLREDUCE:
            d = c.devices[0]
            after = tuple(n for n in range(replica) if d in out[n].devices)
            out.append(
                StepCollective(
                    c.kind, -1, c.devices, c.nbytes, c.duration, tuple(range(dag.offsets[d], dag.offsets[d + 1])), after
                )
            )
    return out


def collective_tails(num_ops: int, durations: Sequence[_Num], colls: Sequence[StepCollective]) -> list[_Num]:
    """Per op, the least time that must follow its end because of the collectives waiting for it:
    the longest chain ``t_c + t_a + ...`` of a collective gated by the op and those after it.
    ``durations`` are the collectives' (in ``colls`` order; integer ticks give integer tails).

    Example:
        >>> cs = [StepCollective("allreduce", 0, (0, 1), 0.0, 2.0, (0, 1)),
        ...       StepCollective("dp-allreduce", -1, (0,), 0.0, 3.0, (0, 2), (0,))]
        >>> collective_tails(3, [2, 3], cs)   # op 0: 2 + 3; op 1: 2 + 3; op 2: 3
        [5, 5, 3]
    """
    total: list[_Num] = list(durations)
    # a collective's chain: its own time plus the longest chain of the collectives waiting for it;
    # "after" only points to earlier collectives, so one reverse pass settles every chain
    for n in reversed(range(len(colls))):
        for a in colls[n].after:
            total[a] = max(total[a], durations[a] + total[n])
    tails: list[_Num] = [0] * num_ops
    for n, c in enumerate(colls):
        for g in c.gates:
            tails[g] = max(tails[g], total[n])
    return tails
