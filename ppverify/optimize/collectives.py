"""The collectives that end a step, as the solver sees them: the gradient all-reduce between the
replicas of each stage (two-pipe placements: Chimera, DualPipe) and the optional data-parallel
all-reduce, timed exactly as the ``async`` engine times them (:mod:`ppverify.engines.simulate`).

Under ``async`` a collective occupies no device and no link: the devices keep computing while it
runs (it is issued on a communication stream), so it only delays the end of the step. It starts
when what it waits for has ended and lasts the communication model's ring all-reduce time
(:func:`ppverify.system.allreduce_time`). Per ``sync`` mode, the all-reduce of stage ``s`` over
its replica devices waits for:

* ``eager``: the end of every ``B`` and ``W`` of stage ``s``, on every replica (the last
  weight-gradient op of the stage, wherever it runs);
* ``after-flush``: the end of every op on the replica devices;
* ``none``: it is left out.

A data-parallel all-reduce of device ``d`` (``dp_allreduce = N >= 2``) waits for every op of ``d``
and for the replica all-reduces ``d`` takes part in. The step ends when the last op and the last
collective have ended. In the solver that is, for each collective ``c`` with duration ``t_c``,
``done_c >= end(g) + t_c`` for each op ``g`` it waits for, ``done_c >= done_a + t_c`` for each
collective ``a`` it waits for, and ``makespan >= done_c``; with the program order fixed the least
such makespan is the engine's. Durations, bytes and replica groups come from
:func:`ppverify.replica_sync.collectives`, so the two never disagree on what a collective costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..comm import SYNC_MODES, CommModel
from ..costs import CostModel
from ..dag import StepDAG, build_dag_arrays
from ..ops import B, W
from ..replica_sync import ALLREDUCE, collectives


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
        >>> from ppverify.dag import build_dag
        >>> from ppverify.schedules import build
        >>> from ppverify.comm import FixedDelay
        >>> s = build("chimera", p=2, m=2)
        >>> dag = build_dag(s)
        >>> cs = step_collectives(dag, CostModel.abstract(s.placement), FixedDelay(1))
        >>> [(c.stage, c.devices, c.duration, [str(dag.ops[g]) for g in c.gates]) for c in cs]
        [(0, (0, 1), 2.0, ['0B0', '0B1']), (1, (0, 1), 2.0, ['1B1', '1B0'])]
        >>> step_collectives(build_dag(s), CostModel.abstract(s.placement), FixedDelay(1), "none")
        []
    """
    schedule = dag.schedule
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


def collective_tails(num_ops: int, durations: Sequence[int], colls: Sequence[StepCollective]) -> list[int]:
    """Per op, the least time that must follow its end because of the collectives waiting for it:
    the longest chain ``t_c + t_a + ...`` of a collective gated by the op and those after it.
    ``durations`` are the collectives' (in ticks, in ``colls`` order).

    Example:
        >>> cs = [StepCollective("allreduce", 0, (0, 1), 0.0, 2.0, (0, 1)),
        ...       StepCollective("dp-allreduce", -1, (0,), 0.0, 3.0, (0, 2), (0,))]
        >>> collective_tails(3, [2, 3], cs)   # op 0: 2 + 3; op 1: 2 + 3; op 2: 3
        [5, 5, 3]
    """
    total = list(durations)
    # a collective's chain: its own time plus the longest chain of the collectives waiting for it;
    # "after" only points to earlier collectives, so one reverse pass settles every chain
    for n in reversed(range(len(colls))):
        for a in colls[n].after:
            total[a] = max(total[a], durations[a] + total[n])
    tails = [0] * num_ops
    for n, c in enumerate(colls):
        for g in c.gates:
            tails[g] = max(tails[g], total[n])
    return tails


def collective_times(
    ends: Sequence[float], durations: Sequence[float], colls: Sequence[StepCollective]
) -> list[tuple[float, float]]:
    """``(start, end)`` of every collective, as early as possible given the op ``ends``.

    Example:
        >>> cs = [StepCollective("allreduce", 0, (0, 1), 0.0, 2.0, (0, 1)),
        ...       StepCollective("dp-allreduce", -1, (0,), 0.0, 3.0, (0, 2), (0,))]
        >>> collective_times([4, 6, 5], [2, 3], cs)
        [(6, 8), (8, 11)]
    """
    out: list[tuple[float, float]] = []
    for c, t in zip(colls, durations):
        t0 = max([ends[g] for g in c.gates] + [out[a][1] for a in c.after], default=0)
        out.append((t0, t0 + t))
    return out


def describe(colls: Sequence[StepCollective], sync: str, dp_allreduce: int, unit: str) -> str:
    """One line for reports: what the step's collectives are and that they are included.

    Example:
        >>> describe([StepCollective("allreduce", 0, (0, 3), 0.0, 2.0, (0,))], "eager", 0, "units")
        'replica all-reduce included (sync eager): 1 stage, 2 each'
        >>> describe([], "eager", 0, "units")
        ''
    """
    ar = [c for c in colls if c.kind == ALLREDUCE]
    dp = [c for c in colls if c.kind != ALLREDUCE]
    scale, suffix = (1e3, " ms") if unit == "s" else (1.0, "")
    parts = []
    if ar:
        lo, hi = min(c.duration for c in ar) * scale, max(c.duration for c in ar) * scale
        each = f"{lo:.4g}{suffix}" if abs(hi - lo) <= 1e-12 * max(1.0, hi) else f"{lo:.4g}-{hi:.4g}{suffix}"
        parts.append(
            f"replica all-reduce included (sync {sync}): {len(ar)} stage{'s' if len(ar) > 1 else ''}, {each} each"
        )
    if dp:
        parts.append(
            f"data-parallel all-reduce over {dp_allreduce} replicas included: "
            f"up to {max(c.duration for c in dp) * scale:.4g}{suffix} per device"
        )
    return "; ".join(parts)


__all__ = ["SYNC_MODES", "StepCollective", "collective_tails", "collective_times", "describe", "step_collectives"]
