"""Program-order timing: the start time of every op when each device runs its program in order
and an op starts once its device is free and its inputs have arrived, and the op durations it
is fed.

This is the timing rule shared by the ``slot`` table (integer ticks, no edge delays), the
``async`` simulation (edge delays from the communication model), the verifier's timing bounds and
the schedule generators that derive one schedule from another's table; ``contention`` adds link
queues on top and lives in the engine layer. A core module: it imports only lower core modules.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from .comm import NO_COMM, CommModel, transfer_time
from .costs import CostModel
from .dag import StepDAG
from .errors import DeadlockError
from .ops import F


def op_durations(dag: StepDAG, costs: CostModel, comm: CommModel = NO_COMM, charge_comm: bool = False) -> list[float]:
    """Duration of every op position of ``dag`` under ``costs``; an overlapped slot's length sits
    on its first op; with ``charge_comm`` each op pays its slowest cross-device transfer.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.costs import CostModel
        >>> dag = build_dag(build("gpipe", p=2, m=1))
        >>> op_durations(dag, CostModel.unit(dag.schedule.placement), FixedDelay(0.5), True)
        [1.5, 1.5, 1.5, 1.5]
    """
    dur = [costs.op_duration(op) for op in dag.ops]
    if charge_comm:
        charge = [0.0] * len(dur)
        bb = costs.boundary_bytes
        for i, op in enumerate(dag.ops):
            for k in (0, 1):
                q = dag.pred[i][k]
                if q >= 0 and dag.cross[i][k]:
                    lo = min(op.stage, dag.ops[q].stage)
                    # checked (finite, >= 0) by the rule every engine, verify and optimize share
                    t = transfer_time(comm, dag.device[q], dag.device[i], bb[lo] if lo < len(bb) else 0.0)
                    charge[i] = max(charge[i], t)
                    charge[q] = max(charge[q], t)
        dur = [a + b for a, b in zip(dur, charge)]
    # an overlapped slot lasts overlap * (sum of its ops), stored on its first op
    i = 0
    while i < len(dur):
        j = i
        while dag.fused[j]:
            j += 1
        if j > i:
            dur[i] = costs.overlap * sum(dur[i : j + 1])
            for k in range(i + 1, j + 1):
                dur[k] = dur[i]
        i = j + 1
    return dur


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
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.schedules import build
        >>> dag = build_dag(build("gpipe", p=2, m=1))
        >>> list_schedule(dag, [1, 2, 1, 2])
        ([0.0, 4.0, 1.0, 2.0], [1.0, 6.0, 2.0, 4.0])
    """
    pred = dag.pred
    p0 = [pr[0] for pr in pred]
    p1 = [pr[1] for pr in pred]
    if edge_delay is None:
        d0 = d1 = None
    else:
        d0 = [float(e[0]) for e in edge_delay]
        d1 = [float(e[1]) for e in edge_delay]
    start, end, ptr, done = list_schedule_flat(
        p0, p1, d0, d1, duration, dag.fused, dag.idle_before, dag.offsets, idle_tick
    )
    if ptr is not None and done is not None:  # both set on a deadlock
        raise DeadlockError(_waits(dag, ptr, done))
    return [float(x) for x in start], [float(x) for x in end]


