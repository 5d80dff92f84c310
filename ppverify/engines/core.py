"""List scheduling in program order: the start time of every op when each device runs its program
in order and an op starts once its device is free and its inputs have arrived.

This is the timing rule shared by the ``slot`` table (integer ticks, no edge delays) and the
``async`` simulation (edge delays from the communication model). ``contention`` adds link queues on
top and lives in its own module.
"""

from __future__ import annotations

from typing import Sequence

from ..dag import StepDAG
from ..errors import DeadlockError


def list_schedule(
    dag: StepDAG,
    duration: Sequence[float],
    edge_delay: Sequence[Sequence[float]] | None = None,
    idle_tick: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Start and end of every op (positions of ``dag``).

    ``duration[i]`` is op i's run time; ``edge_delay[i][k]`` the delay between the end of
    ``dag.pred[i][k]`` and the moment op i may start (0 when omitted). Fused ops (an overlapped
    slot) start together and last the slot's ``duration`` of the first op. Each idle slot in a
    program delays its device by ``idle_tick``. Raises :class:`DeadlockError` naming every waiting
    device when the programs cannot complete.

    Example:
        >>> from ppverify.dag import build_dag
        >>> from ppverify.schedules import build
        >>> dag = build_dag(build("gpipe", p=2, m=1))
        >>> list_schedule(dag, [1, 2, 1, 2])
        ([0.0, 4.0, 1.0, 2.0], [1.0, 6.0, 2.0, 4.0])
    """
    n = dag.num_ops
    p = len(dag.offsets) - 1
    pred, fused, idle_before, offsets = dag.pred, dag.fused, dag.idle_before, dag.offsets
    start = [0.0] * n
    end = [0.0] * n
    done = [False] * n
    ptr = list(offsets[:-1])
    free = [0.0] * p
    remaining = n
    active = list(range(p))
    while remaining:
        progressed = False
        next_active = []
        for d in active:
            i, stop = ptr[d], offsets[d + 1]
            t_dev = free[d]
            while i < stop:
                # an overlapped slot is ops i..j (fused chain); all must be ready together
                j = i
                while fused[j]:
                    j += 1
                t = t_dev + idle_before[i] * idle_tick
                ready = True
                for k in range(i, j + 1):
                    pk = pred[k]
                    for e in (0, 1):
                        q = pk[e]
                        if q < 0:
                            continue
                        if not done[q]:
                            if i <= q <= j:
                                continue
                            ready = False
                            break
                        tq = end[q] + (edge_delay[k][e] if edge_delay is not None else 0.0)
                        if tq > t:
                            t = tq
                    if not ready:
                        break
                if not ready:
                    break
                t_end = t + duration[i]
                for k in range(i, j + 1):
                    start[k] = t
                    end[k] = t_end
                    done[k] = True
                remaining -= j + 1 - i
                t_dev = t_end
                i = j + 1
                progressed = True
            ptr[d] = i
            free[d] = t_dev
            if i < stop:
                next_active.append(d)
        active = next_active
        if not progressed and remaining:
            raise DeadlockError(_waits(dag, ptr, done))
    return [float(x) for x in start], [float(x) for x in end]


def _waits(dag: StepDAG, ptr: list[int], done: list[bool]) -> list[tuple[int, str, str]]:
    waits = []
    for d in range(len(dag.offsets) - 1):
        i = ptr[d]
        if i >= dag.offsets[d + 1]:
            continue
        missing = [dag.ops[q] for q in dag.pred[i] if q >= 0 and not done[q]]
        waits.append((d, str(dag.ops[i]), ", ".join(f"{o} on device {dag.device[dag.ops.index(o)]}" for o in missing)))
    return waits
