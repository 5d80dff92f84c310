"""CP-SAT optimal makespans, certified lower bounds and the gap to optimal.

Three steps, kept visibly apart as in OR-Tools' job-shop example: :mod:`.model` builds the model,
:mod:`.solve` runs CP-SAT, :mod:`.result` carries what was read back. :mod:`.problem` turns a
request into integer ticks, :mod:`.bounds` holds the analytic lower bounds, :mod:`.heuristic` the
starting schedules, :mod:`.memory` the memory models and :mod:`.collectives` the all-reduces that
end a step (replica and data-parallel), timed as the async engine times them.
"""

from .bounds import Bounds, lower_bounds
from .evaluate import evaluate, problem_for
from .memory import DEFAULT_MEMORY_MODEL, MemoryModel, parse_memory_model, zb_settings, zero_bubble
from .problem import OBJECTIVES, Problem, instance
from .result import OptimizeResult, relative_gap
from .solve import optimize

__all__ = [
    "DEFAULT_MEMORY_MODEL",
    "OBJECTIVES",
    "Bounds",
    "MemoryModel",
    "OptimizeResult",
    "Problem",
    "evaluate",
    "instance",
    "lower_bounds",
    "optimize",
    "parse_memory_model",
    "problem_for",
    "relative_gap",
    "zb_settings",
    "zero_bubble",
]