def list_schedule_flat(
    p0: list[int],
    p1: list[int],
    d0: list[float] | None,
    d1: list[float] | None,
    duration: Sequence[float],
    fused: Sequence[bool],
    idle_before: Sequence[int],
    offsets: Sequence[int],
    idle_tick: float = 0.0,
) -> tuple[list[float], list[float], list[int] | None, list[bool] | None]:
    """The engine of :func:`list_schedule` on flat lists: predecessors ``p0``/``p1`` (-1 for
    none) with their edge delays ``d0``/``d1`` (``None``: all 0). Returns ``(start, end, None,
    None)``, or on deadlock ``(start, end, ptr, done)`` with each device's blocked position and
    which ops ran. Times are sums of the given numbers (pass floats to get floats).

    A worklist instead of repeated sweeps: a device runs its program until an input is missing,
    then waits on that op and is woken when it completes, so each op is visited about once.

    Example:
        >>> list_schedule_flat([-1, 0], [-1, -1], [0.0, 0.5], [0.0, 0.0], [1, 1], [False] * 2, [0] * 2, [0, 1, 2])[:2]
        ([0.0, 1.5], [1.0, 2.5])
    """
    n = len(p0)
    p = len(offsets) - 1
    if d0 is None or d1 is None:
        d0 = d1 = [0.0] * n
    if not any(fused) and (not idle_tick or not any(idle_before)):
        return _list_schedule_plain(p0, p1, d0, d1, duration, offsets)
    start = [0.0] * n
    # end[i] < 0 means "not run yet" (durations are never negative)
    end = [-1.0] * n
    ptr = list(offsets[:-1])
    free = [0.0] * p
    # the device waiting on each op: every op has at most one successor on another device, so one
    # slot per op suffices; a second waiter (only in broken schedules) goes to ``extra``
    waiter = [-1] * n
    extra: dict[int, list[int]] = {}
    queue = deque(range(p))
    pop, push = queue.popleft, queue.append
    remaining = n
    while queue:
        d = pop()
        i, stop = ptr[d], offsets[d + 1]
        t_dev = free[d]
        blocked = -1
        while i < stop:
            if not fused[i]:
                # a single op (the common case)
                t = t_dev + idle_before[i] * idle_tick if idle_tick else t_dev
                q = p0[i]
                if q >= 0:
                    tq = end[q]
                    if tq < 0:
                        blocked = q
                        break
                    tq += d0[i]
                    if tq > t:
                        t = tq
                q = p1[i]
                if q >= 0:
                    tq = end[q]
                    if tq < 0:
                        blocked = q
                        break
                    tq += d1[i]
                    if tq > t:
                        t = tq
                start[i] = t
                t_dev = end[i] = t + duration[i]
                w = waiter[i]
                if w >= 0:
                    push(w)
                    if extra and i in extra:
                        queue.extend(extra.pop(i))
                i += 1
                continue
            # an overlapped slot is ops i..j (fused chain); all must be ready together
            j = i
            while fused[j]:
                j += 1
            t = t_dev + idle_before[i] * idle_tick
            for k in range(i, j + 1):
                for q, dl in ((p0[k], d0[k]), (p1[k], d1[k])):
                    if q < 0 or i <= q <= j:
                        continue
                    if end[q] < 0:
                        blocked = q
                        break
                    if end[q] + dl > t:
                        t = end[q] + dl
                if blocked >= 0:
                    break
            if blocked >= 0:
                break
            t_end = t + duration[i]
            for k in range(i, j + 1):
                start[k] = t
                end[k] = t_end
                if waiter[k] >= 0:
                    push(waiter[k])
                    if extra and k in extra:
                        queue.extend(extra.pop(k))
            t_dev = t_end
            i = j + 1
        if blocked >= 0:
            if waiter[blocked] < 0:
                waiter[blocked] = d
            else:
                extra.setdefault(blocked, []).append(d)
        remaining -= i - ptr[d]
        ptr[d] = i
        free[d] = t_dev
    if remaining:
        return start, [x if x >= 0 else 0.0 for x in end], ptr, [e >= 0 for e in end]
    return start, end, None, None


