"""The notes the text report prints beside a family (why it is not on the frontier) on the
``design --report`` page and on ``ppverify report`` of the saved result, as headless Chromium
renders them: listed under the frontier, in the family's hover and in its timeline."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from ppverify.cli import main
from tests.design.test_design_page import open_page

if TYPE_CHECKING:  # the page's type only: a run without the playwright extra skips this test
    from playwright.sync_api import Page


# p = 2, m = 4, F = 1, B = 2, one unit per hop, linear only, budgets 1 and none.
# By hand: budget 1 runs one microbatch at a time, F + 1 + F + B + 1 + B = 8 each, 32 in all, at
# peak 1. Unconstrained, GPipe: device 1 runs F0..F3 over [2, 6] and B3..B0 over [6, 14]; device 0
# gets each gradient one unit later and its last B ends at 15 + 2 = 17, at peak 4 (no schedule on
# two devices does better: device 1 cannot start before 2 nor finish its 12 units of work before
# 14, and device 0's last B follows device 1's last one by 1 + 2). 1F1B: device 0 runs F0 F1 B0 F2
# B1 F3 B2 B3, waiting on every gradient's round trip: its B3 arrives at 17 and ends at 19, at
# peak 2. No point searched peak 2: the least budget that holds it ("none") kept GPipe's 17 at peak
# 4, so at peak 2 the frontier is 1F1B itself (faster than budget 1's 32), and its note asks for
# budget 2.
ARGV = ["-p", "2", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "1", "--placements", "linear"]
ARGV += ["--budgets", "1,none", "--work-limit", "1", "--no-progress"]
ONE_F_ONE_B = (
    "on the frontier as itself: no budget was searched between its peak 2 and none "
    "(the point there runs 17 at peak 4): add 2 to --budgets"
)
# Chimera is bidirectional, a placement --placements linear leaves out; its two pipes run at once,
# so it beats budget 1's one microbatch at a time at its peak (3, below GPipe's 4)
CHIMERA = "faster than the frontier: its placement was not searched"


def _check_notes(page: Page) -> None:
    items = page.locator("ul.family-notes li")
    notes = {}
    for i in range(items.count()):
        name = items.nth(i).locator("a").text_content()
        notes[name] = items.nth(i).text_content()
    assert notes["1f1b"] == f"1f1b (linear): {ONE_F_ONE_B}"
    assert notes["chimera"] == f"chimera (bidirectional): {CHIMERA}"
    assert "gpipe" not in notes  # GPipe is the unconstrained point itself: on the frontier
    assert items.first.is_visible()
    # the hover of 1F1B's marker says it too, and its timeline opens with the note above it
    tips = [cast(str, t.text_content()) for t in page.locator("a.pt.family title").all()]
    assert any(t.startswith("1f1b (linear): time 19, peak 2") and t.endswith(ONE_F_ONE_B) for t in tips)
    link = items.filter(has_text="1f1b (linear)").locator("a")
    target = cast(str, link.get_attribute("href"))  # every note links to its family
    link.click()
    assert page.locator(target).evaluate("d => d.open")
    note = page.locator(f"{target} p.note")
    assert note.is_visible() and note.text_content() == ONE_F_ONE_B


def _render(path: Path, check: Callable[[Page], None]) -> None:
    with open_page(path) as (page, errors):
        check(page)
        assert not errors


@pytest.mark.slow
def test_family_notes_on_the_design_page_and_its_report(tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api")
    page_path, saved = tmp_path / "design.html", tmp_path / "saved"
    assert main(["design", *ARGV, "--report", str(page_path), "--save-dir", str(saved)]) == 0
    _render(page_path, _check_notes)
    # the page of the saved result (`ppverify report`) recomputes the families: the same notes
    again = tmp_path / "again.html"
    assert main(["report", "--from", str(saved / "design.json"), "-o", str(again)]) == 0
    _render(again, _check_notes)
