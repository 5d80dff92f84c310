"""gap prints a family's peak over its cap apart from the cap (report s62 hunt N, D3)."""

from __future__ import annotations

from ppverify.cli import main


def test_gap_peak_and_cap_told_apart(capsys):
    # 1F1B at p = 2 peaks at 2 activations; the cap 1.9999999995 is under it, so the two may not
    # both print as "2" (docs/memory.md: a level over its cap never prints as equal to it)
    rc = main(["gap", "1f1b", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--memory-cap", "1.9999999995",
               "--work-limit", "1"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    first = out.splitlines()[0]
    assert "peak 2 activations, over the cap 1.999999999)" in first
