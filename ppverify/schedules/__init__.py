"""Schedule families: pure generators registered by name (see :mod:`.registry`).

Every module in this package is imported on first use of the registry, so adding a family is
adding one file that calls :func:`register`.
"""

from __future__ import annotations

import importlib
import pkgutil

from .registry import Family, Param, build, families, get_family, register

__all__ = ["Family", "Param", "build", "families", "get_family", "register"]

_loaded = False


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules(__path__):
        if info.name not in ("registry",) and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
