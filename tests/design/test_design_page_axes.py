"""The design page's frontier picture: its peak tick labels never print over each other, and its
step-time axis has a few evenly spaced round labels left of the axis, clear of the frontier's
circles. The hunt's page (GPT-3 1.3B on dgx-h100, p = 4, m = 8) printed peaks 1.74901 and 1.8745
over each other, and its only two step-time labels ended under the first frontier circle."""

from __future__ import annotations

import re
from pathlib import Path

from ppverify.cli import main
from ppverify.design.page import y_ticks

TICK = re.compile(r'<text x="([\d.]+)" y="([\d.]+)"(?: dy="[^"]*")? text-anchor="(\w+)" font-size="10">([^<]*)</text>')


def test_y_ticks_are_round_and_evenly_spaced():
    # 0.11..0.2 (range 0.09): step 0.5, 0.2, 0.1 give at most 0.2; 0.05 gives 0.15, 0.2; 0.02 gives
    # 0.12, 0.14, 0.16, 0.18, 0.2
    assert y_ticks(0.11, 0.2) == [0.12, 0.14, 0.16, 0.18, 0.2]
    # 10..30 (range 20): step 50 gives none, 20 only 20, 10 gives 10, 20, 30
    assert y_ticks(10, 30) == [10.0, 20.0, 30.0]
    # 0..100 (range 100): step 500, 200 give only 0; 100 gives 0, 100; 50 gives 0, 50, 100
    assert y_ticks(0, 100) == [0.0, 50.0, 100.0]
    assert y_ticks(7, 7) == [7]


def test_frontier_tick_labels_do_not_overlap(tmp_path: Path, capsys):
    out = tmp_path / "dp.html"
    argv = ["design", "-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--placements", "linear"]
    assert main([*argv, "--budgets", "2,8GiB,none", "--work-limit", "1", "--report", str(out)]) == 0
    capsys.readouterr()
    svg = out.read_text()
    svg = svg[svg.index('class="frontier"') :]  # the frontier picture (the timelines' SVGs follow it)
    ticks = [(float(x), float(y), anchor, t) for x, y, anchor, t in TICK.findall(svg)]
    xs = sorted((x, t) for x, y, a, t in ticks if a == "middle")
    ys = [(x, y, float(t)) for x, y, a, t in ticks if a == "end"]
    assert len(xs) >= 2
    # 10 px digits are at most 6 px wide: neighbours' centres at least their half widths apart
    for (x1, t1), (x2, t2) in zip(xs, xs[1:]):
        assert x2 - x1 >= 3 * len(t1) + 3 * len(t2), (t1, t2)
    # 3 to 5 step-time labels, one step apart, ending left of a circle (radius 6) on the axis (x = 56)
    assert 3 <= len(ys) <= 5
    steps = {round(b[2] - a[2], 9) for a, b in zip(ys, ys[1:])}
    assert len(steps) == 1
    assert all(x <= 56 - 6 - 1 for x, _, _ in ys)


def test_every_family_opens_on_a_timeline(tmp_path: Path, capsys):
    # docs/design.md: clicking a family opens its timeline, and each note links to it; a family on
    # a placement the design did not search (chimera on bidirectional, zbv on v) is run by the
    # async engine like any schedule, so it has one too
    out = tmp_path / "f.html"
    argv = ["design", "-p", "4", "-m", "4", "--costs", "F=1,B=2", "--placements", "linear", "--budgets", "4"]
    assert main([*argv, "--work-limit", "1", "--report", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    fams = re.findall(r'<details id="family-\d+"><summary>([^<]*)</summary>(.*?)</details>', text, re.S)
    unsearched = [(s, body) for s, body in fams if "(linear)" not in s]
    assert any(s.startswith("zbv (v)") for s, _ in unsearched)
    for summary, body in fams:
        assert "<svg" in body and "placement not searched)" not in body, summary
