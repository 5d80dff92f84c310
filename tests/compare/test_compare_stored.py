"""``ppverify compare`` on the built-in default configuration prints, number for number, the table
stored in ``tests/data/stored/compare_default.txt``.

The stored table was written by the command before the code was reorganised into registries and
thin commands (the house-keeping round); any restructuring that changes a printed number fails
here. The optimum column is bounded by CP-SAT's deterministic work, not by wall time, so the
table does not depend on how loaded the machine is. When a deliberate modelling change moves a
number, regenerate the file with ``ppverify compare > tests/data/stored/compare_default.txt`` and
say why in the commit.
"""

from __future__ import annotations

import re
from pathlib import Path

STORED = Path(__file__).resolve().parents[1] / "data" / "stored" / "compare_default.txt"
#: the closing line reports the wall time ("... in 14.5 s"), the one figure that may differ
_TIMING = re.compile(r" in [0-9.]+ s$")


def _numbers(text: str) -> list[str]:
    return [_TIMING.sub(" in - s", line) for line in text.splitlines()]


def test_default_compare_prints_the_stored_table(tmp_path, ppverify_cli, monkeypatch):
    # the optimum column is bounded by CP-SAT's deterministic work; the wall-clock stop (4x that work
    # by default) is lifted here so that a loaded test machine cannot cut a search short
    monkeypatch.setenv("PPVERIFY_WALL_FACTOR", "50")
    run = ppverify_cli("compare", cwd=tmp_path, timeout=1800)
    assert run.returncode == 0, run.stderr[-2000:]
    got, want = _numbers(run.stdout), _numbers(STORED.read_text())
    diff = [f"line {n + 1}:\n  stored: {w}\n  now:    {g}" for n, (w, g) in enumerate(zip(want, got)) if w != g]
    assert len(got) == len(want) and not diff, "\n".join(diff[:10]) or f"{len(got)} lines, stored {len(want)}"
