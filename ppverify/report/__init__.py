"""``ppverify report``: one self-contained HTML page that shows a study.

* :mod:`.results_file` read the long-format rows (``compare --out/--json``, the sweep store)
* :mod:`.payload`      one timeline as compact drawing data (ops, transfers, memory, waits)
* :mod:`.study`        the rows plus every point's timelines, verdict and minimal core
* :mod:`.page`         the HTML page (styles, canvas script and data inlined)
"""

from __future__ import annotations

from .page import render_html, write_report
from .results_file import load_results
from .study import Study, study_from_points, study_from_rows

__all__ = ["Study", "load_results", "render_html", "study_from_points", "study_from_rows", "write_report"]
