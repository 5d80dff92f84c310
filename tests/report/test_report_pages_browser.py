"""Report pages as a user meets them, in headless Chromium (the distribution's ``chromium``, driven
by Playwright as in ``test_report_browser.py``): a page built ``--from`` a results file charts the
optimum the file holds, a design page's family labels can all be read and clicked, a preset's name
written like markup reads as text, and ``report --from design.json`` takes ``.htm`` as the
comparison page does. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ppverify.cli import main

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
FLAGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
ABSTRACT = ["-p", "2", "-m", "2", "--costs", "F=1,B=2", "--no-progress"]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _open(browser, path: Path, report: bool = True):
    """The page and what went wrong on it: console errors, script errors, dialogs, network requests."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (problems.append(f"dialog {d.message}"), d.dismiss()))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else problems.append(r.url))
    page.goto(path.as_uri())
    if report:
        page.wait_for_function("window.ppverifyReport && window.ppverifyReport.ready", timeout=10_000)
    return page, problems


def test_a_page_from_a_results_file_charts_its_optimum(browser, tmp_path):
    # `report --from` passed the options it left out (None) to the solver, which failed every
    # optimum: the table said 9 but the point had no optimum chart. GPipe p=2 m=2 has 8 ops
    # (well under the 256 of --max-opt-ops); its optimum by hand: device 1 cannot start before
    # 0F0 ends at 1, holds 2F + 2B = 6 units, and its last backward is followed by device 0's
    # (2): 1 + 6 + 2 = 9, what GPipe itself takes, (m + p - 1)(F + B) = 3 * 3 = 9
    rows, out = tmp_path / "rows.csv", tmp_path / "from.html"
    run = ["compare", "--schedules", "gpipe", "--levels", "slot,optimum", *ABSTRACT, "--out", str(rows)]
    assert main(run) == 0
    assert main(["report", "--from", str(rows), "-o", str(out)]) == 0
    page, problems = _open(browser, out)
    page.evaluate("window.ppverifyReport.select('gpipe')")
    assert page.evaluate("window.ppverifyReport.levels()") == ["slot", "optimum"]
    ops = Counter(f"{s}{k}{mb}" for s in range(2) for k in "FB" for mb in range(2))
    assert Counter(page.evaluate("window.ppverifyReport.opsDrawn('gpipe', 'optimum')")) == ops
    data = json.loads(page.locator("#ppverify-data").text_content() or "{}")
    assert data["points"][0]["levels"]["optimum"]["makespan"] == 9
    assert problems == []


@pytest.mark.slow
def test_design_page_labels_sit_by_their_markers_inside_the_picture(browser, tmp_path, capsys):
    # p=2 m=2, F=1, B=2, linear, budgets 1 and 2: every family peaks at 2 activations, the
    # largest peak on the page, so its labels start at the right edge of the plot (they were cut
    # off there, their links unreachable); the families' steps are 6 to 9 units, at least 0.5
    # apart (28 px on the 6..12 axis), so each marker's line of labels fits on its own row
    argv = ["design", *ABSTRACT, "--placements", "linear", "--budgets", "1,2", "--work-limit", "1", "--json"]
    assert main(argv) == 0
    result = tmp_path / "design.json"
    result.write_text(capsys.readouterr().out)
    out = tmp_path / "design.htm"  # .htm: the comparison page's rule (it was refused for a design)
    assert main(["report", "--from", str(result), "-o", str(out)]) == 0
    page, problems = _open(browser, out, report=False)
    svg = page.locator("svg.frontier").bounding_box()
    assert svg is not None
    labels = page.evaluate(
        """() => [...document.querySelectorAll('a.pt.family-label')].map(a => {
            const r = a.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;
            const hit = document.elementFromPoint(x, y);
            return {href: a.getAttribute('href'), name: a.querySelector('text').firstChild.textContent, x0: r.left, x1: r.right,
                    y0: r.top, y1: r.bottom, y, clickable: !!hit && hit.closest('a') === a};
        })"""
    )
    markers = page.evaluate(
        """() => [...document.querySelectorAll('a.pt.family rect')].map(m => {
            const r = m.getBoundingClientRect();
            return {y: r.y + r.height / 2, x1: r.right, names: m.textContent};
        })"""
    )
    assert len(labels) == 14 and len(markers) == 6  # 14 families at 6 distinct steps (9, 8, 7.5, 7, 6.5, 6)
    for lab in labels:
        assert svg["x"] <= lab["x0"] and lab["x1"] <= svg["x"] + svg["width"], lab  # not cut off
        assert svg["y"] <= lab["y0"] and lab["y1"] <= svg["y"] + svg["height"], lab
        assert lab["clickable"], lab  # nothing drawn over it
        mark = next(
            m for m in markers if m["names"].startswith(f"{lab['name']} (") or f"\n{lab['name']} (" in m["names"]
        )
        assert abs(lab["y"] - mark["y"]) <= 3 and lab["x0"] > mark["x1"], (lab, mark)  # on its marker's line
    for a in labels:  # no label over another
        for b in labels:
            if a is not b:
                assert a["x1"] <= b["x0"] or b["x1"] <= a["x0"] or a["y1"] <= b["y0"] or b["y1"] <= a["y0"], (a, b)
    target = labels[-1]["href"]
    page.locator(f"a.pt.family-label[href='{target}']").last.click()
    assert page.locator(target).evaluate("d => d.open")
    assert problems == []


def test_a_preset_named_like_markup_reads_as_text(browser, tmp_path):
    # a system preset is named by its file: "<b>x</b>" in it must show as those characters in the
    # configuration's caption, never as bold markup (no <b> element comes from the data)
    src = Path(__file__).resolve().parents[2] / "examples" / "systems" / "calibrated-2core.yaml"
    name = "sys<b>x<_b>&'"
    (tmp_path / f"{name}.yaml").write_text(src.read_text())
    out = tmp_path / "preset.html"
    argv = ["report", "--schedules", "gpipe", "--systems", str(tmp_path / f"{name}.yaml"), "--models", "gpt3-1.3b"]
    assert main([*argv, "-p", "2", "-m", "2", "--levels", "async", "--no-verify", "--no-progress", "-o", str(out)]) == 0
    page, problems = _open(browser, out)
    assert f"{name}.yaml" in page.locator("table.cmp caption").first.inner_text()
    assert page.locator("#cmp-tables b, #cmp-tables i, #verif b").count() == 0
    assert problems == []


def test_design_report_takes_htm_as_every_report_does(tmp_path):
    # report's -o takes .html or .htm; design --report follows the same rule (it refused .htm)
    from ppverify.cli import main

    page = tmp_path / "front.htm"
    argv = ["design", "-p", "2", "-m", "2", "--placements", "linear", "--budgets", "1", "--work-limit", "1"]
    assert main([*argv, "--report", str(page)]) == 0
    assert page.read_text().lstrip().lower().startswith("<!doctype html")
