"""The findings map: boundaries in words (fit on hand-made grids), the --quick map against direct
evaluations of its points, the sentence against the grid, resuming, and the CLI."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.findings_map import (
    QUICK_GRID,
    SUBJECTS,
    MapGrid,
    bandwidth_ranges,
    run_map,
    system_yaml,
    write_systems,
)
from ppverify.findings_map.boundary import MAP_AXES, fit_rule

M_AX, BW_AX = MAP_AXES[0], MAP_AXES[1]
BWS = (1.0, 10.0, 25.0, 100.0, 900.0)
MS = (1, 2, 4, 8)


def _grid(pred) -> pd.DataFrame:
    g = pd.DataFrame([(m, bw) for m in MS for bw in BWS], columns=["m_factor", "bandwidth_GBps"])
    g["holds"] = [bool(pred(m, bw)) for m, bw in zip(g.m_factor, g.bandwidth_GBps)]
    return g


def test_rule_recovers_a_rectangle_written_by_hand():
    g = _grid(lambda m, bw: m <= 2 and bw >= 25)
    r = fit_rule(g, axes=(M_AX, BW_AX))
    assert r.exact and r.holds_inside
    assert (
        r.sentence("Chimera is faster than 1F1B")
        == "Chimera is faster than 1F1B when m ≤ 2p and bandwidth ≥ 25 GB/s (all 20 grid points agree)"
    )


def test_rule_states_the_complement_with_unless():
    # fails only in the corner m >= 4, bandwidth <= 10: "holds unless ..."
    g = _grid(lambda m, bw: not (m >= 4 and bw <= 10))
    r = fit_rule(g, axes=(M_AX, BW_AX))
    assert r.exact and not r.holds_inside
    assert r.sentence("X") == "X unless m ≥ 4p and bandwidth ≤ 10 GB/s (all 20 grid points agree)"


def test_rule_says_how_many_points_disagree():
    # a checkerboard cell breaks any two-condition rule: 19 of 20 at best (by hand: the rectangle
    # m <= 2, bw >= 25 plus one stray point)
    g = _grid(lambda m, bw: (m <= 2 and bw >= 25) or (m == 8 and bw == 1))
    r = fit_rule(g, axes=(M_AX, BW_AX))
    assert (r.matched, r.total) == (19, 20)
    assert r.sentence("X").endswith("(19 of 20 grid points agree)")


@settings(max_examples=40, deadline=None)
@given(mi=st.integers(0, len(MS) - 1), bi=st.integers(0, len(BWS) - 1), m_le=st.booleans(), bw_ge=st.booleans())
def test_rule_reproduces_any_two_threshold_region(mi, bi, m_le, bw_ge):
    """Any region cut by one threshold on m and one on bandwidth is found exactly."""
    mt, bt = MS[mi], BWS[bi]
    g = _grid(lambda m, bw: (m <= mt if m_le else m >= mt) and (bw >= bt if bw_ge else bw <= bt))
    r = fit_rule(g, axes=(M_AX, BW_AX))
    assert r.exact
    assert r.predict(g).tolist() == g["holds"].tolist()


def test_system_yaml_times_a_transfer_as_latency_plus_bytes_over_bandwidth(tmp_path):
    from ppverify.systems.system import load_system

    path = tmp_path / "l.yaml"
    path.write_text(system_yaml(25, 10))
    s = load_system(str(path))
    # 10 us + 1e9 B / 25e9 B/s = 0.04001 s; every rank on its own node
    assert s.transfer_time(0, 1, 1e9) == pytest.approx(10e-6 + 1e9 / 25e9, rel=1e-12)
    assert s.node_of(3) == 3


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    store = tmp_path_factory.mktemp("map") / "q.results.jsonl"
    return run_map(QUICK_GRID, store, workers=1), store


def _direct(path: str, model: str, p: int, m: int, family: str, **kw) -> tuple[float, float]:
    """Makespan and global activation peak of one schedule under the async engine, computed here
    without the sweep: the map's system file, the model preset, MFU 0.4."""
    from ppverify.cli.presets_args import preset_context_from_args
    from ppverify.engines import run
    from ppverify.schedules import build

    s = build(family, p, m, **kw)
    ctx = preset_context_from_args(argparse.Namespace(system=path, model=model, mfu=0.4), s)
    tl = run(s, ctx.costs, ctx.comm, semantics="async")
    return tl.makespan, max(tl.peak_memory())


