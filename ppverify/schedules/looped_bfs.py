"""Looped BFS / breadth-first pipeline (Lamy-Poirier 2023, arXiv 2211.05953), in PyTorch's order.

``S = v*p`` stages in the ``loop`` placement. Each device runs, chunk by chunk in model order,
the forwards of *all* microbatches (breadth first: the earlier local stage first), then the
backwards chunk by chunk in reverse, each chunk's microbatches in reverse order. This is the op
order of PyTorch's ``ScheduleLoopedBFS`` (idle padding removed; tests compare the two).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.closed_form import EXACT, Formula, exact_costs
from ..core.ops import B, F, Op
from ..core.placement import loop
from ..core.schedule import Schedule
from .registry import Family, Param, check_int, register


def looped_bfs(p: int, m: int, v: int = 2) -> Schedule:
    """Looped BFS with ``v`` chunks per device.

    Example:
        >>> [str(o) for o in looped_bfs(2, 2, v=2).programs[1]]
        ['1F0', '1F1', '3F0', '3F1', '3B1', '3B0', '1B1', '1B0']
    """
    check_int("v", v, 1)
    programs = []
    for d in range(p):
        stages = [c * p + d for c in range(v)]
        prog = [Op(F, s, mb) for s in stages for mb in range(m)]
        prog += [Op(B, s, mb) for s in reversed(stages) for mb in reversed(range(m))]
        programs.append(tuple(prog))
    return Schedule(loop(p, v), m, tuple(programs), (0,) * m, "looped-bfs", {"p": p, "m": m, "v": v})


def looped_bfs_formula(p: int, m: int, costs: Mapping[str, float] | None = None, v: int = 2) -> Formula:
    """Makespan ``(v*max(m, p) + min(m, p) - 1) * (tF + tB) / v``; peak ``m`` on every device.

    Derivation (chunk ops last ``tF/v`` and ``tB/v``): with ``m >= p`` a device's next chunk is
    ready before it finishes the current one (the first microbatch returns to device 0 after p
    chunk forwards, and the device is busy for m >= p of them), so the forward phase is one
    GPipe fill of ``p-1`` chunk ops plus ``v*m`` ops on the last device; the backward mirrors it.
    With ``m < p`` every chunk waits for its first microbatch: op ``F(s, mb)`` starts at
    ``(s + mb) tF/v``, so the last forward ends at ``(v*p + m - 1) tF/v``, and likewise backward.
    All forwards precede all backwards, so each device holds its ``v*m`` chunk activations of
    ``1/v`` each. Exact for any tF, tB (checked against the table).

    Example:
        >>> f = looped_bfs_formula(4, 8, {"F": 1, "B": 2}, v=2)
        >>> f.makespan, f.peak_activations
        (28.5, (8.0, 8.0, 8.0, 8.0))
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    check_int("v", v, 1)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    busy = m * t
    makespan = (v * max(m, p) + min(m, p) - 1) * t / v
    return Formula(
        "looped-bfs",
        float(makespan),
        float(1 - busy / makespan),
        (float(m),) * p,
        EXACT,
        EXACT,
        "exact for any tF, tB",
        "Lamy-Poirier 2023 (breadth-first PP) in PyTorch's ScheduleLoopedBFS order; derived here",
    )


register(
    Family(
        "looped-bfs",
        looped_bfs,
        "Looped BFS: v chunks per device (loop placement), all forwards chunk by chunk, then backwards (PyTorch's ScheduleLoopedBFS)",
        params=(Param("v", int, 2, "model chunks per device"),),
        rules="p >= 1, m >= 1, v >= 1",
        formula=looped_bfs_formula,
    )
)
