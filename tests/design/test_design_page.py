"""``design --report`` in headless Chromium: the frontier's points carry their schedule, bound and
gap on hover (SVG ``<title>``), and clicking a point opens that schedule's timeline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ppverify.cli import main

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.slow
def test_design_page_hover_and_click(tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    page_path = tmp_path / "design.html"
    argv = ["design", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--placements", "linear", "--budgets", "1,2"]
    assert main([*argv, "--work-limit", "2", "--no-progress", "--report", str(page_path)]) == 0
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri())
            points = page.locator("a.pt.frontier")
            assert points.count() == 2
            # by hand: budget 1 runs the microbatches one at a time, 2 * 2 * (1 + 2) = 12; budget 2 is
            # 1F1B's (m + p - 1)(tF + tB) = 9; both proven optimal (gap 0)
            tips = [points.nth(i).locator("title").text_content() for i in range(2)]
            assert "time 12, bound 12, gap 0 %" in tips[0] and "time 9, bound 9, gap 0 %" in tips[1]
            assert not page.locator("#point-1").evaluate("d => d.open")
            points.nth(1).locator("circle").click()
            assert page.locator("#point-1").evaluate("d => d.open")
            assert page.locator("#point-1 svg").count() == 1  # the timeline is there
            assert page.locator("a.pt.family").count() >= 2 and not errors
        finally:
            browser.close()
