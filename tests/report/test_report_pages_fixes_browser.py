"""Report page fixes checked in headless Chromium (``/usr/bin/chromium``), opened as
``test_report_browser.py`` opens its pages. Expected texts come from docs/report.md's words or
from the options given, never from the page's own output."""

from __future__ import annotations

from ppverify.cli import main


def _legend(page) -> dict[str, str]:
    # the legend is a run of <b>key</b><span>text</span> pairs
    return page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#legend b')]"
        ".map((b) => [b.textContent, b.nextElementSibling ? b.nextElementSibling.textContent : '']))"
    )


def test_formula_only_legend_says_no_timed_level_not_no_engine(open_report, tmp_path, capsys):
    # --levels formula: GPipe and 1F1B are valid, simply not timed; the programs are drawn as
    # written, one slot per op, and no optimum ran, so nothing reads "gap to bound"
    out = tmp_path / "f.html"
    argv = ["report", "--schedules", "gpipe,1f1b", "-p", "4", "-m", "4", "--costs", "F=1,B=2", "--levels", "formula"]
    assert main([*argv, "--no-progress", "-o", str(out)]) == 0
    capsys.readouterr()
    page, errors = open_report(out)
    legend = _legend(page)
    assert "no engine could run" not in legend["program"]
    assert "--levels names only formula" in legend["program"]
    assert "gap to bound" not in legend and "peak act. (opt.)" not in legend
    heads = page.evaluate("[...document.querySelectorAll('#cmp-tables table.cmp th')].map((t) => t.textContent)")
    assert "gap to bound" not in heads and "peak act. (opt.)" not in heads and "formula" in heads
    # one slot, two slots: the program level's axis counts slots
    assert page.evaluate("window.ppverifyReport.timeText(1, 'slots')") == "1 slot"
    assert page.evaluate("window.ppverifyReport.timeText(8, 'slots')") == "8 slots"
    assert errors == []


def test_the_optimum_keeps_its_gap_legend(open_report, tmp_path, capsys):
    out = tmp_path / "o.html"
    argv = ["report", "--schedules", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "async,optimum"]
    assert main([*argv, "--no-progress", "-o", str(out)]) == 0
    capsys.readouterr()
    page, errors = open_report(out)
    legend = _legend(page)
    assert "gap to bound" in legend and "peak act. (opt.)" in legend
    heads = page.evaluate("[...document.querySelectorAll('#cmp-tables table.cmp th')].map((t) => t.textContent)")
    assert "gap to bound" in heads and "peak act. (opt.)" in heads
    assert errors == []


# 1F1B p = 2, m = 2 as a schedule file (valid), saved under a 103-character name (+ ".json")
ONE_F_ONE_B = (
    '{"format": "ppverify-schedule", "version": 1, "family": "file", "params": {"p": 2, "m": 2}, "p": 2,'
    ' "m": 2, "placement": {"name": "linear", "maps": [[0, 1]]}, "pipe_of_mb": [0, 0],'
    ' "programs": [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]}'
)


def test_a_long_schedule_name_stays_inside_its_card(open_report, tmp_path, capsys):
    name = "my_very_long_custom_schedule_name_for_a_production_run_with_interleaving_and_zero_bubble_v2_final_final"
    assert len(name) == 103  # the hunt's file name, ".json" left out
    path = tmp_path / f"{name}.json"
    path.write_text(ONE_F_ONE_B)
    out = tmp_path / "long.html"
    argv = ["report", "--schedules", f"1f1b,{path}", "-p", "2", "-m", "2", "--costs", "F=1,B=2"]
    assert main([*argv, "--no-verify", "--no-progress", "-o", str(out)]) == 0
    capsys.readouterr()
    page, errors = open_report(out)
    # at 1400 px the table, its name wrapped, fits its card (its <section>)
    right = "(q) => document.querySelector(q).getBoundingClientRect().right"
    assert page.evaluate(f"({right})('#comparison table.cmp')") <= page.evaluate(f"({right})('#comparison')")
    # narrower than the table, the card scrolls it: the page itself never scrolls sideways
    narrow, narrow_errors = open_report(out, width=900)
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 900
    assert narrow.evaluate("getComputedStyle(document.getElementById('cmp-tables')).overflowX") == "auto"
    assert narrow_errors == []
    # the name wraps: its cell is several lines tall, not one 103-character line
    cell = page.locator("#comparison table.cmp td", has_text=name[:20]).first
    assert cell.bounding_box()["height"] > 2 * 13
    assert errors == []
