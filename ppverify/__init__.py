"""ppverify: prove pipeline-parallel training schedules correct, bound how fast they can run, and
rank them once communication is modeled.

The names below are imported on first use (:pep:`562`), so that ``import ppverify.cli`` stays
light: the command installs its signal handlers before pandas, Z3 or torch are imported, and a
Ctrl-C or SIGTERM at start-up is one line, not an import-time traceback.

Example:
    >>> from ppverify import build, run
    >>> run(build("1f1b", p=4, m=8), semantics="slot").makespan
    22.0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core.costs import CostModel
    from .core.ops import Op
    from .core.placement import Placement
    from .core.schedule import Schedule
    from .core.timeline import Timeline
    from .engines import run
    from .schedules import build, families, get_family

__all__ = ["CostModel", "Op", "Placement", "Schedule", "Timeline", "build", "families", "get_family", "run"]
__version__ = "0.1.0"

#: where each public name lives
_HOMES = {
    "CostModel": "costs",
    "run": "engines",
    "Op": "ops",
    "Placement": "placement",
    "Schedule": "schedule",
    "build": "schedules",
    "families": "schedules",
    "get_family": "schedules",
    "Timeline": "timeline",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ppverify' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
