"""The numba kernels without a writable cache folder (hunt E of session 63, defect 2): a
read-only install whose user has no writable ``~/.cache`` made numba raise "no locator available"
while the kernels' module was imported, an internal error of every large simulation. The kernels
now compile without the on-disk cache there, with the same results."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core import caching, config

from ppverify.core.compiled import compiled_kernel

ROOT = Path(__file__).resolve().parents[2]
#: the makespan of 1F1B, p=8, m=2048, under the default costs F=1, B=2 and no communication:
#: (m + p - 1) (F + B) = (2048 + 7) x 3 = 6165 (docs/simulation.md's bubble formula)
MAKESPAN = "makespan      6165"


def _twice(x):  # pragma: no cover - compiled
    return 2 * x


def test_no_cache_folder_compiles_without_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    # numba's condition of a read-only install: no locator finds a folder it may write
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", "")
    kernel = compiled_kernel(nogil=True)(_twice)
    assert kernel(21) == 42
    assert isinstance(kernel._cache, caching.NullCache)  # compiled in this process only


def test_a_writable_cache_folder_keeps_the_cache() -> None:
    kernel = compiled_kernel(nogil=True)(_twice)
    assert isinstance(kernel._cache, caching.FunctionCache)


def test_another_numba_error_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        @classmethod
        def from_function(cls, py_func, source_path):
            raise RuntimeError("something else")

    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [Broken])
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", "")
    with pytest.raises(RuntimeError, match="something else"):
        compiled_kernel()(_twice)


def _simulate(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # 2 x 8 x 2048 = 32768 compute ops >= COMPILED_MIN_OPS (20000): the compiled kernels run
    cmd = [sys.executable, "-m", "ppverify", "simulate", "1f1b", "-p", "8", "-m", "2048", "--no-table"]
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_every_kernel_runs_with_no_cache_location(tmp_path: Path) -> None:
    # NUMBA_CACHE_LOCATOR_CLASSES names the one locator that never applies to a module's
    # function (IPython's cells): numba finds no cache folder, as in a read-only install
    env = {**os.environ, "NUMBA_CACHE_LOCATOR_CLASSES": "IPythonCacheLocator", "PYTHONPATH": str(ROOT)}
    code = "from ppverify.engines.warm import warm; warm(); print('warmed')"  # each kernel of both modules
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert (proc.returncode, proc.stdout.strip()) == (0, "warmed"), proc.stderr
    proc = _simulate(env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert MAKESPAN in proc.stdout


@pytest.mark.slow
def test_a_read_only_install_with_a_read_only_home_simulates(tmp_path: Path) -> None:
    # the report's case: a read-only copy of the package (a system-wide install) and a read-only
    # HOME. Root ignores file modes: it runs with its DAC override dropped, as a user would
    pkg = tmp_path / "ro_pkg"
    shutil.copytree(ROOT / "ppverify", pkg / "ppverify", ignore=shutil.ignore_patterns("__pycache__"))
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    for folder in (pkg, home):
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env.update(HOME=str(home), MPLCONFIGDIR=str(work), PYTHONPATH=str(pkg))
    prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    cmd = [*prefix, sys.executable, "-m", "ppverify", "simulate", "1f1b", "-p", "8", "-m", "2048", "--no-table"]
    try:
        proc = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=600)
    finally:
        for path in [pkg, *pkg.rglob("*"), home]:
            path.chmod(0o755 if path.is_dir() else 0o644)  # so that pytest can remove tmp_path
    assert proc.returncode == 0, proc.stderr
    assert MAKESPAN in proc.stdout
    assert not list(pkg.rglob("*.nbi"))  # nothing was cached in the read-only copy
