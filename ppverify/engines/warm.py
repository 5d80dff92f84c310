"""Compile the numba kernels once (or load them from numba's cache) so that the first large run
does not pay for it: ``python -m ppverify.engines.warm`` (``make test`` runs it after installing).
"""

from __future__ import annotations

import numpy as np

from ..core.comm import FixedDelay
from ..core.costs import CostModel
from ..core.lowering import lowered
from ..schedules import build
from .contention import contention_compiled
from .kernels import dag_links, exposed_waits, list_schedule_arrays
from .simulate import prepare
from .torch_steps_kernel import simulate_steps_compiled, torch_timeline_compiled


def warm() -> None:
    """Compile every kernel once (or load it from numba's cache) on a tiny schedule, so that the
    first large run does not pay it; ``make test`` runs this after installing
    (``python -m ppverify.engines.warm``).

    Example:
        >>> warm()
    """
    s = build("1f1b", p=2, m=2)
    costs = CostModel.unit(s.placement)
    prep = prepare(s, costs, FixedDelay(1.0))
    d = np.zeros((prep.dag.num_ops, 2))
    a = prep.dag
    start, end, _, _ = list_schedule_arrays(a.pred, d, prep.duration, a.fused, a.idle_before, a.offsets)
    dag_links(a.kind, a.stage, a.mb, a.device, s.num_stages, s.m)
    exposed_waits(a.pred, start, end, a.offsets)
    contention_compiled(s, costs, FixedDelay(1.0), prep, "none", 0)
    simulate_steps_compiled(lowered(s))
    torch_timeline_compiled(s, None)


if __name__ == "__main__":
    warm()
