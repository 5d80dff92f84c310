"""The report's comparison table marks a schedule that does not fit device memory as the text
table does: its cells read ``OOM`` (unranked, ``(-)``), hovering names the devices, and the legend
explains the mark. Opened in headless Chromium (``/usr/bin/chromium``), as
``test_report_memory_held.py`` does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import sync_playwright

from ppverify.cli import main
from ppverify.report.page import oom_marks

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

# By hand (the derivation in test_report_memory_held.py), dgx-h100's 80 GiB per device, p = 4, m = 4:
# GPT-3 13B 1F1B: device 0 holds 54,627,123,200 B of weight state (50.88 GiB) + 4 microbatches of
#   11,953,766,400 B of activations (44.53 GiB) = 95.41 GiB > 80; device 1 50,342,297,600 + 3 * 11,953,766,400
#   = 86,203,596,800 B = 80.28 GiB > 80; device 2 69.15 GiB and device 3 62.24 GiB fit -> devices 0, 1.
# GPT-3 13B GPipe: every stage holds all 4 microbatches: devices 1, 2 hold 50,342,297,600 + 4 * 11,953,766,400
#   = 98,157,363,200 B = 91.42 GiB, device 3 more (54,459,514,880 B + 4 * (11,953,766,400 + 411,705,344))
#   -> devices 0, 1, 2, 3.
# GPT-3 1.3B (h = 2048, 24 layers, 16 heads): 6 layers per stage of 12h^2 + 13h = 50,358,272 parameters,
#   device 0 + embedding (50257 + 2048) * 2048: 409,270,272 * 16 B = 6.10 GiB; activations per layer
#   2048 * 2048 * (34 + 5 * 16 * 2048 / 2048) = 478,150,656 B, 6 layers * 4 microbatches = 10.69 GiB:
#   about 17 GiB (the last stage's head and logits add about 2 GiB), far under 80 -> fits.
OOM_13B = {"1f1b": "devices 0, 1", "gpipe": "devices 0, 1, 2, 3"}


@pytest.fixture(scope="module")
def page_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("oom") / "r.html"
    argv = ["report", "--schedules", "gpipe,1f1b", "-p", "4", "-m", "4", "--systems", "dgx-h100"]
    argv += ["--models", "gpt3-13b,gpt3-1.3b", "--levels", "formula,async", "--no-progress", "-o", str(out)]
    assert main(argv) == 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(Path(out).as_uri())
        page.wait_for_function("window.ppverifyReport && window.ppverifyReport.ready", timeout=10_000)
        tables = page.evaluate(
            """() => [...document.querySelectorAll('#cmp-tables table.cmp')].map((t) => ({
                 config: t.querySelector('caption').firstChild.textContent,
                 head: [...t.querySelectorAll('th')].map((h) => h.textContent),
                 rows: [...t.querySelectorAll('tr')].slice(1).map((tr) => [...tr.children].map((td) => ({
                   text: td.textContent,
                   title: td.title,
                   mark: td.querySelector('.oom') ? td.querySelector('.oom').title : null })))}))"""
        )
        legend = page.locator("#legend").inner_text()
        page.screenshot(path=str(Path(out).with_suffix(".png")), full_page=True)
        browser.close()
    assert errors == []
    return tables, legend


def _cells(tables, model):
    (tab,) = [t for t in tables if t["config"].endswith(model)]
    cols = [tab["head"].index(lv) for lv in ("formula", "async")]
    return {row[0]["text"]: [row[c] for c in cols] for row in tab["rows"]}


def test_13b_cells_are_marked_oom_naming_the_devices(page_rows):
    tables, _ = page_rows
    cells = _cells(tables, "gpt3-13b")
    assert set(cells) == {"gpipe", "1f1b"}
    for sched, devices in OOM_13B.items():
        for c in cells[sched]:  # formula and async share the schedule's verdict
            assert c["text"].endswith("(-) OOM")  # unranked, as the text table's "761.9 (-) OOM"
            want = f"does not fit device memory: {devices} (weights, gradients, optimizer state and activations over the device's capacity)"
            assert c["mark"] == want
            assert c["title"].startswith(want)


def test_13b_cells_of_1f1b_name_devices_0_and_1_only(page_rows):
    tables, _ = page_rows
    for c in _cells(tables, "gpt3-13b")["1f1b"]:
        assert "devices 0, 1 " in c["mark"] and "2" not in c["mark"].split("(")[0]


def test_1_3b_cells_fit_and_are_ranked(page_rows):
    tables, _ = page_rows
    for sched, cs in _cells(tables, "gpt3-1.3b").items():
        for c in cs:
            assert "OOM" not in c["text"] and c["mark"] is None
            assert "(1)" in c["text"]  # gpipe and 1f1b tie at p = m = 4 (same bubble): both rank 1


def test_legend_explains_the_mark(page_rows):
    _, legend = page_rows
    assert "OOM (-)" in legend
    assert "does not fit device memory" in legend


def test_no_capacity_no_mark():
    # a results file of an older ppverify (no column) or abstract costs (None): nothing is marked
    df = pd.DataFrame({"config": "k", "schedule": ["a", "a"], "level": ["slot", "async"]})
    assert oom_marks(df) == [None, None]
    df["oom_devices"] = [None, ""]
    assert oom_marks(df) == [None, None]
    # the optimum is another op order: its own verdict, not its family's
    df = pd.DataFrame(
        {"config": "k", "schedule": "a", "level": ["formula", "async", "optimum"], "oom_devices": [None, "[2]", "[]"]}
    )
    assert oom_marks(df) == [[2], [2], None]
