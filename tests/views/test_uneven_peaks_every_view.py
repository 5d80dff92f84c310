"""Peaks on an uneven placement are printed in activations in every view, not in the cost model's
raw units labelled activations.

The schedule: device 0 holds stage 0, device 1 stages 1 and 2 (map ``0,1,1``), two microbatches.
By hand (docs/memory.md, "The unit"): with ``--costs`` every stage holds ``p/S = 2/3`` raw units,
one activation is the largest device's sum, ``2 x 2/3 = 4/3`` raw units. Device 0 runs F0 F1
before any B, so it holds 2 stage activations, ``4/3`` raw = **1 activation**; device 1 runs
1F0 2F0 1F1 (3 stages of 2/3 = 2 raw) before 2B0 frees one, ``2 / (4/3)`` = **1.5 activations**.
An even placement (1F1B at p = 2, m = 2: device 0 holds p = 2, device 1 one) is unchanged.

``compare --memory-cap N`` counts N activations of the linear pipeline of p devices (docs/comparison.md:
"so one byte count for every schedule"): abstract linear(2) holds 1 raw unit per activation, so
1.5 is 1.5 raw units, ``1.5 / (4/3) = 9/8 = 1.125`` activations of ``0,1,1``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppverify.cli import main

M011 = "0F0,0F1,0B0,0B1\n1F0,2F0,1F1,2B0,1B0,2F1,2B1,1B1\n"
COSTS = ["--costs", "F=1,B=2", "--comm-delay", "0.5"]
PEAKS = [1.0, 1.5]  # 4/3 / (4/3) and 2 / (4/3), above


@pytest.fixture()
def m011(tmp_path: Path) -> str:
    path = tmp_path / "m011.csv"
    path.write_text(M011)
    return str(path)


def _json(capsys, argv: list[str], rc: tuple[int, ...] = (0,)) -> dict:
    capsys.readouterr()
    assert main(argv) in rc
    return json.loads(capsys.readouterr().out)


def test_simulate_is_the_reference(capsys, m011):
    assert _json(capsys, ["simulate", m011, *COSTS, "--json"])["peak_activations"] == pytest.approx(PEAKS)


def test_compare_rows_count_activations(capsys, m011):
    argv = ["compare", "--schedules", m011, "-p", "2", "-m", "2", *COSTS, "--levels", "slot,async,optimum"]
    out = _json(capsys, [*argv, "--memory-cap", "1.5", "--json", "--no-progress"])
    rows = {r["level"]: r for r in out["rows"]}
    for lv in ("slot", "async"):
        assert rows[lv]["peak_activations"] == pytest.approx(PEAKS)  # a JSON list (docs/comparison.md)
        assert rows[lv]["peak_activation"] == pytest.approx(1.5)
    # the common cap: 1.5 of linear(2)'s activations (1 raw unit each) = 1.5 raw = 9/8 of 0,1,1's
    assert rows["optimum"]["memory_cap"] == pytest.approx(9 / 8)
    assert max(rows["optimum"]["peak_activations"]) <= 9 / 8 + 1e-9


def test_compare_text_prints_the_peak_in_activations(capsys, m011):
    argv = ["compare", "--schedules", m011, "-p", "2", "-m", "2", *COSTS, "--levels", "slot,async", "--no-progress"]
    capsys.readouterr()
    assert main(argv) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("m011"))
    assert row.split()[-2] == "1.5"  # peak act. (async), then Z3


def test_gap_prints_peaks_and_cap_in_activations(capsys, m011):
    argv = ["gap", m011, *COSTS, "--work-limit", "1"]
    capsys.readouterr()
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "; peak 1.5)" in text and "cap 1.5 activations" in text
    out = _json(capsys, [*argv, "--json"])
    # default cap: the family's own peak, 1.5 activations (2 raw units)
    assert out["family_peak_memory"] == pytest.approx(1.5)
    assert out["memory_cap"] == out["memory_cap_value"] == pytest.approx(1.5)
    assert out["memory_unit"] == "activations" and out["optimum_peak"] <= 1.5 + 1e-9


def test_optimize_json_counts_the_cap_and_peaks_as_its_label(capsys, m011):
    argv = ["optimize", m011, *COSTS, "--memory-cap", "1.5", "--work-limit", "1", "--json"]
    out = _json(capsys, argv)
    assert out["memory_cap"] == out["memory_cap_value"] == pytest.approx(1.5)
    assert out["memory_cap_label"].startswith("cap 1.5 activations") and out["memory_unit"] == "activations"
    assert max(out["peak_memory"]) <= 1.5 + 1e-9
    # the file's own order (--evaluate): its peaks, as simulate gives them
    assert _json(capsys, [*argv, "--evaluate"])["peak_memory"] == pytest.approx(PEAKS)


def _m011_timeline(m011: str):
    from ppverify.core.comm import FixedDelay
    from ppverify.core.costs import CostModel
    from ppverify.engines import run
    from ppverify.io import load_schedule

    s = load_schedule(m011)
    return run(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5), semantics="async")


def test_png_memory_panel(monkeypatch, tmp_path, m011):
    import ppverify.report.plots as rp

    figs = []
    monkeypatch.setattr(rp, "save_figure", lambda fig, path, option="-o": figs.append(fig))
    rp.gantt(_m011_timeline(m011), tmp_path / "g.png")
    axm = figs[0].axes[1]
    assert [max(line.get_ydata()) for line in axm.lines] == pytest.approx(PEAKS)
    assert axm.get_ylabel() == "activations"


def test_html_payload_and_trace(m011):
    from ppverify.core.trace import chrome_trace
    from ppverify.report.payload import canonical_ops, timeline_payload

    tl = _m011_timeline(m011)
    mem = timeline_payload(tl, canonical_ops(tl.schedule))["mem"]
    assert [max(values) for _, values in mem] == pytest.approx(PEAKS)
    counters = [e for e in chrome_trace(tl)["traceEvents"] if e.get("ph") == "C" and e["name"] == "memory"]
    assert [max(e["args"]["activations"] for e in counters if e["pid"] == d) for d in (0, 1)] == pytest.approx(PEAKS)


def test_an_even_placement_is_unchanged(capsys):
    # 1F1B p = 2, m = 2: device 0 holds both microbatches (p = 2 activations), device 1 one
    from ppverify.core.trace import chrome_trace
    from ppverify.engines import run
    from ppverify.report.payload import canonical_ops, timeline_payload
    from ppverify.schedules import build

    tl = run(build("1f1b", p=2, m=2), semantics="async")
    mem = timeline_payload(tl, canonical_ops(tl.schedule))["mem"]
    assert [max(values) for _, values in mem] == [2.0, 1.0]
    counters = [e for e in chrome_trace(tl)["traceEvents"] if e.get("ph") == "C" and e["name"] == "memory"]
    assert [max(e["args"]["activations"] for e in counters if e["pid"] == d) for d in (0, 1)] == [2.0, 1.0]
    argv = ["compare", "--schedules", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "async"]
    rows = _json(capsys, [*argv, "--json", "--no-progress"])["rows"]
    assert rows[0]["peak_activations"] == [2.0, 1.0]
