"""The collectives that end a step, as the solver sees them: the gradient all-reduce between the
replicas of each stage (two-pipe placements: Chimera, DualPipe) and the optional data-parallel
all-reduce, timed exactly as the ``async`` engine times them (:mod:`ppverify.engines.simulate`).

Under ``async`` a collective occupies no device and no link: the devices keep computing while it
runs (it is issued on a communication stream), so it only delays the end of the step. It starts
when what it waits for has ended and lasts the communication model's ring all-reduce time
(:func:`ppverify.systems.system.allreduce_time`). Per ``sync`` mode, the all-reduce of stage ``s`` over
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
:func:`ppverify.systems.replica_sync.collectives`, so the two never disagree on what a collective costs.
The step's collectives over a DAG and their tails (:func:`~ppverify.systems.replica_sync.step_collectives`,
:func:`~ppverify.systems.replica_sync.collective_tails`) live in that core module, which the verifier's
timing claims use too; they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ..core.comm import SYNC_MODES
from ..systems.replica_sync import ALLREDUCE, StepCollective, collective_tails, step_collectives

_Num = TypeVar("_Num", int, float)  # ticks (the solver) or times: the result has the inputs' type


def collective_times(
    ends: Sequence[_Num], durations: Sequence[_Num], colls: Sequence[StepCollective]
) -> list[tuple[_Num, _Num]]:
    """``(start, end)`` of every collective, as early as possible given the op ``ends``.

    Example:
        >>> cs = [StepCollective("allreduce", 0, (0, 1), 0.0, 2.0, (0, 1)),
        ...       StepCollective("dp-allreduce", -1, (0,), 0.0, 3.0, (0, 2), (0,))]
        >>> collective_times([4, 6, 5], [2, 3], cs)
        [(6, 8), (8, 11)]
    """
    out: list[tuple[_Num, _Num]] = []
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
