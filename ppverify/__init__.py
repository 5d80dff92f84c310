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
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
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
    "CostModel": "core.costs",
    "run": "engines",
    "Op": "core.ops",
    "Placement": "core.placement",
    "Schedule": "core.schedule",
    "build": "schedules",
    "families": "schedules",
    "get_family": "schedules",
    "Timeline": "core.timeline",
}


#: modules that lived at the package root before the layer packages; their old paths still import
_MOVED = {
    **{
        name: f"core.{name}"
        for name in [
            "closed_form",
            "comm",
            "compiled",
            "costs",
            "dag",
            "errors",
            "files",
            "limits",
            "lowering",
            "memory_cap",
            "ops",
            "overhead",
            "placement",
            "program_order",
            "schedule",
            "sizes",
            "timeline",
            "timeline_text",
            "trace",
        ]
    },
    **{name: f"systems.{name}" for name in ["llm", "preset_models", "presets", "replica_sync", "system"]},
    "formulas": "engines.formulas",
    "plots": "report.plots",
    "run_report": "views.run_report",
    "table_report": "views.table_report",
    "sweep_exec": "sweep.executor",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``ppverify.schedule`` as the module ``ppverify.core.schedule`` itself (one module
    object under both names, so ``isinstance`` and monkeypatching agree), for code written against
    the flat layout."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        home = _MOVED.get(fullname.removeprefix(f"{__name__}.")) if fullname.startswith(f"{__name__}.") else None
        return importlib.machinery.ModuleSpec(fullname, self) if home else None

    def create_module(self, spec: Any) -> ModuleType:
        module = importlib.import_module(f"{__name__}.{_MOVED[spec.name.removeprefix(f'{__name__}.')]}")
        spec.loader_state = module.__spec__  # the import machinery overwrites __spec__ next
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module ran under its own name): give it its own spec back."""
        spec = module.__spec__
        assert spec is not None  # the import machinery sets it before exec_module
        module.__spec__ = spec.loader_state


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ppverify' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
