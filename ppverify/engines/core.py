"""Program-order list scheduling, as the engines see it: the timing rule itself lives in the core
module :mod:`ppverify.core.program_order` (so that schedule generators and the verifier can use it
without the engine layer, and so does the wording of a deadlock, :func:`_waits`); this module
keeps the engines' import path.

Example:
    >>> from ppverify.core.dag import build_dag
    >>> from ppverify.schedules import build
    >>> list_schedule(build_dag(build("gpipe", p=2, m=1)), [1, 2, 1, 2])
    ([0.0, 4.0, 1.0, 2.0], [1.0, 6.0, 2.0, 4.0])
"""

from __future__ import annotations

from ..core.program_order import _waits, list_schedule, list_schedule_flat

__all__ = ["_waits", "list_schedule", "list_schedule_flat"]
