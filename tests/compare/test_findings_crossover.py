"""Crossings of makespan curves (where two schedules' order flips as latency or bandwidth varies),
the schedules a crossover leaves out, its x range, and the findings map's edge cases: no verdict,
one grid point, a store that names a folder."""

from __future__ import annotations

import pandas as pd
import pytest

from ppverify.cli import main
from ppverify.compare.config import Config, ScheduleEntry
from ppverify.compare.crossover import crossings, makespan_curves
from ppverify.compare.crossover_axis import parse_range
from ppverify.core.errors import ParameterError
from ppverify.findings_map import MapGrid, run_map, summarize
from ppverify.findings_map.boundary import Rule


def _frame(curves: dict[str, list[float]], xs: list[float]) -> pd.DataFrame:
    rows = [{"schedule": k, "x": x, "makespan": t} for k, ts in curves.items() for x, t in zip(xs, ts)]
    return pd.DataFrame(rows)


def test_a_crossing_through_a_tie_at_a_sample_is_found():
    # a = 1, 2, 3 and b = 2, 2, 2: a faster at x=0, equal at x=1, b faster at x=2, so the order
    # flips and the curves meet at x=1, inside the reported bracket [0, 2]
    assert crossings(_frame({"a": [1, 2, 3], "b": [2, 2, 2]}, [0, 1, 2])) == [("a", "b", 0.0, 2.0)]
    # two tied samples in a row: the bracket spans both (last strict order before, first after)
    assert crossings(_frame({"a": [1, 2, 2, 3], "b": [2, 2, 2, 2]}, [0, 1, 2, 3])) == [("a", "b", 0.0, 3.0)]


def test_a_tie_then_a_divergence_or_rounding_noise_is_no_crossing():
    # equal at x=0, a slower after: the order never flips (GPipe and 1F1B at c = 0)
    assert crossings(_frame({"a": [21, 23.5], "b": [21, 22.5]}, [0, 1])) == []
    # two equal schedules whose sums round differently (1e-16 relative): a tie, not a swap back and forth
    a, b = [1.0, 1.0 + 2e-16, 1.0], [1.0 + 2e-16, 1.0, 1.0 + 2e-16]
    assert crossings(_frame({"a": a, "b": b}, [0, 1, 2])) == []


def test_gpipe_and_1f1b_tied_at_zero_delay_never_cross():
    # p=4 m=4 F=1 B=2 under async with per-hop delay c: GPipe = (m+p-1)(tF+tB) + 2(p-1)c = 21 + 6c.
    # 1F1B adds a round trip per steady-state swap on top: 21 + 10c (21, 23.5, 26, 31 at c = 0, .25,
    # .5, 1 as tests/report/test_plots.py derives). GPipe is never slower: no crossing between them
    cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)))
    entries = [ScheduleEntry("gpipe", "gpipe"), ScheduleEntry("1f1b", "1f1b")]
    df = makespan_curves(entries, cfg, "latency", [0.0, 0.5, 1.0])
    wide = df.pivot_table(index="x", columns="schedule", values="makespan")
    assert wide["gpipe"].tolist() == pytest.approx([21, 24, 27])
    assert wide["1f1b"].tolist() == pytest.approx([21, 26, 31])
    assert crossings(df) == []


def test_a_schedule_outside_its_regime_is_left_out_with_a_note():
    # Hanayo runs at m = p only: at p=4 m=8 the crossover draws 1F1B alone and says why
    cfg = Config(4, 8, costs=(("F", 1.0), ("B", 2.0)))
    notes: list[str] = []
    entries = [ScheduleEntry("1f1b", "1f1b"), ScheduleEntry("hanayo-w1", "hanayo", (("waves", 1),), only_m_eq_p=True)]
    df = makespan_curves(entries, cfg, "latency", [0.0, 1.0], note=notes.append)
    assert set(df["schedule"]) == {"1f1b"}
    assert notes == ["left out hanayo-w1: evaluated in its regime m = p only"]


def test_no_applicable_schedule_names_each_and_why():
    # Chimera needs an even p; at p=3 nothing is left to draw
    cfg = Config(3, 3, costs=(("F", 1.0), ("B", 2.0)))
    with pytest.raises(ParameterError, match=r"schedules=chimera: none applies at p=3 m=3: chimera: .*even"):
        makespan_curves([ScheduleEntry("chimera", "chimera")], cfg, "latency", [0.0, 1.0])