@pytest.mark.parametrize(
    "p,m,bw,lat,model",
    [(4, 4, 900, 1, "gpt3-1.3b"), (4, 4, 1, 100, "gpt3-1.3b"), (8, 32, 25, 1, "gpt3-175b"), (8, 8, 1, 1, "gpt3-175b")],
)
def test_map_verdicts_agree_with_direct_evaluations(quick, p, m, bw, lat, model):
    res, store = quick
    path = next(k for k, v in write_systems(QUICK_GRID, store.parent / "q.systems").items() if v == (bw, lat))
    t1, _ = _direct(path, model, p, m, "1f1b")
    tg, _ = _direct(path, model, p, m, "gpipe")
    tc, pc = _direct(path, model, p, m, "chimera")
    ta, pa = _direct(path, model, p, m, "chimera-asym")
    v = res.verdicts
    at = v[(v.p == p) & (v.m == m) & (v.bandwidth_GBps == bw) & (v.latency_us == lat) & (v.model == model)]
    got = dict(zip(at.finding, at.holds))
    assert got["chimera"] == (tc < t1)
    margin = dict(zip(at.finding, at.margin))
    assert margin["chimera"] == pytest.approx(1 - tc / t1, rel=1e-9)
    assert got["gpipe-1f1b"] == (abs(tg - t1) <= 0.01 * min(tg, t1))  # 1F1B's lower peak holds at every point
    gain = 1 - ta / tc
    assert got["chimera-asym"] == (pa >= pc * (1 - 1e-9) and gain <= 0.05 and (p <= 4 or gain <= 1e-9))
    if m == p:
        layers = {"gpt3-1.3b": 24, "gpt3-175b": 96}[model]  # Hanayo needs 2 W p stages, at most one layer each
        th = [_direct(path, model, p, m, "hanayo", waves=w)[0] for w in (1, 2) if 2 * w * p <= layers]
        assert got["hanayo"] == (min(th) < t1)
    else:
        assert "hanayo" not in got  # outside Hanayo's regime m = p


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=len(MS) * len(BWS), max_size=len(MS) * len(BWS)))
def test_a_rule_never_overclaims_nor_hinges_on_one_interior_value(cells):
    """Any verdict grid: "everywhere" only when every point holds, no interval of one inner value."""
    g = _grid(lambda m, bw: False)
    g["holds"] = cells
    r = fit_rule(g, axes=(M_AX, BW_AX))
    text = r.sentence("X")
    assert ("everywhere" in text) == all(cells) and ("nowhere" in text) == (not any(cells))
    assert " = 10 GB/s" not in text and " = 25 GB/s" not in text and " = 2p" not in text and " = 4p" not in text
    # what the sentence counts is recomputed from the grid
    assert r.matched == int(np.sum(r.predict(g) == g["holds"].to_numpy()))


def test_boundary_sentences_are_consistent_with_the_grid(quick):
    res, _ = quick
    assert [f.key for f in res.findings] == list(SUBJECTS)
    for f in res.findings:
        v = res.verdicts[(res.verdicts.finding == f.key) & res.verdicts.holds.notna()]
        assert (f.holds, f.total) == (int(v.holds.astype(bool).sum()), len(v))
        # the agreement the sentence states is the rule's agreement recomputed over the grid
        agree = int(np.sum(f.rule.predict(v) == v.holds.astype(bool).to_numpy()))
        assert agree == f.rule.matched
        if f.rule.conditions:
            assert (
                f"all {agree} grid points agree" if agree == len(v) else f"{agree} of {len(v)} grid points agree"
            ) in f.sentence
        else:  # no boundary: where it holds, counted; never "everywhere" with a point against it
            assert ("everywhere" in f.sentence) == (f.holds == len(v))
            assert f"{f.holds} of {len(v)} grid points" in f.sentence or f.holds in (0, len(v))
        for c in f.rule.conditions:  # thresholds are values of the grid
            assert c.value in set(v[c.axis.column].astype(float))
        for p, model, r in f.local:
            g = v[(v.p == p) & (v.model == model)]
            assert int(np.sum(r.predict(g) == g.holds.astype(bool).to_numpy())) == r.matched


