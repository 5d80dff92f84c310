"""Report page fixes found by a hunt of the HTML pages: each test's expected value is derived by
hand in its comments (or from docs/report.md's words)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from ppverify.cli import main


def _report(tmp_path: Path, capsys, *args: str) -> str:
    out = tmp_path / "r.html"
    assert main(["report", *args, "--no-progress", "-o", str(out)]) == 0
    capsys.readouterr()
    return html.unescape(out.read_text())


def test_chart_budget_note_counts_the_ops_already_drawn(tmp_path, capsys):
    # p = 4, m = 4: GPipe and 1F1B have 4 stages x 4 microbatches x (F, B) = 32 ops, ZB-H1 has
    # 4 x 4 x (F, I, W) = 48; each is charted at 4 levels (slot, async, program, optimum; formula
    # has no chart): 128, 128 and 192 ops. GPipe's 128 fit the 200; 1F1B's 128 alone would too,
    # but 128 + 128 = 256 > 200, and 128 + 192 = 320 > 200 for ZB-H1
    text = _report(
        tmp_path, capsys, "--schedules", "gpipe,1f1b,zb-h1", "-p", "4", "-m", "4", "--costs", "F=1,B=2",
        "--max-chart-ops", "200",
    )  # fmt: skip
    notes = set(re.findall(r"([\w-]+) in [^:<]*: no chart \(([^)]*)\)", text))
    assert notes == {
        ("1f1b", "128 ops already drawn + these 128 = 256, over the page's 200 chart-op budget; --max-chart-ops"),
        ("zb-h1", "128 ops already drawn + these 192 = 320, over the page's 200 chart-op budget; --max-chart-ops"),
    }
