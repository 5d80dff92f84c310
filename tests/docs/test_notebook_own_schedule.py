"""The "your own schedule" notebook executes top to bottom (nbclient), so it cannot rot."""

from __future__ import annotations

from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "your_own_schedule.ipynb"


def test_your_own_schedule_notebook_executes(tmp_path: Path, execute_notebook, prints_as_saved) -> None:
    outputs, text = execute_notebook(NOTEBOOK, tmp_path)
    # device 0 holds p + extra = 5 activations at p=4: a cap of 5 is proved, 4 refuted on device 0
    assert "VALID: eager-1f1b p=4 m=8" in text and "INVALID: eager-1f1b p=4 m=8" in text
    assert "device 0 holds 5 activations" in text
    # device 0 runs min(p - 0 + 1, m) = 5 forwards before its first backward
    assert "0F0,0F1,0F2,0F3,0F4,0B0,0F5,0B1" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)
    # the CSV round trip writes into a temporary folder: nothing lands next to the notebook
    assert "eager-1f1b.csv" in "".join(nb_source(NOTEBOOK)) and not list(tmp_path.iterdir())
    # what the notebook shows saved is what it prints today (the seconds it took aside)
    prints_as_saved(NOTEBOOK, outputs)


def nb_source(path: Path) -> list[str]:
    """Every code cell's text."""
    import json

    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
