"""Sweeps: a YAML grid of comparisons (:mod:`ppverify.sweep.config`: the file;
:mod:`ppverify.sweep.grid`: its points and their content hashes; :mod:`ppverify.sweep.store`: the resumable store) run on a process pool or a Ray
cluster (:mod:`ppverify.sweep.executor`).

The config's, the grid's and the store's names are re-exported here, so ``from ppverify.sweep import parse_sweep`` keeps working.

Example:
    >>> from ppverify.sweep import parse_sweep
    >>> spec = parse_sweep({"schedules": ["1f1b"], "p": [2], "m": [4], "levels": ["slot"]})
    >>> spec.num_points, spec.levels
    (1, ('slot',))
"""

from __future__ import annotations

from .config import SweepSpec, check_encodable, load_sweep, parse_sweep
from .grid import (
    Task,
    iter_chunks,
    pending_tasks,
    point_hash,
    results_frame,
    run_task,
)
from .store import Store, read_store

__all__ = [
    "Store",
    "SweepSpec",
    "Task",
    "check_encodable",
    "iter_chunks",
    "load_sweep",
    "parse_sweep",
    "pending_tasks",
    "point_hash",
    "read_store",
    "results_frame",
    "run_task",
]
