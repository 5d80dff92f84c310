"""Multi-abstraction comparison: the same schedules evaluated by closed-form formula, slot table,
async and contention simulation and CP-SAT optimum, side by side, with rank changes marked and the
seed paper's findings checked over the computed results.

* :mod:`.config`   schedule entries, configurations, the built-in default set
* :mod:`.results`  a level's and a point's results
* :mod:`.resolve`  a point's schedule and cost/communication models (presets via
  :mod:`ppverify.systems.preset_models`)
* :mod:`.evaluate` one (schedule, configuration) point at every level
* :mod:`.optimum`  the CP-SAT level (adapter over :mod:`ppverify.optimize`)
* :mod:`.table`    result frame, ranks, rank changes, gap to bound, printed tables
* :mod:`.stored_rows` the check every reader of stored rows makes (``report --from``, a sweep's
  resume), and whether a sweep is still writing a store
* :mod:`.run`      run a whole comparison with progress
* :mod:`.measured` the opt-in measured level (``compare --measured``): real runs, batched per p
* :mod:`.findings` the seed paper's findings as computed checks
* :mod:`.request`  what ``ppverify compare`` is asked, run, written and printed, as library calls
* :mod:`.options`  ``ppverify compare``'s options as data, read into a request

Where each finding holds over a grid of systems and models is :mod:`ppverify.findings_map` (a sweep,
so a layer above this package).
"""

from __future__ import annotations

from .config import (
    DEFAULT_M,
    DEFAULT_MODELS,
    DEFAULT_SCHEDULES,
    DEFAULT_SYSTEMS,
    LEVEL_SEMANTICS,
    LEVELS,
    Config,
    ScheduleEntry,
    abstract_configs,
    default_configs,
    select_schedules,
)
from .evaluate import LevelResult, PointResult, evaluate_point, resolve
from .outcome import CompareOutcome
from .ranks import rank_changes
from .request import CompareRequest, compare_request, run_request
from .run import run_comparison
from .table import COLUMNS, format_config_table, format_legend, to_frame

__all__ = [
    "COLUMNS",
    "DEFAULT_M",
    "DEFAULT_MODELS",
    "DEFAULT_SCHEDULES",
    "DEFAULT_SYSTEMS",
    "LEVELS",
    "LEVEL_SEMANTICS",
    "CompareOutcome",
    "CompareRequest",
    "Config",
    "LevelResult",
    "PointResult",
    "ScheduleEntry",
    "abstract_configs",
    "compare_request",
    "default_configs",
    "evaluate_point",
    "format_config_table",
    "format_legend",
    "rank_changes",
    "resolve",
    "run_comparison",
    "run_request",
    "select_schedules",
    "to_frame",
]
