"""The ``optimum`` level of an abstract-cost report with a transfer delay draws its point-to-point
transfers and names an input-in-flight wait as such (docs/report.md: one row per directed link with
that level's transfers; "input in flight" when an op waited for a transfer). It once kept the
solver's own timeline, which records only collectives: no transfer rows, and 1F0 (starting 0.5
after 0F0's end) was said to be "held back after its device and inputs were ready".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ppverify.cli import main


def test_optimum_chart_has_transfers_and_in_flight_wait(tmp_path: Path, capsys) -> None:
    out = tmp_path / "s.html"
    argv = ["report", "--schedules", "gpipe", "-p", "4", "-m", "8", "--costs", "F=1,B=2"]
    assert main([*argv, "--comm-delay", "0.5", "--no-progress", "-o", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    data = json.loads(re.search(r'<script id="ppverify-data" type="application/json">(.*?)</script>', text, re.S)[1])
    pt = data["points"][0]
    lv = pt["levels"]["optimum"]
    # GPipe p = 4, m = 8: each microbatch crosses 3 links forward and 3 back: 8 * (3 + 3) = 48 transfers
    assert len(lv["tr"]["s"]) == 48
    ix = {pt["ops"][o]: i for i, o in enumerate(lv["o"])}
    # the optimum of GPipe's placement and kinds: (m + p - 1) * (F + B) + 2 (p - 1) * delay
    # = 11 * 3 + 6 * 0.5 = 36; so device 1's first forward waits for 0F0 (ends 1.0) + delay 0.5
    assert max(lv["e"]) == 36.0
    assert lv["s"][ix["1F0"]] == 1.5
    assert data["wait_codes"][str(lv["w"][ix["1F0"]])] == "input in flight"
