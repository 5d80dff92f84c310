"""Plots: Gantt charts (PNG/SVG) of slot and simulated timelines, makespan-vs-network curves and
their crossings, and the `ppverify plot` command."""

from __future__ import annotations

import json

import matplotlib.pyplot
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.compare import Config, ScheduleEntry
from ppverify.compare.crossover import crossings, makespan_curves
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.report.plots import crossover_plot, gantt
from ppverify.schedules import build

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_gantt_png_and_svg(tmp_path):
    s = build("1f1b", p=4, m=4)
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5), semantics="async")
    png = gantt(tl, tmp_path / "g.png")
    assert png.read_bytes()[:8] == PNG_MAGIC
    svg = gantt(tl, tmp_path / "g.svg").read_text()
    # title carries schedule, semantics and makespan; legend names every kind and the transfers
    assert "1f1b p=4 m=4" in svg and "async" in svg
    for word in ("forward", "backward", "gradient transfer", "activation transfer", "activations"):
        assert word in svg


def test_gantt_two_pipes_and_slot(tmp_path):
    s = build("chimera", p=4, m=4)
    svg = gantt(run(s, semantics="slot"), tmp_path / "c.svg").read_text()
    assert "pipe 1" in svg and "slot" in svg


def test_bad_output_extension(tmp_path):
    tl = run(build("gpipe", p=2, m=2), semantics="slot")
    with pytest.raises(ParameterError, match="png"):
        gantt(tl, tmp_path / "g.txt")


def test_curves_match_reference_numbers():
    # by hand: p=4, tF=1, tB=2, m=4: GPipe 21/22.5/24/27, 1F1B 21/23.5/26/31 for c = 0/0.25/0.5/1
    cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)))
    df = makespan_curves(
        [ScheduleEntry("gpipe", "gpipe"), ScheduleEntry("1f1b", "1f1b")], cfg, "latency", [0, 0.25, 0.5, 1.0], "async"
    )
    got = df.pivot_table(index="x", columns="schedule", values="makespan")
    assert got["gpipe"].tolist() == pytest.approx([21, 22.5, 24, 27])
    assert got["1f1b"].tolist() == pytest.approx([21, 23.5, 26, 31])
    assert crossings(df) == []  # a tie at c=0 and GPipe ahead after: no strict swap


def test_crossings_found_between_samples():
    df = pd.DataFrame({"schedule": ["a"] * 3 + ["b"] * 3, "x": [0, 1, 2] * 2, "makespan": [1, 2, 5, 2, 3, 3]})
    assert crossings(df) == [("a", "b", 1.0, 2.0)]


