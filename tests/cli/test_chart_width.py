"""``--width`` sets the timeline chart's columns: checked (1..10000) before any work, and refused
beside an option that prints no chart, rather than ignored."""

import pytest

from ppverify.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "1f1b", "-p", "2", "-m", "2"],
        ["optimize", "1f1b", "-p", "2", "-m", "2"],
        ["measure", "1f1b", "-p", "2", "-m", "2"],
        ["import-trace", "no-such-dir"],
    ],
)
@pytest.mark.parametrize("width", ["0", "-3", "10001"])
def test_width_out_of_range_is_refused_before_any_work(argv, width, capsys):
    # import-trace would say its folder is missing if the width were checked after reading it
    assert main([*argv, "--width", width]) == 2
    assert f"parameter --width={width}: must be in 1..10000 columns" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["simulate", "1f1b", "-p", "2", "-m", "2"], "--json"),
        (["simulate", "1f1b", "-p", "2", "-m", "2"], "--no-table"),
        (["optimize", "1f1b", "-p", "2", "-m", "2"], "--no-chart"),
        (["optimize", "1f1b", "-p", "2", "-m", "2"], "--json"),
        (["measure", "1f1b", "-p", "2", "-m", "2"], "--json"),
        (["measure", "1f1b", "-p", "2", "-m", "2"], "--no-table"),
        (["import-trace", "no-such-dir"], "--no-table"),
    ],
)
def test_width_without_a_chart_is_refused(argv, flag, capsys):
    assert main([*argv, flag, "--width", "40"]) == 2
    assert f"{flag} prints no chart: drop --width" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--json", "--no-table"])
def test_show_width_without_a_table_is_refused(flag, capsys):
    assert main(["show", "1f1b", "-p", "2", "-m", "2", flag, "--width", "40"]) == 2
    assert f"{flag} prints no table: drop --width" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["simulate", "optimize"])
@pytest.mark.parametrize("width", [30, 57])
def test_width_sets_the_chart_rows(command, width, capsys):
    assert main([command, "1f1b", "-p", "2", "-m", "2", "--width", str(width)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("dev ") and "|" not in line]
    chart = [r for r in rows if set(r[7:]) <= set("FBIW.")]
    assert len(chart) == 2 and {len(r) - len("dev 0  ") for r in chart} == {width}
