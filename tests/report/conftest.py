"""Headless Chromium (the distribution's ``chromium``) for the report pages' browser tests: one
browser per test module, and a page opened once the report says it is ready."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture()
def open_report(browser: Any) -> Callable[..., tuple[Any, list[str]]]:
    """``open_report(path, width=1400)``: the report page at ``path`` in a new tab, after its
    script says it is ready, and the list its console errors and page errors are appended to."""

    def open_page(path: Path, width: int = 1400) -> tuple[Any, list[str]]:
        page = browser.new_page(viewport={"width": width, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_function("window.ppverifyReport && window.ppverifyReport.ready", timeout=10_000)
        return page, errors

    return open_page
