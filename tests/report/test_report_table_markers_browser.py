"""The report page's comparison table keeps the text table's markers (docs/report.md, compare's
legend): ``~`` on an inexact closed form's bubble and peak as on its makespan ("the closed form is
only a bound ... shown, not ranked"), and ``+`` on a gap to bound whose optimum ran other ops
("+ the family runs ops the solver does not model (overlapped F&B slots, B mixed with I/W)"):
DualPipe's overlapped F&B slots, which the solver runs in sequence. Opened in headless Chromium
(``tests/report/conftest.py``)."""

from __future__ import annotations

from pathlib import Path

from ppverify.cli import main
from ppverify.compare.optimum import UNLIKE

ROWS_JS = """() => Object.fromEntries([...document.querySelectorAll('#cmp-tables table.cmp')].flatMap((t) => {
  const heads = [...t.querySelectorAll('th')].map((h) => h.textContent);
  return [...t.querySelectorAll('tr')].slice(1).map((tr) => {
    const tds = [...tr.querySelectorAll('td')];
    return [tds[0].textContent, Object.fromEntries(heads.map((h, k) => [h, tds[k] ? tds[k].textContent : null]))];
  });
}))"""


def test_the_script_names_the_note_prefix_the_optimum_writes():
    js = (Path(__import__("ppverify").__file__).parent / "report" / "assets" / "report.js").read_text()
    assert f'const UNLIKE = "{UNLIKE}";' in js


def test_an_inexact_formula_marks_bubble_and_peak(open_report, tmp_path):
    out = tmp_path / "form.html"
    argv = ["report", "--schedules", "1f1b,dualpipe", "-p", "4", "-m", "8", "--costs", "F=1,B=1"]
    assert main([*argv, "--levels", "formula", "--no-progress", "--no-verify", "-o", str(out)]) == 0
    page, errors = open_report(out)
    rows = page.evaluate(ROWS_JS)
    dp, one = rows["dualpipe"], rows["1f1b"]
    assert dp["formula"].startswith("~")  # as before: its makespan is a bound
    assert dp["bubble (formula)"].startswith("~") and dp["peak act. (formula)"].startswith("~")
    # 1F1B's closed form is exact: (m + p - 1)(F + B) = 11 x 2 = 22, bubble (p-1)/(m+p-1) = 3/11, peak p = 4
    assert one["formula"].startswith("22") and one["bubble (formula)"] == "0.273" and one["peak act. (formula)"] == "4"
    assert errors == []


def test_a_gap_against_unlike_ops_carries_the_plus_and_the_legend_says_why(open_report, tmp_path):
    out = tmp_path / "gap.html"
    argv = ["report", "--schedules", "1f1b,dualpipe", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--comm-delay", "0.5"]
    argv += ["--levels", "async,optimum", "--time-limit", "0.2", "--no-progress", "--no-verify", "-o", str(out)]
    assert main([*argv]) == 0
    page, errors = open_report(out)
    rows = page.evaluate(ROWS_JS)
    assert rows["dualpipe"]["gap to bound"].endswith("%+")  # overlapped F&B slots: unlike ops
    assert rows["1f1b"]["gap to bound"].endswith("%")  # the solver's ops are 1F1B's own
    legend = page.evaluate("document.getElementById('legend').textContent")
    assert "+beside a gap to bound: the family runs ops the solver does not model" in legend
    assert errors == []
