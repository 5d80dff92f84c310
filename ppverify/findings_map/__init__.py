"""Where each of the seed paper's findings holds: a map over bandwidth, latency, microbatches and
model size, run through the sweep machinery (hence a study above :mod:`ppverify.sweep.executor`).

* :mod:`.grid` the grid, its sweep, the per-point verdicts and :func:`run_map`;
* :mod:`.boundary` a region's boundary in words (the rule fitted to the verdicts);
* :mod:`.text` the map as JSON, text and Markdown;
* :mod:`.plot` its phase diagrams (one PNG per finding; imported on its own, it loads matplotlib).

Example:
    >>> from ppverify.findings_map import QUICK_GRID
    >>> QUICK_GRID.num_configs
    48
"""

from __future__ import annotations

from .grid import (
    DEFAULT_GRID,
    QUICK_GRID,
    SUBJECTS,
    FindingMap,
    MapGrid,
    MapResult,
    map_spec,
    point_verdicts,
    run_map,
    summarize,
    system_yaml,
    write_systems,
)
from .text import MARGINS, bandwidth_ranges, format_map, map_json, map_markdown, margin_table

__all__ = [
    "DEFAULT_GRID",
    "MARGINS",
    "QUICK_GRID",
    "SUBJECTS",
    "FindingMap",
    "MapGrid",
    "MapResult",
    "bandwidth_ranges",
    "format_map",
    "map_json",
    "map_markdown",
    "map_spec",
    "margin_table",
    "point_verdicts",
    "run_map",
    "summarize",
    "system_yaml",
    "write_systems",
]
