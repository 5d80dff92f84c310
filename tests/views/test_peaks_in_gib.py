"""``show`` prints a byte-counting cost model's activation peaks in GiB, as ``verify`` and the
memory line do (docs/memory.md: "``show`` ... print their peaks ... in that same unit": bytes as
GiB), not as raw byte counts under a ``(bytes)`` heading."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from ppverify.core.costs import CostModel
from ppverify.io.json_format import save_json
from ppverify.schedules import build

GiB = 2**30


def test_show_prints_byte_peaks_in_gib(tmp_path: Path):
    s = build("gpipe", p=2, m=2)
    # stage 0 holds 1.5 GiB per microbatch, stage 1 0.75 GiB; GPipe holds both microbatches'
    # forwards before the first backward: peaks 2 x 1.5 = 3 GiB and 2 x 0.75 = 1.5 GiB
    costs = dataclasses.replace(
        CostModel.abstract(s.placement, F=1, B=2),
        memory_unit="bytes",
        activation=(1.5 * GiB, 0.75 * GiB),
        label="hand-made, bytes",
    )
    save_json(s, str(tmp_path / "g.json"), costs)
    out = subprocess.run(
        [sys.executable, "-m", "ppverify", "show", "g.json", "--no-table", "--memory-cap", "3GiB"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    head = next(x for x in lines if x.lstrip().startswith("device"))
    assert head.rstrip().endswith("peak activations") and "(bytes)" not in head
    rows = [x.split() for x in lines if x.strip()[:1].isdigit() and len(x.split()) == 6]
    assert [(r[0], " ".join(r[4:])) for r in rows] == [("0", "3 GiB"), ("1", "1.5 GiB")]
    assert str(int(3 * GiB)) not in out.stdout  # no raw byte count anywhere
