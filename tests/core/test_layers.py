"""Every module of the package sits on a floor of the layers contracts in ``pyproject.toml``, so
import-linter (run by ``make test``) checks its imports; a new module gets a floor on purpose. The
package root holds only packages (one per floor) and the entry points, so the folder tree names the
floors the contracts name."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import tomllib

import ppverify

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(ppverify.__file__).parent
#: the package's entry points, above every floor by construction
ENTRY = {"__init__", "__main__"}
#: packages that hold data, not code
DATA = {"data", "models"}


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _floors(contract: dict) -> list[list[str]]:
    return [[name.strip() for name in line.replace("|", ":").split(":")] for line in contract["layers"]]


def _top_floors() -> list[list[str]]:
    return _floors(next(c for c in _contracts() if c["type"] == "layers" and "containers" not in c))


def _children(package: Path) -> set[str]:
    modules = {p.stem for p in package.glob("*.py")} - ENTRY
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return modules | packages


def test_the_root_holds_packages_only():
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == sorted(ENTRY)


def test_every_top_level_package_has_a_floor():
    placed = {name for line in _top_floors() for name in line}
    top = {f"ppverify.{name}" for name in _children(PACKAGE) - DATA}
    assert sorted(top - placed) == [] and sorted(placed - top) == []


def test_every_module_of_core_and_systems_has_a_floor_inside():
    for contract in _contracts():
        for container in contract.get("containers", []):
            placed = {name for line in _floors(contract) for name in line}
            folder = PACKAGE / container.removeprefix("ppverify.").replace(".", "/")
            assert sorted(_children(folder) - placed) == [], container
            assert sorted(placed - _children(folder)) == [], container


def test_commands_on_top_and_the_core_at_the_bottom():
    layers = _top_floors()
    assert layers[0] == ["ppverify.cli"] and layers[-1] == ["ppverify.core"]
    core = next(c for c in _contracts() if c.get("containers") == ["ppverify.core"])
    assert _floors(core)[-1] == ["errors"]


def test_old_flat_paths_are_the_moved_modules_themselves():
    # users' code imports ppverify.schedule and ppverify.timeline; they must be the same objects
    from ppverify.core import schedule, timeline
    from ppverify.sweep import executor

    assert importlib.import_module("ppverify.schedule") is schedule
    assert importlib.import_module("ppverify.timeline") is timeline
    assert importlib.import_module("ppverify.sweep_exec") is executor
    from ppverify.schedule import Schedule

    assert Schedule.__module__ == "ppverify.core.schedule"
    assert schedule.__spec__.name == "ppverify.core.schedule"


def test_old_flat_path_imports_in_a_fresh_interpreter():
    code = "from ppverify.timeline import Timeline; import ppverify.plots as p; print(Timeline.__module__, p.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["ppverify.core.timeline", "ppverify.report.plots"]
