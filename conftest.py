"""Pytest settings for the whole checkout (the package's doctests and tests/)."""

from __future__ import annotations

import tempfile

import pytest


@pytest.fixture(autouse=True)
def _doctest_files_under_tmp_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The docstring examples write their files with ``tempfile.mkdtemp()``, as a reader would; under
    pytest those folders go to the test's own temporary folder, which pytest cleans up, not /tmp."""
    if type(request.node).__name__ == "DoctestItem":
        monkeypatch.setattr(tempfile, "tempdir", str(request.getfixturevalue("tmp_path")))
