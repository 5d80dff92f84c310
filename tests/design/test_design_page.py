"""``design --report`` in headless Chromium: the frontier's points carry their schedule, bound and
gap on hover (SVG ``<title>``), and clicking a point opens that schedule's timeline."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from ppverify.cli import main

if TYPE_CHECKING:  # the page's type only: a run without the playwright extra skips these tests
    from playwright.sync_api import Page

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def open_page(page_path: Path) -> Iterator[tuple[Page, list[str]]]:
    """A page file opened in headless Chromium: the page and its script errors."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri())
            yield page, errors
        finally:
            browser.close()


@contextmanager
def _design_page(tmp_path: Path, argv: list[str]) -> Iterator[tuple[Page, list[str]]]:
    """``design ARGV --report`` opened in headless Chromium: the page and its script errors."""
    page_path = tmp_path / "design.html"
    assert main(["design", *argv, "--no-progress", "--report", str(page_path)]) == 0
    with open_page(page_path) as opened:
        yield opened


@pytest.mark.slow
def test_design_page_hover_and_click(tmp_path: Path) -> None:
    argv = ["-p", "2", "-m", "2", "--costs", "F=1,B=2", "--placements", "linear", "--budgets", "1,2"]
    with _design_page(tmp_path, [*argv, "--work-limit", "2"]) as (page, errors):
        points = page.locator("a.pt.frontier")
        assert points.count() == 2
        # by hand: budget 1 runs the microbatches one at a time, 2 * 2 * (1 + 2) = 12; budget 2 is
        # 1F1B's (m + p - 1)(tF + tB) = 9; both proven optimal (gap 0)
        tips = [cast(str, points.nth(i).locator("title").text_content()) for i in range(2)]  # a title has text
        assert "time 12, bound 12, gap 0 %" in tips[0] and "time 9, bound 9, gap 0 %" in tips[1]
        assert not page.locator("#point-1").evaluate("d => d.open")
        points.nth(1).locator("circle").click()
        assert page.locator("#point-1").evaluate("d => d.open")
        assert page.locator("#point-1 svg").count() == 1  # the timeline is there
        assert page.locator("a.pt.family").count() >= 2 and not errors


@pytest.mark.slow
def test_families_at_one_point_each_stay_reachable(tmp_path: Path) -> None:
    # p = 2, m = 4, F = 1, B = 2, delay 1: 1F1B-split and ZB-H1 both peak at 2 with a step of
    # (m + p - 1)(F + B) + 2(p - 1) = 17 on their shared placement; one marker drawn over the other
    # left one of them impossible to hover or click
    argv = ["-p", "2", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "1", "--placements", "linear,v"]
    with _design_page(tmp_path, [*argv, "--work-limit", "1"]) as (page, errors):
        labels = page.locator("a.pt.family-label")
        names = [labels.nth(i).locator("text").evaluate("t => t.firstChild.textContent") for i in range(labels.count())]
        assert {"1f1b-split", "zb-h1"} <= set(names)
        shared = [
            cast(str, page.locator("a.pt.family").nth(i).locator("title").text_content())
            for i in range(page.locator("a.pt.family").count())
        ]
        both = [t for t in shared if "1f1b-split" in t and "zb-h1" in t]
        assert len(both) == 1 and "time 17, peak 2" in both[0]
        for name in ("1f1b-split", "zb-h1"):  # each label opens its own family's timeline
            link = labels.nth(names.index(name))
            target = cast(str, link.get_attribute("href"))  # every label links to its family
            link.locator("text").click()
            assert page.locator(target).evaluate("d => d.open")
            assert name in cast(str, page.locator(f"{target} summary").text_content())
        assert not errors


def test_frontier_axis_names_the_time_unit() -> None:
    """The HTML frontier's y axis names the unit the step times are in, as the PNG plot's does:
    abstract costs count units, presets seconds (a bare "step time" left 0.0123 unread)."""
    from ppverify.design.page import frontier_svg
    from ppverify.design.run import DesignRequest, design
    from ppverify.design.spec import Limits
    from ppverify.systems.preset_models import PresetSettings

    abstract = design(
        DesignRequest(2, 2, "linear", "1,2", PresetSettings(costs="F=1,B=2"), Limits(2.0)), progress=False
    )
    assert ">step time (units)</text>" in frontier_svg(abstract)
    presets = PresetSettings(system="dgx-h100", model="gpt3-1.3b")
    timed = design(DesignRequest(2, 2, "linear", "1,2", presets, Limits(2.0)), progress=False)
    assert ">step time (s)</text>" in frontier_svg(timed)


def test_a_folder_that_takes_no_files_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/proc exists but makes no new file: the refusal says that, not "No such file or directory"
    of a folder that is there."""
    argv = ["design", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--budgets", "1,2", "--work-limit", "1"]
    assert main([*argv, "--report", "/proc/x.html"]) == 2
    err = capsys.readouterr().err
    assert "cannot write in its folder /proc: it takes no new files" in err and "No such file" not in err
