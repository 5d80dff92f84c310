"""Every command that reads a schedule file reads it the same way: a text table with ``--placement``
(``simulate`` and ``plot`` refused the option; only ``verify`` and ``show`` took it), any file by
its content (``show y.txt`` of a PyTorch CSV said "not a table" while ``verify`` read it), and
``--placement`` refused in one line beside a schedule that carries its own."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.cli.common import ScheduleSource, add_schedule_arguments, build_schedule, read_document, schedule_source

# Chimera p=2 m=2 as PyTorch prints it at unit costs: microbatch 0 runs pipe 0 (stage 0 on rank 0,
# stage 1 on rank 1), microbatch 1 pipe 1 (stage 0 on rank 1, stage 1 on rank 0); linear would
# put 0F1 on rank 0
CHIMERA_2x2 = """\
        Rank 0 Rank 1
Step 0: 0F0    0F1
Step 1: 1F1    1F0
Step 2: 1B1    1B0
Step 3: 0B0    0B1
"""

# gpipe p=2 m=2 as a PyTorch compute_only CSV: rank 0 runs stage 0, rank 1 stage 1
GPIPE_CSV = "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n"


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0, argv
    return json.loads(capsys.readouterr().out)


def _one_line_error(capsys, argv: list[str], says: str) -> str:
    capsys.readouterr()
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err, err
    return err


def _makespan(capsys, command: str, schedule: str, *extra: str, tmp_path: Path) -> float:
    """The makespan ``command`` reports for ``schedule`` (each with its own JSON output)."""
    argv = [command, schedule, *extra, "--json"]
    if command == "plot":
        argv += ["-o", str(tmp_path / "g.svg")]
    return float(_json(capsys, argv)["makespan"])


@pytest.fixture
def chimera_txt(tmp_path: Path) -> Path:
    path = tmp_path / "chimera.txt"
    path.write_text(CHIMERA_2x2)
    return path


# Each device runs the F and B of one stage of each of the two microbatches: 4 ops. Unit costs:
# the microbatch's chain F s0, F s1, B s1, B s0 takes 4 and each device works 4, so both bounds
# meet at 4 = 2 (F + B). F=1, B=2: rank 0 runs 0F0 [0,1], 1F1 [1,2] (after 0F1 on rank 1 [0,1]),
# 1B1 [2,4], 0B0 [4,6] (after 1B0 on rank 1 [2,4]): 6 = 2 (F + B) again, no idle time.
@pytest.mark.parametrize("command", ["simulate", "plot", "show"])
@pytest.mark.parametrize("costs, expected", [("F=1,B=1", 4.0), ("F=1,B=2", 6.0)])
def test_a_two_pipe_table_times_as_its_family_by_hand(capsys, tmp_path, chimera_txt, command, costs, expected):
    table = _makespan(
        capsys, command, str(chimera_txt), "--placement", "bidirectional", "--costs", costs, tmp_path=tmp_path
    )
    family = _makespan(capsys, command, "chimera", "-p", "2", "-m", "2", "--costs", costs, tmp_path=tmp_path)
    assert table == family == expected


def test_verify_and_export_read_the_table_with_its_placement(capsys, tmp_path, chimera_txt):
    out = _json(capsys, ["verify", str(chimera_txt), "--placement", "bidirectional", "--json"])
    assert out["verdict"] == "VALID"
    saved = tmp_path / "c.json"
    assert main(["export", str(chimera_txt), "--placement", "bidirectional", "-o", str(saved)]) == 0
    maps = json.loads(saved.read_text())["placement"]["maps"]
    assert maps == [[0, 1], [1, 0]]  # pipe 1 runs the stages backwards: rank 1 first


def _torch_grid(capsys, family: str, p: int, m: int) -> str:
    """The step x rank grid ``show --style torch`` prints: how a user makes a text table."""
    capsys.readouterr()
    assert main(["show", family, "-p", str(p), "-m", str(m), "--style", "torch", "--width", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if "Rank 0" in line)
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    return "\n".join(lines[start:end]) + "\n"


def test_the_p4_table_times_as_the_family_and_its_json_export(capsys, tmp_path):
    # a cross-check between three loaders (family, text table, JSON) under the default costs
    # F=1, B=2, on the table show draws for chimera p=4 m=4 (B over two steps, `~` in the second)
    table = tmp_path / "x.txt"
    table.write_text(_torch_grid(capsys, "chimera", 4, 4))
    exported = tmp_path / "x.json"
    assert main(["export", "chimera", "-p", "4", "-m", "4", "-o", str(exported)]) == 0
    for command in ("simulate", "plot"):
        family = _makespan(capsys, command, "chimera", "-p", "4", "-m", "4", tmp_path=tmp_path)
        from_json = _makespan(capsys, command, str(exported), tmp_path=tmp_path)
        from_table = _makespan(capsys, command, str(table), "--placement", "bidirectional", tmp_path=tmp_path)
        assert from_table == family == from_json, command
    # show times a table one slot a cell unless told the costs it was drawn with
    show = _makespan(
        capsys, "show", str(table), "--placement", "bidirectional", "--costs", "F=1,B=2", tmp_path=tmp_path
    )
    assert show == _makespan(capsys, "show", "chimera", "-p", "4", "-m", "4", tmp_path=tmp_path)


@pytest.mark.parametrize("command", ["simulate", "plot", "show", "verify", "export", "measure", "gap", "optimize"])
def test_placement_is_refused_beside_a_schedule_that_carries_its_own(capsys, tmp_path, command):
    saved, csv = tmp_path / "s.json", tmp_path / "s.csv"
    assert main(["export", "gpipe", "-p", "2", "-m", "2", "-o", str(saved)]) == 0
    csv.write_text(GPIPE_CSV)
    extra = {"plot": ["-o", str(tmp_path / "g.svg")], "export": ["-o", str(tmp_path / "out.json")]}.get(command, [])
    cases = [
        ("gpipe", "gpipe is a family, which carries its own"),
        (str(saved), "s.json holds a ppverify JSON schedule, which carries its own"),
        (str(csv), f"s.csv holds a PyTorch pipelining CSV, placed as its rows show (`ppverify import {csv}"),
    ]
    for schedule, says in cases:
        err = _one_line_error(capsys, [command, schedule, "--placement", "v", *extra], says)
        assert "parameter --placement=v: only a text table (.txt) takes --placement" in err


def test_plot_crossover_and_import_trace_without_schedule_refuse_placement(capsys, tmp_path):
    argv = ["plot", "--crossover", "latency", "--placement", "v", "-o", str(tmp_path / "c.svg")]
    _one_line_error(capsys, argv, "parameter --placement=v: reads the text table of a Gantt chart's FILE")
    from ppverify.cli.commands import import_trace
    from ppverify.core.errors import ParameterError

    parser = argparse.ArgumentParser()
    import_trace.add_arguments(parser)
    with pytest.raises(ParameterError, match="reads the text table of --schedule"):
        import_trace.check_schedule_options(parser.parse_args(["traces/", "--placement", "v"]))


def test_import_trace_reads_its_schedule_table_with_the_placement(chimera_txt):
    from ppverify.cli.commands import import_trace

    parser = argparse.ArgumentParser()
    import_trace.add_arguments(parser)
    args = parser.parse_args(["traces/", "--schedule", str(chimera_txt), "--placement", "bidirectional"])
    assert build_schedule(schedule_source(args)).placement.maps == ((0, 1), (1, 0))


# ------------------------------------------------------------------------ files read by content


def test_show_reads_a_csv_named_txt_as_the_others_do(capsys, tmp_path):
    path = tmp_path / "y.txt"
    path.write_text(GPIPE_CSV)
    # GPipe p=2 m=2 under the default F=1, B=2: (m + p - 1)(F + B) = 3 * 3 = 9
    for command in ("show", "simulate"):
        out = _json(capsys, [command, str(path), "--json"])
        assert out["makespan"] == 9.0 and out["schedule"].startswith("y.txt p=2 m=2 format=compute_only"), command
    assert main(["verify", str(path)]) == 0
    assert read_document(ScheduleSource(str(path), 4, None))[1] == "csv"


def test_a_table_named_csv_and_json_named_txt_are_read_by_content(capsys, tmp_path):
    table = tmp_path / "t.csv"
    table.write_text(CHIMERA_2x2)
    out = _json(capsys, ["show", str(table), "--placement", "bidirectional", "--json"])
    # a text table: one unit slot per cell, so the 4 drawn steps take 4
    assert out["makespan"] == 4.0 and out["embedded_table"] == {"checked": True, "matches": True}
    saved = tmp_path / "s.json"
    assert main(["export", "gpipe", "-p", "2", "-m", "2", "-o", str(saved)]) == 0
    renamed = tmp_path / "s.txt"
    renamed.write_text(saved.read_text())
    assert _json(capsys, ["show", str(renamed), "--json"])["schedule"] == "gpipe p=2 m=2"
    _one_line_error(capsys, ["show", str(renamed), "--placement", "v"], "s.txt holds a ppverify JSON schedule")


# ----------------------------------------------------------------------------- import-trace --help


def test_import_trace_words_p_and_m_through_add_schedule_arguments(capsys):
    source = (Path(__file__).parents[2] / "ppverify/cli/commands/import_trace.py").read_text()
    assert "_actions" not in source  # argparse's private list is no longer rewritten
    assert main(["import-trace", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the help as words, whatever the terminal width
    assert "-p P ranks of --schedule (default: the trace's)" in text
    assert "-m M microbatches of --schedule (default: the trace's)" in text


def test_add_schedule_arguments_takes_the_help_of_p_and_m():
    parser = argparse.ArgumentParser()
    add_schedule_arguments(parser, p_help="ranks", m_help="steps")
    helps = {a.dest: a.help for a in parser._actions}  # reading argparse's list, as a test may
    assert helps["p"] == "ranks" and helps["m"] == "steps" and "placement" not in helps


def test_csv_beyond_m_names_its_cell(tmp_path, capsys):
    # rank 0 runs 0F0 0F1 0F3: read whole the file holds microbatches 0..3 (m=4); with -m 3 the
    # one cell naming microbatch 3 is row 1 (rank 0), column 3
    path = tmp_path / "z.csv"
    path.write_text("0F0,0F1,0F3,0B0,0B1,0B2\n1F0,1F1,1F2,1B0,1B1,1B2\n")
    assert main(["verify", str(path), "-m", "3"]) == 2
    err = capsys.readouterr().err
    assert "row 1 (rank 0), column 3: 0F3 names microbatch 3, outside the m=3 given" in err
    assert "the file holds m=4" in err
