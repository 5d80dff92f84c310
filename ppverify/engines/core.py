"""Program-order list scheduling, as the engines see it: the timing rule itself lives in the core
module :mod:`ppverify.core.program_order` (so that schedule generators and the verifier can use it
without the engine layer); this module keeps the engines' import path, and words an engine's
deadlock (:func:`_waits`).

Example:
    >>> from ppverify.core.dag import build_dag
    >>> from ppverify.schedules import build
    >>> list_schedule(build_dag(build("gpipe", p=2, m=1)), [1, 2, 1, 2])
    ([0.0, 4.0, 1.0, 2.0], [1.0, 6.0, 2.0, 4.0])
"""

from __future__ import annotations

from typing import Any

from ..core.ops import F
from ..core.program_order import list_schedule, list_schedule_flat


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
        >>> dag = build_dag(parse_rows([["0F0&0B0"], ["1F0", "1B0"]]), check=False)
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


__all__ = ["_waits", "list_schedule", "list_schedule_flat"]
