"""The collectives that end a step: the gradient all-reduce between the replicas of a stage held
by several devices (two-pipe placements such as Chimera's, per synchronisation mode) and the
data-parallel all-reduce of everything a device holds. The engines time them and the optimizer
adds them to its model from this one definition, so the two never disagree on what a collective
is or when it may start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .comm import SYNC_MODES, CommModel
from .costs import CostModel
from .dag import DagArrays
from .errors import ParameterError
from .ops import KIND_CODE, B, W
from .schedule import Schedule

ALLREDUCE, DP_ALLREDUCE = "allreduce", "dp-allreduce"


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
    pl = schedule.placement
    used = sorted(set(schedule.pipe_of_mb))
    if len(used) < 2:
        return []  # one pipe holds each stage on one device
    out = []
    for s in range(pl.num_stages):
        devs = tuple(sorted({pl.maps[pipe][s] for pipe in used}))
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
        >>> from ppverify.comm import FixedDelay
        >>> s = build("chimera", p=2, m=2)
        >>> from ppverify.dag import build_dag_arrays
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
        >>> from ppverify.dag import build_dag_arrays
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
