"""Where a schedule with explicit SEND actions (a PyTorch ``compute_comms`` file) posts each send.

The timing rule sends an op's output the moment the op ends (the sender's communication stream).
A file that lists ``SEND`` actions says more: the runtime posts a send when its rank reaches it in
program order, that is once the compute op before it on that rank has ended. Where a ``SEND`` sits
after a later compute op than its producer (``0F0, 0F1, 0SEND_F0``), the transfer cannot start
before that op (``0F1``) ends; timed from its producer, the step would come out faster than the
file can run (and ``verify --makespan-le`` would prove a bound the file misses). For timing, the
cross-device dependency then runs from that op, the *gate*, instead of the producer: the producer
precedes the gate on the same rank, so the gate's end is the send's earliest start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ops import Comm, F, Op, Overlap
from .schedule import Schedule


def send_key(c: Comm) -> tuple[str, int, int]:
    """``(direction, consuming stage, microbatch)`` of a SEND: ``0SEND_F1`` feeds stage 1's
    forward of microbatch 1, ``2SEND_B0`` stage 1's backward of microbatch 0.

    Example:
        >>> send_key(Comm("SEND_F", 0, 1)), send_key(Comm("SEND_B", 2, 0))
        (('F', 1, 1), ('B', 1, 0))
    """
    return ("F", c.stage + 1, c.mb) if c.kind == "SEND_F" else ("B", c.stage - 1, c.mb)


def send_gates(schedule: Schedule) -> dict[tuple[str, int, int], int]:
    """For each SEND of the programs (:func:`send_key`), the position (as the DAG numbers ops:
    device 0's compute ops first, an overlapped slot's ops in turn) of the last compute op before
    it on its rank; empty for a schedule without SEND actions.

    Example:
        >>> from ppverify.core.placement import linear
        >>> s = Schedule(linear(2), 1, ((Op("F", 0, 0), Comm("SEND_F", 0, 0), Op("B", 0, 0)),
        ...                             (Op("F", 1, 0), Op("B", 1, 0))), (0,))
        >>> send_gates(s)
        {('F', 1, 0): 0}
    """
    gates: dict[tuple[str, int, int], int] = {}
    if all(Comm not in set(map(type, prog)) for prog in schedule.programs):  # the common case, at C speed
        return gates
    pos = 0
    for prog in schedule.programs:
        last = -1
        for a in prog:
            if type(a) is Op:
                last, pos = pos, pos + 1
            elif type(a) is Overlap:
                pos += len(a.ops)
                last = pos - 1
            elif type(a) is Comm and a.kind in ("SEND_F", "SEND_B"):
                gates[send_key(a)] = last
    return gates


def gated_pred(dag: Any) -> list[list[int]] | None:
    """The predecessors of ``dag`` (a :class:`~ppverify.core.dag.StepDAG` or
    :class:`~ppverify.core.dag.DagArrays`) for timing: each cross-device input whose SEND is
    posted after a later compute op than its producer depends on that op instead (see the module
    docstring). ``None`` when no send is late (every schedule without SEND actions).

    Example:
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.core.placement import linear
        >>> s = Schedule(linear(2), 2, ((Op("F", 0, 0), Op("F", 0, 1), Comm("SEND_F", 0, 0),
        ...     Comm("SEND_F", 0, 1), Op("B", 0, 0), Op("B", 0, 1)),
        ...     (Op("F", 1, 0), Op("F", 1, 1), Op("B", 1, 0), Op("B", 1, 1))), (0, 0))
        >>> dag = build_dag(s)
        >>> dag.pred[4], gated_pred(dag)[4]  # 1F0 waits for 0F1's end: its SEND comes after 0F1
        ([0, -1], [1, -1])
    """
    gates = send_gates(dag.schedule)
    if not gates:
        return None
    pred = [[int(q) for q in row] for row in dag.pred]
    device: Sequence[int] = dag.device
    late = False
    for i, op in enumerate(dag.ops):
        for k in (0, 1):
            q = pred[i][k]
            if q < 0 or not dag.cross[i][k]:
                continue
            g = gates.get(("F" if k == 0 and op.kind == F else "B", op.stage, op.mb), -1)
            if g > q and int(device[g]) == int(device[q]):  # a later op on the producer's rank
                pred[i][k] = g
                late = True
    return pred if late else None


def late_sends(dag: Any) -> list[str]:
    """The SENDs posted after a later compute op than their producer, as ``0SEND_F0 after 0F1``
    (for messages of the engines that do not model them).

    Example:
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.core.placement import linear
        >>> s = Schedule(linear(2), 2, ((Op("F", 0, 0), Op("F", 0, 1), Comm("SEND_F", 0, 0),
        ...     Comm("SEND_F", 0, 1), Op("B", 0, 0), Op("B", 0, 1)),
        ...     (Op("F", 1, 0), Op("F", 1, 1), Op("B", 1, 0), Op("B", 1, 1))), (0, 0))
        >>> late_sends(build_dag(s))
        ['0SEND_F0 after 0F1']
    """
    gated = gated_pred(dag)
    if gated is None:
        return []
    out = []
    for i, op in enumerate(dag.ops):
        for k in (0, 1):
            q, g = int(dag.pred[i][k]), gated[i][k]
            if g != q:
                kind = "SEND_F" if k == 0 and op.kind == F else "SEND_B"
                src = dag.ops[q]
                out.append(f"{src.stage}{kind}{op.mb} after {dag.ops[g]}")
    return out