def _list_schedule_plain(
    p0: list[int],
    p1: list[int],
    d0: list[float],
    d1: list[float],
    duration: Sequence[float],
    offsets: Sequence[int],
) -> tuple[list[float], list[float], list[int] | None, list[bool] | None]:
    """:func:`list_schedule_flat` without overlapped slots or idle ticks (the common case), in
    the tightest loop CPython allows: same results."""
    n = len(p0)
    p = len(offsets) - 1
    start = [0.0] * n
    end = [-1.0] * n
    ptr = list(offsets[:-1])
    free = [0.0] * p
    waiter = [-1] * n
    extra: dict[int, list[int]] = {}
    queue = deque(range(p))
    pop, push = queue.popleft, queue.append
    q = -1
    while queue:
        d = pop()
        i, stop = ptr[d], offsets[d + 1]
        t = free[d]
        while i < stop:
            q = p0[i]
            if q >= 0:
                tq = end[q]
                if tq < 0:
                    break
                tq += d0[i]
                if tq > t:
                    t = tq
            q = p1[i]
            if q >= 0:
                tq = end[q]
                if tq < 0:
                    break
                tq += d1[i]
                if tq > t:
                    t = tq
            start[i] = t
            t = end[i] = t + duration[i]
            w = waiter[i]
            if w >= 0:
                push(w)
                if extra and i in extra:
                    queue.extend(extra.pop(i))
            i += 1
        else:
            ptr[d], free[d] = i, t
            continue
        # blocked on op q (``t`` is then this op's partial ready time: keep the device's own)
        if waiter[q] < 0:
            waiter[q] = d
        else:
            extra.setdefault(q, []).append(d)
        ptr[d] = i
        if i > offsets[d]:
            free[d] = end[i - 1]
    if any(ptr[d] < offsets[d + 1] for d in range(p)):
        return start, [x if x >= 0 else 0.0 for x in end], ptr, [e >= 0 for e in end]
    return start, end, None, None


def _waits(dag: Any, ptr: Any, done: Any, pred: Any = None) -> list[tuple[int, str, str]]:
    """What each device blocked at position ``ptr[d]`` waits for, as
    :class:`~ppverify.core.errors.DeadlockError` takes it: its next slot (an overlapped slot's
    ops joined by ``&``) and every input of the slot not yet produced (``done``), by op and
    device; an input produced in the slot itself (which cannot run before the slot starts); and
    an input produced whose SEND is posted after a later op of its rank (``pred``: the
    predecessors timing used, :func:`ppverify.core.send_gates.gated_pred`; ``dag.pred`` when
    None) by that SEND and the op it waits behind. ``dag``: a ``StepDAG`` or ``DagArrays``.

    Example:
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.io.torch_csv import parse_rows
        >>> dag = build_dag(parse_rows([["(0F0;0B0)OVERLAP_F_B"], ["1F0", "1B0"]]), check=False)
        >>> [str(o) for o in dag.ops], dag.fused  # 0B0 needs 0F0, which runs in its own slot
        (['0F0', '0B0', '1F0', '1B0'], [True, False, False, False])
        >>> _waits(dag, [0, 2], [False] * 4)
        [(0, '0F0&0B0', '0F0 in the same overlapped slot, 1B0 on device 1'), (1, '1F0', '0F0 on device 0')]
    """
    timing = dag.pred if pred is None else pred
    waits = []
    for d in range(len(dag.offsets) - 1):
        i, end = int(ptr[d]), dag.offsets[d + 1]
        if i >= end:
            continue
        j = i
        while j + 1 < end and dag.fused[j]:  # the slot's other ops
            j += 1
        slot = range(i, j + 1)
        need: list[str] = []
        for k in slot:
            for e in (0, 1):
                q, g = int(dag.pred[k][e]), int(timing[k][e])
                if q < 0:
                    continue
                if q in slot:
                    need.append(f"{dag.ops[q]} in the same overlapped slot")
                elif not done[q]:
                    need.append(f"{dag.ops[q]} on device {int(dag.device[q])}")
                elif g != q and not done[g]:  # produced, but its SEND is posted behind op g
                    o = dag.ops[q]
                    send = f"{o.stage}SEND_{'F' if o.kind == F else 'B'}{o.mb}"
                    need.append(f"{send} on device {int(dag.device[q])} (posted after {dag.ops[g]})")
        text = "&".join(str(dag.ops[k]) for k in slot)
        waits.append((d, text, ", ".join(dict.fromkeys(need)) or "an input that never arrives"))
    return waits


__all__ = ["list_schedule", "list_schedule_flat", "op_durations"]