def test_bandwidth_ranges_read_the_grid_column_by_column(quick):
    res, _ = quick
    t = bandwidth_ranges(res.verdicts, "chimera", 1.0)
    v = res.verdicts[(res.verdicts.finding == "chimera") & (res.verdicts.latency_us == 1.0)]
    for row in t.to_dict("records"):
        for k in QUICK_GRID.m_factors:
            col = "m = p" if k == 1 else f"m = {k}p"
            g = v[(v.p == row["p"]) & (v.model == row["model"]) & (v.m_factor == k)].sort_values("bandwidth_GBps")
            holding = g[g.holds == True].bandwidth_GBps.tolist()  # noqa: E712
            cell = row[col]
            if cell == "all":
                assert len(holding) == len(g)
            elif cell == "none":
                assert holding == []
            elif cell.startswith(">= ") and "," not in cell:
                assert holding == [b for b in g.bandwidth_GBps if b >= float(cell[3:])]


def test_margin_table_is_the_median_of_the_points(quick):
    from ppverify.findings_map import margin_table

    res, _ = quick
    v = res.verdicts
    sel = v[(v.finding == "chimera") & (v.p == 4) & (v.m_factor == 4) & (v.bandwidth_GBps >= 100)]
    assert margin_table(v, "chimera").set_index("p").at[4, "m = 4p"] == round(100 * float(np.median(sel.margin)), 1)


def test_a_rerun_resumes_without_recomputing(quick):
    res, store = quick
    lines = len(Path(store).read_text().splitlines())
    again = run_map(QUICK_GRID, store, workers=1)
    assert len(Path(store).read_text().splitlines()) == lines
    assert again.verdicts.equals(res.verdicts)


def test_cli_map_writes_plots_markdown_and_json(tmp_path, capsys, monkeypatch):
    import ppverify.findings_map as fm

    store, plots, md = tmp_path / "s.jsonl", tmp_path / "img", tmp_path / "map.md"
    # the smallest grid: the CLI path, not the numbers, is under test here
    monkeypatch.setattr(
        fm,
        "QUICK_GRID",
        MapGrid(ps=(4,), m_factors=(1,), bandwidths_GBps=(1, 900), latencies_us=(1,), models=("gpt3-1.3b",)),
    )
    code = main(
        [
            "compare",
            "--findings",
            "--map",
            "--quick",
            "--store",
            str(store),
            "--plots",
            str(plots),
            "--markdown",
            str(md),
            "--workers",
            "1",
            "--no-progress",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["key"] for f in data["findings"]] == list(SUBJECTS)
    assert sorted(p.name for p in plots.iterdir()) == sorted(f"findings-map-{k}.png" for k in SUBJECTS)
    text = md.read_text()
    for f in data["findings"]:
        assert f["boundary"][:1].upper() + f["boundary"][1:] in text
    assert "](img/findings-map-chimera.png)" in text


def test_cli_map_needs_findings(capsys):
    assert main(["compare", "--map", "--quick"]) == 2
    assert "--findings --map" in capsys.readouterr().err


def test_cli_map_refuses_a_selection_it_would_ignore(capsys):
    assert main(["compare", "--findings", "--map", "--quick", "-p", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "parameter -p=4" in err[0] and "own grid" in err[0]


@pytest.mark.parametrize(
    "option",
    [["--quick"], ["--store", "s.jsonl"], ["--plots", "maps"], ["--markdown", "m.md"], ["--executor", "local"]]
    + [["--workers", "2"], ["--batch", "3"]],
)
@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_map_option_without_the_map_is_refused_not_ignored(tmp_path, capsys, monkeypatch, command, option):
    monkeypatch.chdir(tmp_path)
    argv = [command, "-p", "2", "-m", "2", "--costs", "F=1", "--levels", "slot", "--no-progress", *option]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{option[0]} belongs to the findings map" in err[0] and "give --findings --map" in err[0]
    assert list(tmp_path.iterdir()) == []  # nothing ran, nothing written


def test_the_map_writes_no_report_page_and_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "--findings", "--map", "--quick", "--report", "r.html"]) == 2
    err = capsys.readouterr().err
    assert "parameter --report=r.html: the findings map writes plots and Markdown, not a report page" in err
    assert "report --findings-map DIR" in err
    assert main(["report", "--findings", "--map", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "the findings map is not a report page" in err and "report --findings-map DIR" in err
    assert list(tmp_path.iterdir()) == []


def test_the_maps_outputs_are_checked_before_it_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("taken").write_text("")
    assert main(["compare", "--findings", "--map", "--quick", "--markdown", "missing/m.md"]) == 2
    assert "--markdown=missing/m.md: folder missing does not exist" in capsys.readouterr().err
    assert main(["compare", "--findings", "--map", "--quick", "--plots", "taken"]) == 2
    assert "--plots=taken: exists and is not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # no store: the map never ran
