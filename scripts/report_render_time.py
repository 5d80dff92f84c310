"""Time ``ppverify report`` pages in headless Chromium: build time, file size, and the time from
opening the file to the charts being drawn (median of N loads), for one schedule of OPS ops drawn
at each of the given levels.

    .venv/bin/python scripts/report_render_time.py                 # 50,000 ops, async, 5 loads
    .venv/bin/python scripts/report_render_time.py --levels slot,async,contention --runs 3

Needs the distribution's ``chromium`` (``apt-get install chromium``) and the ``playwright`` package
(the test extra); Playwright drives the installed browser and downloads none.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.report.page import write_report
from ppverify.report.study import Study, point_view
from ppverify.schedules import build

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=50_000, help="ops of the 1F1B schedule (p=8: 16 per microbatch)")
    ap.add_argument("--levels", default="async")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    m = max(1, args.ops // 16)
    s = build("1f1b", p=8, m=m)
    costs = CostModel.abstract(s.placement, F=1, B=2)
    t0 = time.perf_counter()
    tls = {
        lv: run(s, costs, semantics=lv, **({"charge_comm": True} if lv == "slot" else {}))
        for lv in args.levels.split(",")
    }
    pv = point_view(f"p=8 m={m}", "1f1b", s, tls, "valid")
    path = Path(tempfile.mkdtemp()) / "report.html"
    write_report(Study(pd.DataFrame(columns=["config", "schedule", "level", "semantics"]), (pv,)), path)
    build_s = time.perf_counter() - t0
    loads, draws = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=FLAGS)
        for _ in range(args.runs):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            t1 = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_function("window.ppverifyReport && window.ppverifyReport.ready", timeout=60_000)
            loads.append(time.perf_counter() - t1)
            draws.append(page.evaluate("window.ppverifyReport.renderMs()") / 1e3)
            page.close()
        browser.close()
    print(
        f"{s.num_ops} ops x {len(tls)} level(s) ({args.levels}); page {path.stat().st_size / 2**20:.1f} MiB, "
        f"built in {build_s:.2f} s"
    )
    print(
        f"open to drawn: median {statistics.median(loads):.2f} s over {args.runs} loads "
        f"(min {min(loads):.2f}, max {max(loads):.2f}); one full redraw: median {statistics.median(draws) * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
