"""``ppverify --version`` prints the package's version: the one pyproject.toml declares (read here
with tomllib, not through ppverify), as installed."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> str:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    with open(ROOT / "pyproject.toml", "rb") as f:
        declared: str = tomllib.load(f)["project"]["version"]
    return declared


def test_version_prints_the_declared_version_and_exits_0():
    out = subprocess.run([sys.executable, "-m", "ppverify", "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"ppverify {_declared()}\n"
    assert out.stdout == f"ppverify {version('ppverify')}\n"  # the installed package's metadata


def test_version_is_listed_in_help():
    out = subprocess.run([sys.executable, "-m", "ppverify", "--help"], capture_output=True, text=True)
    assert "--version" in out.stdout
