"""Packaging: every subpackage is listed in pyproject.toml, and a regular (non-editable) wheel
carries every module and every preset, which the unpacked wheel finds through importlib.resources."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]


def package_dirs() -> set[str]:
    """Dotted names of every directory under ppverify/ that holds Python modules."""
    out = set()
    for py in (ROOT / "ppverify").rglob("*.py"):
        if "__pycache__" in py.parts:
            continue
        out.add(".".join(py.parent.relative_to(ROOT).parts))
    return out


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_directory_is_listed():
    listed = set(pyproject()["tool"]["setuptools"]["packages"])
    missing = package_dirs() - listed
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_every_listed_package_exists_and_models_map_to_the_presets_folder():
    tool = pyproject()["tool"]["setuptools"]
    package_dir = tool.get("package-dir", {})
    assert package_dir.get("ppverify.models") == "models"
    for name in tool["packages"]:
        # a package's folder follows its nearest mapped parent (ppverify.models.llms: models/llms)
        parts = name.split(".")
        mapped = next((k for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in package_dir), 0)
        if mapped:
            folder = ROOT / package_dir[".".join(parts[:mapped])] / Path(*parts[mapped:])
        else:
            folder = ROOT / Path(*parts)
        assert folder.is_dir(), f"{name} is listed but {folder} does not exist"
    data = tool["package-data"]["ppverify.models"]
    assert "systems/*.yaml" in data and "llms/*.yaml" in data


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Build a regular wheel from a copy of the tree (so no build/ or egg-info lands in the repo)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("ppverify", "models"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(out.glob("ppverify-*.whl"))
    assert len(wheels) == 1
    (out / "build.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return wheels[0]


def test_the_build_prints_no_packaging_warnings(wheel):
    # `make run` installs with pip: setuptools once warned about every data folder (presets, report
    # assets) being importable but "absent from the packages configuration", about 170 lines
    log = (wheel.parent / "build.log").read_text(encoding="utf-8")
    assert "absent from" not in log and "Warning" not in log, log[:2000]


def test_wheel_contains_every_module_and_every_preset(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {
        str(p.relative_to(ROOT).as_posix()) for p in (ROOT / "ppverify").rglob("*.py") if "__pycache__" not in p.parts
    }
    assert modules <= names, f"modules missing from the wheel: {sorted(modules - names)}"
    yamls = sorted(p.relative_to(ROOT / "models").as_posix() for p in (ROOT / "models").rglob("*.yaml"))
    assert yamls, "no presets in models/"
    want = {f"ppverify/models/{y}" for y in yamls}
    assert want <= names, f"presets missing from the wheel: {sorted(want - names)}"
    for kind in ("systems", "llms"):
        assert any(n.startswith(f"ppverify/models/{kind}/") and n.endswith(".yaml") for n in names), kind
    data = (
        {f"ppverify/data/{p.name}" for p in (ROOT / "ppverify" / "data").glob("*") if p.is_file()}
        if (ROOT / "ppverify" / "data").is_dir()
        else set()
    )
    assert data <= names, f"package data missing from the wheel: {sorted(data - names)}"


def test_unpacked_wheel_finds_its_presets(wheel, tmp_path):
    """Import from the unpacked wheel (ahead of the editable install) and list the presets."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import json, ppverify; from importlib import resources\n"
        "root = resources.files('ppverify.models')\n"
        "print(json.dumps({'file': ppverify.__file__, **{k: sorted(p.name for p in root.joinpath(k).iterdir()"
        " if p.name.endswith('.yaml')) for k in ('systems', 'llms')}}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert Path(found["file"]).is_relative_to(site), "imported the source tree, not the wheel"
    assert found["systems"] == sorted(p.name for p in (ROOT / "models" / "systems").glob("*.yaml"))
    assert found["llms"] == sorted(p.name for p in (ROOT / "models" / "llms").glob("*.yaml"))


def test_wheel_ships_the_py_typed_marker(wheel):
    # PEP 561: the empty marker tells type checkers to read ppverify's own annotations
    assert "ppverify/py.typed" in zipfile.ZipFile(wheel).namelist()


def _imported_top_modules(texts: list[str]) -> set[str]:
    import re

    pattern = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
    return {m for text in texts for m in pattern.findall(text)}


def _requirement_names(reqs: list[str]) -> set[str]:
    import re

    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def test_the_test_extra_installs_what_the_tests_and_notebooks_import():
    # `pip install -e .[test]` (plus the pinned torch extra) must give every third-party module
    # the suite and the notebooks it executes import, the notebooks' own imports included
    import importlib.metadata as md

    texts = [p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py")]
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    project = pyproject()["project"]
    extras = project["optional-dependencies"]
    listed = _requirement_names(project["dependencies"] + extras["test"] + extras["torch"])
    owners = md.packages_distributions()
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")} | {"ppverify", "models"}
    missing = set()
    for module in _imported_top_modules(texts) - set(sys.stdlib_module_names) - local:
        dists = {d.lower().replace("_", "-") for d in owners.get(module, [])}
        if dists and not dists & listed:
            missing.add(f"{module} ({', '.join(sorted(dists))})")
    assert not missing, f"add to the test extra in pyproject.toml: {sorted(missing)}"


def test_the_source_tree_finds_its_presets_without_an_install():
    """After ``make run`` (a regular install) ``pytest`` in the checkout imports ``ppverify`` from
    the checkout, whose package has no ``models``: the presets come from the source tree's
    ``models/``. ``-S`` leaves out site-packages, so no install can map ``ppverify.models``."""
    code = (
        "import json, ppverify.systems.presets as p\n"
        "print(json.dumps({'file': p.__file__, 'systems': p.available('systems'),"
        " 'read': 'gpus_per_node' in p.preset_file('systems', 'dgx-h100').read_text()}))\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert Path(found["file"]).is_relative_to(ROOT / "ppverify") and found["read"]
    assert found["systems"] == sorted(p.stem for p in (ROOT / "models" / "systems").glob("*.yaml"))
