"""``ppverify report`` in a real browser: headless Chromium from the distribution (``make test``
installs the ``chromium`` package where it is missing), driven by Playwright's Python client with
``executable_path`` (Playwright never downloads a browser here).

Checks: the page renders with no console error; every level's Gantt of each schedule holds every op
exactly once (the op set is written out by hand from p, m and the op kinds); hover names the op
and what it waited for, and a transfer what it queued behind; zoom narrows the time axis; an
INVALID schedule's minimal core is shown; collectives have their own colour and legend entry and
pipe 1's bars are hatched; the memory panel has a y scale; a 50,000-op page renders within 10 s. Screenshots go to pytest's tmp dir and to tests/artifacts/.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import sync_playwright

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.report.page import write_report
from ppverify.report.study import Study, point_view
from ppverify.schedules import build

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
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
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)  # a fresh temporary profile
        yield b
        b.close()


def _open(browser, path: Path, timeout_ms: int = 10_000):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "request",
        lambda r: errors.append(f"network request {r.url}") if not r.url.startswith(("file:", "data:")) else None,
    )
    page.goto(path.as_uri())
    page.wait_for_function("window.ppverifyReport && window.ppverifyReport.ready", timeout=timeout_ms)
    return page, errors


def _keep(page, tmp_path: Path, name: str, full_page: bool = False) -> Path:
    shot = tmp_path / name
    if not full_page:
        page.locator("#schedule").scroll_into_view_if_needed()
    page.screenshot(path=str(shot), full_page=full_page)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / name)
    return shot


def _ops(p: int, m: int, kinds: str, stages: int | None = None) -> Counter:
    return Counter(f"{s}{k}{mb}" for s in range(stages or p) for mb in range(m) for k in kinds)


def _schedule_file(path, programs):
    """A hand-written ppverify JSON schedule of a linear p=2, m=2 step, its programs as given."""
    doc = {
        "format": "ppverify-schedule",
        "version": 1,
        "family": "custom",
        "params": {},
        "p": 2,
        "m": 2,
        "placement": {"name": "linear", "maps": [[0, 1]]},
        "pipe_of_mb": [0, 0],
        "programs": programs,
    }
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def study_page(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    bad = d / "deadlock.json"  # 1F1B p=2 m=2 whose stage 1 runs both forwards first: a deadlock
    _schedule_file(bad, [["0F0", "0B0", "0F1", "0B1"], ["1F0", "1F1", "1B0", "1B1"]])
    out = d / "study.html"
    assert (
        main(
            [
                "report",
                "--schedules",
                f"gpipe,1f1b,1f1b-split,interleaved-v2,{bad}",
                "-p",
                "2",
                "-m",
                "2",
                "--costs",
                "F=1,B=2",
                "--comm-delay",
                "0.5",
                "--no-progress",
                "-o",
                str(out),
            ]
        )
        == 1  # the page is written; the deadlocking file's error rows make the exit 1, as compare's
    )
    return out


def test_page_renders_every_op_once(browser, study_page, tmp_path):
    page, errors = _open(browser, study_page)
    expected = {
        "gpipe": _ops(2, 2, "FB"),
        "1f1b": _ops(2, 2, "FB"),
        "1f1b-split": _ops(2, 2, "FIW"),
        "interleaved-v2": _ops(2, 2, "FB", stages=4),
    }
    for sched, ops in expected.items():
        page.evaluate("s => window.ppverifyReport.select(s)", sched)
        levels = page.evaluate("window.ppverifyReport.levels()")
        assert levels == ["slot", "async", "contention", "optimum"], sched
        for lv in levels:
            drawn = page.evaluate("([s, l]) => window.ppverifyReport.opsDrawn(s, l)", [sched, lv])
            assert Counter(drawn) == ops, (sched, lv)
    page.evaluate("window.ppverifyReport.select('1f1b')")
    _keep(page, tmp_path, "report-1f1b.png", full_page=True)
    assert errors == []


def test_hover_zoom_and_invalid_core(browser, study_page, tmp_path):
    page, errors = _open(browser, study_page)
    page.evaluate("window.ppverifyReport.select('gpipe')")
    box = page.locator("#gantt").bounding_box()
    # the first op of device 0 in the first level (slot) starts at t=0: just right of the label gutter
    page.mouse.move(box["x"] + 116, box["y"] + 24 + 18 + 5)
    tip = page.locator("#tooltip")
    assert tip.is_visible()
    assert tip.inner_text().startswith("0F0 · slot · device 0") and "waited for: nothing" in tip.inner_text()
    before = page.evaluate("window.ppverifyReport.view()")
    page.mouse.wheel(0, -300)
    page.wait_for_timeout(100)
    after = page.evaluate("window.ppverifyReport.view()")
    assert after[1] - after[0] < before[1] - before[0]
    assert page.evaluate("window.ppverifyReport.select('deadlock')")
    verdict = page.locator("#verdict").inner_text()
    assert "INVALID" in verdict and "core: 0B0 0F1 1F1 1B0" in verdict
    assert page.evaluate("window.ppverifyReport.levels()")[0] == "program"
    assert Counter(page.evaluate("window.ppverifyReport.opsDrawn('deadlock', 'program')")) == _ops(2, 2, "FB")
    _keep(page, tmp_path, "report-invalid-core.png")
    assert errors == []


def test_50k_ops_render_within_10s(browser, tmp_path):
    s = build("1f1b", p=8, m=3125)  # 8 stages x 3125 microbatches x (F, B) = 50,000 ops
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="async")
    rows = pd.DataFrame(columns=["config", "schedule", "level", "semantics"])
    path = write_report(
        Study(rows, (point_view("p=8 m=3125 F=1,B=2", "1f1b", s, {"async": tl}, "valid"),)), tmp_path / "big.html"
    )
    t0 = time.perf_counter()
    page, errors = _open(browser, path, timeout_ms=10_000)
    seconds = time.perf_counter() - t0
    assert seconds < 10.0
    assert len(page.evaluate("window.ppverifyReport.opsDrawn('1f1b', 'async')")) == 50_000
    _keep(page, tmp_path, "report-50k.png")
    assert errors == []


def test_measured_peaks_show_beside_the_models(browser, tmp_path):
    # a comparison's rows (gpipe and 1f1b, async) plus a measured level whose peaks differ from
    # the model's on purpose (9 and 7): the table shows them in a column of their own
    from ppverify.report import load_results
    from ppverify.report.study import study_from_rows

    out = tmp_path / "r.csv"
    args = ["compare", "--schedules", "gpipe,1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "async"]
    assert main([*args, "--no-progress", "--no-verify", "--out", str(out)]) == 0
    df = load_results(out)
    measured = df[df["level"] == "async"].assign(level="measured", semantics="measured")
    measured["peak_activation"] = [9.0 if s == "gpipe" else 7.0 for s in measured["schedule"]]
    path = write_report(study_from_rows(pd.concat([df, measured], ignore_index=True)), tmp_path / "m.html")
    page, errors = _open(browser, path)
    table = page.locator("table.cmp").first  # the comparison's table (the verdicts' table follows it)
    heads = table.locator("th").all_inner_texts()
    # no optimum level: no "peak act. (opt.)" or "gap to bound" column, as in compare's text table
    assert heads[-2:] == ["peak act. (measured)", "Z3"] and "gap to bound" not in heads
    col = heads.index("peak act. (measured)")
    cells = {
        r.locator("td").nth(0).inner_text(): r.locator("td").nth(col).inner_text()
        for r in table.locator("tr").all()[1:]
    }
    assert cells == {"gpipe": "9", "1f1b": "7"}
    assert "peak act. (measured)" in page.locator("#legend").inner_text()
    assert errors == []


def test_a_schedule_over_the_cap_shows_no_gap(browser, tmp_path):
    # compare --memory-cap 4 at p = 4, m = 8: 1F1B peaks at min(p, m) = 4 and is optimal there with
    # c = 0 ((m+p-1)(F+B) = 33, device 0's work plus fill and drain): gap 0; GPipe holds m = 8
    out = tmp_path / "capped.html"
    argv = ["report", "--schedules", "1f1b,gpipe", "-p", "4", "-m", "8", "--costs", "F=1,B=2"]
    assert (
        main([*argv, "--levels", "async,optimum", "--memory-cap", "4", "--no-progress", "--no-verify", "-o", str(out)])
        == 0
    )
    page, errors = _open(browser, out)
    table = page.locator("table.cmp").first
    heads = table.locator("th").all_inner_texts()
    col = heads.index("gap to bound")
    cells = {r.locator("td").nth(0).inner_text(): r.locator("td").nth(col) for r in table.locator("tr").all()[1:]}
    assert {k: c.inner_text() for k, c in cells.items()} == {"1f1b": "0.0%", "gpipe": "over cap"}
    assert cells["gpipe"].get_attribute("title") == (
        "its own peak 8 is over the cap 4: the optimum and its bound hold for the schedules within the cap"
    )
    assert "over cap: the schedule's own peak is above that cap" in page.locator("#legend").inner_text()
    assert errors == []


def _open_report(browser, tmp_path: Path, schedule: str, argv: list[str]):
    """``ppverify report`` of one schedule (argv: the rest of its options), opened on that schedule."""
    out = tmp_path / f"{schedule}.html"
    assert main(["report", "--schedules", schedule, *argv, "--no-progress", "-o", str(out)]) == 0
    page, errors = _open(browser, out)
    assert page.evaluate("s => window.ppverifyReport.select(s)", schedule)
    return page, errors


def test_collectives_have_their_own_colour_and_pipe_1_is_hatched(browser, tmp_path):
    # Chimera p=4 m=4: two pipes, the replica gradient all-reduce ends the step
    page, errors = _open_report(
        browser, tmp_path, "chimera", ["-p", "4", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "0.5"]
    )
    assert "async" in page.evaluate("window.ppverifyReport.levels()")
    colours = page.evaluate("['allreduce', 'activation', 'gradient'].map(window.ppverifyReport.transferColor)")
    # an all-reduce is drawn in none of the colours of an op kind or a point-to-point transfer
    assert colours[0] not in ("#4c8bf5", "#34a853", "#f29d38", "#a06cd5", colours[1], colours[2])
    assert page.locator("#key-collective").is_visible() and "collective" in page.locator("#key-collective").inner_text()
    assert page.locator("#key-pipe1").is_visible()
    # the hatched bars are exactly the ops of the microbatches Chimera sends down pipe 1
    s = build("chimera", p=4, m=4)
    pipe1 = Counter(str(o) for o in s.ops() if s.pipe_of_mb[o.mb] == 1)
    assert Counter(page.evaluate("window.ppverifyReport.hatched('chimera', 'async')")) == pipe1
    _keep(page, tmp_path, "report-chimera-legend.png")
    assert errors == []


def test_memory_panel_has_a_y_scale(browser, study_page, tmp_path):
    page, errors = _open(browser, study_page)
    page.evaluate("window.ppverifyReport.select('1f1b')")
    # 1F1B p=2 m=2: device 0 holds both microbatches' activations before its first backward, a
    # peak of 2 (one activation = 1 with abstract costs); the scale runs 0, 0.5, ... up to it
    ticks = page.evaluate("window.ppverifyReport.memoryTicks('async')")
    assert ticks == ["0", "0.5", "1", "1.5", "2"]
    _keep(page, tmp_path, "report-memory-scale.png")
    assert errors == []


def test_a_queued_transfer_names_what_it_waited_behind(browser, tmp_path):
    # GPipe p=2 m=2, F=1, B=2, a 2-unit link: 0F0's activation holds link 0->1 from 1 to 3, so
    # 0F1's (ready at 2) waits behind it until 3 under the contention engine
    page, errors = _open_report(
        browser, tmp_path, "gpipe", ["-p", "2", "-m", "2", "--costs", "F=1,B=2", "--comm-delay", "2"]
    )
    queued = page.evaluate("window.ppverifyReport.queued('contention')")
    assert queued
    tips = [page.evaluate("([l, t]) => window.ppverifyReport.transferTip(l, t)", ["contention", t]) for t in queued]
    assert any("queued behind: activation of 0F0 on link 0\u21921 until 3" in tip for tip in tips), tips
    assert any("its data was ready at 2" in tip for tip in tips)
    assert page.evaluate("window.ppverifyReport.queued('async')") == []  # no link queues without contention
    assert errors == []


def test_a_measured_timeline_with_abstract_costs_is_drawn_in_units(browser, tmp_path):
    # the measured step of abstract costs (slept UNIT_S seconds per unit; here the async engine
    # timed in seconds stands in for the runtime) is read back in units and drawn with the others
    from dataclasses import replace

    from ppverify.compare.measured import UNIT_S, in_units

    s = build("gpipe", p=2, m=2)
    units = CostModel.abstract(s.placement, F=1, B=2)
    slept = replace(units, duration={k: tuple(UNIT_S * x for x in v) for k, v in units.duration.items()}, time_unit="s")
    measured = in_units(run(s, slept, semantics="async"), units, UNIT_S)
    rows = pd.DataFrame(columns=["config", "schedule", "level", "semantics"])
    timelines = {"async": run(s, units, semantics="async"), "measured": measured}
    path = write_report(
        Study(rows, (point_view("p=2 m=2 F=1,B=2", "gpipe", s, timelines, "valid"),)), tmp_path / "m.html"
    )
    page, errors = _open(browser, path)
    assert page.evaluate("window.ppverifyReport.levels()") == ["async", "measured"]
    assert Counter(page.evaluate("window.ppverifyReport.opsDrawn('gpipe', 'measured')")) == _ops(2, 2, "FB")
    # one shared time axis in units: GPipe's (m + p - 1)(F + B) = 9 for both levels
    assert page.evaluate("window.ppverifyReport.view()")[1] == pytest.approx(9 * 1.02)
    assert errors == []


def test_a_traced_step_with_abstract_costs_is_drawn_in_units(browser, tmp_path):
    # report --measured-trace with abstract costs: the trace (synthetic, from the async engine's
    # 1F1B p=2 m=4 at F = 10 ms, B = 20 ms, its three steps stretched by 1.0, 1.1, 1.2) is drawn
    # in units of 10 ms beside the prediction: its median step 1.1 x (m + p - 1)(F + B) = 16.5 units
    from ppverify.io.trace_synth import synthetic_traces, write_synthetic

    s = build("1f1b", p=2, m=4)
    traces = tmp_path / "prof"
    write_synthetic(
        synthetic_traces(run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), semantics="async"), 3, jitter=0.1),
        traces,
    )
    argv = ["-p", "2", "-m", "4", "--costs", "F=1,B=2", "--levels", "async", "--no-verify"]
    page, errors = _open_report(browser, tmp_path, "1f1b", [*argv, "--measured-trace", str(traces)])
    assert page.evaluate("window.ppverifyReport.levels()") == ["async", "measured"]
    assert Counter(page.evaluate("window.ppverifyReport.opsDrawn('1f1b', 'measured')")) == _ops(2, 4, "FB")
    # one time axis in units: the longer of async's (m + p - 1)(F + B) = 15 and the trace's 16.5
    assert page.evaluate("window.ppverifyReport.view()")[1] == pytest.approx(16.5 * 1.02)
    _keep(page, tmp_path, "report-traced-abstract.png")
    assert errors == []


def test_a_title_with_markup_opens_and_reads_as_written(browser, tmp_path):
    # a --title holding "<!--<script>" once kept the data block's own "</script>" from closing it:
    # the page script never ran (no tables, no charts) and no console error said why
    title = 'A "quoted" </script><script>alert(1)</script> & <!--<script> title'
    out = tmp_path / "titled.html"
    argv = ["report", "--schedules", "gpipe", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "async"]
    assert main([*argv, "--no-verify", "--no-progress", "--title", title, "-o", str(out)]) == 0
    page, errors = _open(browser, out)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    assert page.title() == title and page.locator("h1").inner_text() == title
    assert Counter(page.evaluate("window.ppverifyReport.opsDrawn('gpipe', 'async')")) == _ops(2, 2, "FB")
    assert dialogs == [] and errors == []


def test_a_schedule_named_like_markup_is_shown_as_text(browser, tmp_path):
    # a schedule file's name is its label: "<img src=x onerror=...>" once went into the verdict
    # line as markup (the handler ran); it must read as written in the tables, verdict and tooltip
    name = "<img src=x onerror=alert(1)>"
    f = tmp_path / f"{name}.json"
    programs = [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]  # 1F1B, p=2 m=2
    _schedule_file(f, programs)
    out = tmp_path / "named.html"
    argv = ["report", "--schedules", str(f), "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "async"]
    assert main([*argv, "--no-verify", "--no-progress", "-o", str(out)]) == 0
    page, errors = _open(browser, out)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    assert page.evaluate("s => window.ppverifyReport.select(s)", name)
    page.wait_for_timeout(200)  # an injected image's error handler would have fired by now
    assert page.locator("#verdict").inner_text().startswith(f"{name} · p=2 m=2 · 8 ops")
    assert page.locator("img").count() == 0
    assert page.locator("table.cmp").first.locator("td").first.inner_text() == name
    assert dialogs == [] and errors == []


def test_bytes_have_round_gib_ticks_and_the_verdict_reads_as_the_command_says(browser, tmp_path, capsys):
    # 1F1B p=4 m=8 on dgx-h100 with gpt3-1.3b: the command's table gives its async peak as 10.7 GiB
    # of activations. The panel draws each device's activations on its weights/optimizer state
    # (16 B per parameter): device 0 holds 6 layers of 12h^2 + 13h = 50,358,272 parameters (h =
    # 2048) plus the embedding (50257 + 2048) * 2048 = 107,120,640, i.e. 409,270,272 * 16 B =
    # 6.10 GiB, so its curve peaks at 10.7 + 6.1 = 16.8 GiB (under the 80 GiB capacity, whose line
    # is left off past three times the peak). The scale is drawn in GiB with round steps (0, 5, 10,
    # 15 for about four ticks up to 16.8), not at round byte counts (5e9 B read 4.66 GiB, 1e10 B
    # 9.31 GiB, as they once did)
    out = tmp_path / "sys.html"
    argv = ["report", "--schedules", "1f1b", "-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main([*argv, "--levels", "async", "--no-progress", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    row = next(line.split() for line in text.splitlines() if line.startswith("1f1b "))
    assert row[-2:] == ["10.7", "valid"]  # peak act. (async), Z3
    page, errors = _open(browser, out)
    assert page.evaluate("window.ppverifyReport.memoryTicks('async')") == ["0", "5", "10", "15"]
    # memory cells read as the text tables print them: 56 GiB, not 56.0 GiB; 1.5e9 B = 1.397 GiB -> 1.4
    fmt = "([x, u]) => window.ppverifyReport.memoryText(x, u)"
    assert page.evaluate(fmt, [56 * 2**30, "bytes"]) == "56 GiB"
    assert page.evaluate(fmt, [1.5e9, "bytes"]) == "1.4 GiB"
    assert page.evaluate(fmt, [10.7 * 2**30, "bytes"]) == "10.7 GiB"
    # "valid" proves deadlock freedom: the page's legend says it in the command's own words
    said = next(line.split("Z3", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("Z3 "))
    assert said == "the verifier proved completeness, placement, dependencies, exclusivity and deadlock freedom"
    assert said in page.locator("#legend").inner_text()
    assert page.locator("#verif td").nth(4).inner_text() == said.removeprefix("the verifier proved ")
    assert errors == []
