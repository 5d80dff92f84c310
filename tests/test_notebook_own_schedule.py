"""The "your own schedule" notebook executes top to bottom (nbclient), so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "your_own_schedule.ipynb"


def test_your_own_schedule_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    # device 0 holds p + extra = 5 activations at p=4: a cap of 5 is proved, 4 refuted on device 0
    assert "VALID: eager-1f1b p=4 m=8" in text and "INVALID: eager-1f1b p=4 m=8" in text
    assert "device 0 holds 5 activations" in text
    # device 0 runs min(p - 0 + 1, m) = 5 forwards before its first backward
    assert "0F0,0F1,0F2,0F3,0F4,0B0,0F5,0B1" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert (tmp_path / "eager-1f1b.csv").is_file()