def test_cli_crossover_leaves_out_what_does_not_apply(tmp_path, capsys):
    out = tmp_path / "c.png"
    argv = ["plot", "--crossover", "latency", "-p", "4", "-m", "8", "--schedules", "1f1b,hanayo", "-o", str(out)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "left out hanayo-w1: evaluated in its regime m = p only" in err and "hanayo-w2" in err
    argv = ["plot", "--crossover", "latency", "-p", "4", "-m", "8", "--schedules", "hanayo", "-o", str(out)]
    assert main(argv) == 2
    assert "none applies at p=4 m=8: hanayo-w1: evaluated in its regime m = p only" in capsys.readouterr().err


def test_cli_crossover_at_odd_p_draws_what_applies(tmp_path, capsys):
    # p=3: both Chimera placements need an even p; the other six default schedules still draw
    out = tmp_path / "c.png"
    assert main(["plot", "--crossover", "latency", "-p", "3", "-o", str(out), "--range", "0,1,3"]) == 0
    cap = capsys.readouterr()
    assert "6 schedules" in cap.out and "left out chimera:" in cap.err and "left out chimera-asym:" in cap.err


def test_a_range_with_a_fourth_number_is_refused():
    # "1,100,5,7": the 7 would be dropped unread
    with pytest.raises(ParameterError, match="range=1,100,5,7: expected LO,HI or LO,HI,N"):
        parse_range("1,100,5,7", (1.0, 10.0, 5))


def test_no_verdict_is_not_nowhere_and_one_point_is_one():
    assert "nowhere" not in Rule((), True, 0, 0).sentence("Chimera is faster than 1F1B")
    assert Rule((), True, 0, 0).sentence("") == (
        "no verdict at any grid point (the schedules it compares do not apply there)"
    )
    assert Rule((), True, 1, 1).sentence("X") == "X everywhere on the grid (its 1 grid point)"
    # every verdict None (Chimera at p=3): the summary has 0 points and says there is no verdict
    v = pd.DataFrame(
        {
            "finding": "chimera",
            "p": 3,
            "model": "x",
            "m_factor": [1, 2],
            "bandwidth_GBps": 900.0,
            "latency_us": 1.0,
            "params_B": 1.3,
            "holds": [None, None],
        }
    )
    f = summarize(v)[0]
    assert (f.holds, f.total) == (0, 0) and "no verdict at any grid point" in f.sentence


def test_one_value_axes_are_described_as_one_value():
    g = MapGrid(ps=(4,), m_factors=(1,), bandwidths_GBps=(900,), latencies_us=(1,), models=("gpt3-1.3b",))
    assert "bandwidth 900 GB/s," in g.describe() and g.describe().endswith(": 1 configuration")


def test_a_store_naming_a_folder_is_refused_before_presets_are_written(tmp_path):
    g = MapGrid(ps=(4,), m_factors=(1,), bandwidths_GBps=(900,), latencies_us=(1,), models=("gpt3-1.3b",))
    (tmp_path / "d").mkdir()
    with pytest.raises(ParameterError, match="--store"):
        run_map(g, str(tmp_path / "d") + "/")
    with pytest.raises(ParameterError, match="is a directory"):
        run_map(g, tmp_path / "d")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no d.systems/ left behind


def test_two_schedules_under_one_label_are_refused_not_merged(tmp_path, capsys):
    # a GPipe file named 1f1b.json is labelled "1f1b" like the 1F1B family: keyed by label, their
    # makespans (21 + 6c against 21 + 10c) would average into one line that is neither schedule
    path = tmp_path / "1f1b.json"
    assert main(["export", "gpipe", "-p", "4", "-m", "4", "-o", str(path)]) == 0
    capsys.readouterr()
    out = tmp_path / "c.png"
    argv = ["plot", "--crossover", "latency", "-p", "4", "--schedules", f"1f1b,{path}", "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "two different schedules are labelled '1f1b' (family 1f1b, file" in err and not out.exists()
    # the same entry twice (hanayo names hanayo-w1 too) is one curve
    argv = ["plot", "--crossover", "latency", "-p", "4", "--schedules", "hanayo,hanayo-w1", "-o", str(out)]
    assert main([*argv, "--range", "0,1,3"]) == 0
    assert "2 schedules" in capsys.readouterr().out
