"""Every module of the package sits on a floor of the layers contract in ``pyproject.toml``, so
import-linter (run by ``make test``) checks its imports; a new module gets a floor on purpose."""

from __future__ import annotations

from pathlib import Path

import tomllib

import ppverify

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(ppverify.__file__).parent
#: the package's entry points, above every floor by construction
ENTRY = {"__init__", "__main__"}


def _layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    return [[name.strip() for name in line.replace("|", ":").split(":")] for line in layers]


def _top_level() -> set[str]:
    modules = {p.stem for p in PACKAGE.glob("*.py")} - ENTRY
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    return {f"ppverify.{name}" for name in modules | packages}


def test_every_module_has_a_floor():
    placed = {name for line in _layers() for name in line}
    assert sorted(_top_level() - placed) == []


def test_no_floor_names_a_module_that_is_gone():
    placed = {name for line in _layers() for name in line}
    assert sorted(placed - _top_level()) == []


def test_commands_on_top_and_errors_at_the_bottom():
    layers = _layers()
    assert layers[0] == ["ppverify.cli"] and layers[-1] == ["ppverify.core.errors"]
