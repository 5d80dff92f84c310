"""The design notebook executes top to bottom: a building block, verified, optimised, on the
frontier, measured."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "design_frontier.ipynb"


@pytest.mark.slow
def test_design_notebook_executes(tmp_path: Path, execute_notebook) -> None:
    outputs, text = execute_notebook(NOTEBOOK, tmp_path)
    # by hand: stage s lives W[s] + 1 - F[s] = 3p + 3 - 3s units, p + 1 - s intervals of 3
    assert "peaks (5.0, 4.0, 3.0, 2.0)" in text
    assert "cap 5: VALID" in text and "cap 4: INVALID" in text
    assert "gradients ok" in text and "WRONG" not in text
    assert any("image/png" in o.get("data", {}) for o in outputs)
