"""The findings notebook executes top to bottom (nbclient), so it cannot rot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "paper_findings.ipynb"


def test_paper_findings_notebook_executes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "[gpipe-1f1b]" in text and "reproduced under" in text
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) >= 4