def test_crossover_plot_bandwidth_presets(tmp_path):
    cfg = Config(4, 4, "pcie-gen4", "gpt3-1.3b")
    df = makespan_curves(
        [ScheduleEntry("1f1b", "1f1b"), ScheduleEntry("hanayo-w1", "hanayo", (("waves", 1),))],
        cfg,
        "bandwidth",
        [1e9, 1e10, 1e11, 1e12],
    )
    # more bandwidth never slows a schedule down
    for _, g in df.groupby("schedule"):
        assert g.sort_values("x")["makespan"].is_monotonic_decreasing
    out = crossover_plot(df, "bandwidth", tmp_path / "b.png")
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_cli_plot_gantt_and_crossover(tmp_path, capsys):
    out = tmp_path / "g.png"
    assert (
        main(
            [
                "plot",
                "gpipe",
                "-p",
                "2",
                "-m",
                "2",
                "--costs",
                "F=1,B=2",
                "--comm-delay",
                "0.5",
                "-o",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    info = json.loads(capsys.readouterr().out)
    assert info["semantics"] == "async" and info["makespan"] == pytest.approx(3 * 3 + 2 * 0.5)  # (m+p-1)(tF+tB)+2(p-1)c
    assert out.read_bytes()[:8] == PNG_MAGIC
    out2 = tmp_path / "c.svg"
    assert (
        main(
            [
                "plot",
                "--crossover",
                "latency",
                "-p",
                "4",
                "--costs",
                "F=1,B=2",
                "--schedules",
                "gpipe,1f1b",
                "--range",
                "0,1,5",
                "-o",
                str(out2),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["crossings"] == []
    assert out2.read_text().startswith("<?xml")


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["gpipe", "-o", "x.txt"], ".png"),
        (["-o", "x.png"], "FAMILY|FILE"),
        (["--crossover", "bandwidth", "--costs", "F=1", "-o", "x.png"], "latency"),
        (["--crossover", "latency", "--range", "5,1", "-o", "x.png"], "LO < HI"),
    ],
)
def test_cli_plot_bad_input(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["plot", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


@settings(max_examples=8, deadline=None)  # each example draws and saves a PNG: about a second
@given(
    st.floats(0.5, 4.0),  # log10 of how far the x values span
    st.floats(1.01, 100.0),  # how far the makespans span (ratio of largest to smallest)
)
def test_crossover_axes_turn_logarithmic_past_a_decade(tmp_path_factory, x_decades, y_ratio):
    # two schedules whose makespans grow with the latency from 1 to y_ratio: a log axis exactly
    # where the values span more than a factor of ten, on x and y alike
    xs = np.logspace(-6, -6 + x_decades, 5)
    ys = np.linspace(1.0, y_ratio, 5)
    df = pd.DataFrame(
        {
            "schedule": ["a"] * 5 + ["b"] * 5,
            "x": list(xs) * 2,
            "makespan": list(ys) + [ys.mean()] * 5,
            "time_unit": "s",
        }
    )
    figures = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("ppverify.report.plots.plt.close", figures.append)
        crossover_plot(df, "latency", tmp_path_factory.mktemp("c") / "c.png")
    ax = figures[-1].axes[0]
    spread = max(max(ys), ys.mean()) / min(min(ys), ys.mean())
    assert ax.get_xscale() == ("log" if 10**x_decades > 10 else "linear")
    assert ax.get_yscale() == ("log" if spread > 10 else "linear")
    matplotlib.pyplot.close(figures[-1])


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["1f1b", "--crossover", "latency"], "schedule=1f1b: --crossover draws the schedules of --schedules"),
        (["--crossover", "latency", "--comm-delay", "1"], "--crossover sweeps the per-hop delay itself"),
        (["--crossover", "latency", "--v", "3"], "v=3: --v shapes a FAMILY's Gantt chart"),
        (["--crossover", "latency", "--waves", "2"], "waves=2: --waves shapes a FAMILY's Gantt chart"),
        (["1f1b", "--schedules", "gpipe"], "schedules=gpipe: --schedules applies with --crossover"),
        (["1f1b", "--range", "0,1"], "range=0,1: --range applies with --crossover"),
    ],
)
def test_plot_refuses_an_option_its_drawing_would_ignore(tmp_path, capsys, extra, needle):
    out = tmp_path / "x.png"
    assert main(["plot", *extra, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]
    assert not out.exists()


def test_a_failed_image_write_names_the_option_the_path_came_from(tmp_path, monkeypatch, capsys):
    # the disk fills while import-trace --plot writes: the error named --output, an option
    # import-trace does not have; it names --plot now (the image was written through a temporary file, so no
    # half image is left either)
    from matplotlib.figure import Figure

    from ppverify.cli import main

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    out = tmp_path / "g.png"
    from pathlib import Path

    traces = Path(__file__).resolve().parents[1] / "data" / "traces" / "measure-1f1b-p2-m4"
    assert main(["import-trace", str(traces), "--plot", str(out)]) == 2
    err = capsys.readouterr().err
    assert "parameter --plot=" in err and "No space left on device" in err and "--output" not in err
    assert list(tmp_path.iterdir()) == []


def test_crossover_json_names_the_config_without_the_swept_value_and_crossings_in_range_units(tmp_path, capsys):
    # abstract p=2 m=2 with the default costs F=1,B=2: the config line said "c=0", while the
    # per-hop delay c is what the x axis varies
    out = tmp_path / "c.png"
    argv = ["plot", "--crossover", "latency", "-p", "2", "-m", "2", "--schedules", "gpipe,1f1b", "-o", str(out)]
    assert main([*argv, "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["config"] == "p=2 m=2 F=1,B=2" and js["axis"] == "latency" and js["unit"] == "units"
    # with presets the latency runs over --range's µs: 1, 10, 100 µs sampled, so a crossing lies
    # between two of those numbers, not between 1e-6 and 1e-5 seconds
    argv = ["plot", "--crossover", "latency", "-p", "4", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main([*argv, "--schedules", "1f1b,chimera-asym", "--range", "1,10000,5", "-o", str(out), "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["unit"] == "us" and js["config"].endswith(", latency varied")
    samples = {1.0, 10.0, 100.0, 1000.0, 10000.0}
    assert js["crossings"] and all(set(c["between"]) <= samples for c in js["crossings"])


def test_a_tie_is_banded_as_a_tie_not_as_the_first_name():
    # p=2 m=2, F=1,B=2, delay c per hop, by hand: GPipe ends at 9 + 2c (dev 0's last B starts
    # after dev 1's two Bs and the hop back) and 1F1B at 9 + 2c too (dev 1 runs F0 B0 F1 B1): equal
    # at every c, so the band said "fastest: 1f1b" by the order of the columns
    from ppverify.report.plots import _fastest

    entries = [ScheduleEntry("gpipe", "gpipe"), ScheduleEntry("1f1b", "1f1b")]
    curves = makespan_curves(entries, Config(2, 2, costs=(("F", 1.0), ("B", 2.0))), "latency", [0.0, 1.0])
    wide = curves.pivot_table(index="x", columns="schedule", values="makespan")
    assert wide.loc[0.0].tolist() == [9.0, 9.0] and wide.loc[1.0].tolist() == [11.0, 11.0]
    assert [_fastest(wide.loc[x]) for x in (0.0, 1.0)] == [("1f1b", "gpipe")] * 2


@pytest.mark.parametrize(
    "family, expected",
    [
        # zb-h1 splits every backward into I and W: no B op, so no "B backward" entry
        ("zb-h1", ["F forward", "I input-grad", "W weight-grad"]),
        # 1f1b runs whole backwards only
        ("1f1b", ["F forward", "B backward"]),
    ],
)
def test_gantt_legend_lists_only_the_kinds_the_schedule_runs(tmp_path, family, expected):
    tl = run(build(family, p=2, m=2), semantics="async")
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text kept as text, so the legend is readable
        out = gantt(tl, tmp_path / "g.svg", memory=False)
    svg = out.read_text()
    for name in ("F forward", "B backward", "I input-grad", "W weight-grad"):
        assert (name in svg) == (name in expected), name


def test_gantt_memory_axis_names_its_unit_once(tmp_path):
    # abstract costs count memory in activations: the axis says so once, not "activations (activations)"
    tl = run(build("1f1b", p=2, m=2), semantics="async")
    assert tl.costs.memory_unit.startswith("activation")
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        svg = gantt(tl, tmp_path / "g.svg").read_text()
    assert "(activations)" not in svg and "activations" in svg
