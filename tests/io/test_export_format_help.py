"""``export --help`` promised torch-csv for any -o name but .json, while ``-o s.txt`` is refused
asking for --format; ``plot -o ''`` told to leave out an option that is required."""

from __future__ import annotations

import pytest

from ppverify.cli import build_parser, main


def _help(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # argparse has no public lookup
    return " ".join(sub.choices[command].format_help().split())


def test_help_names_the_names_that_pick_a_format():
    text = _help("export")
    assert "json for an -o name ending in .json, torch-csv for .csv or standard output" in text
    assert "another -o name needs --format" in text


def test_behaviour_matches_the_help(tmp_path, capsys):
    # as the help says: .csv -> torch-csv (1F1B p=2 m=2 has 2 rows, one per rank), .json -> JSON,
    # another name -> refused until --format is given
    assert main(["export", "1f1b", "-p", "2", "-m", "2", "-o", str(tmp_path / "s.csv")]) == 0
    assert (tmp_path / "s.csv").read_text().splitlines()[0] == "0F0,0F1,0B0,0B1"
    assert main(["export", "1f1b", "-p", "2", "-m", "2", "-o", str(tmp_path / "s.json")]) == 0
    assert '"ppverify-schedule"' in (tmp_path / "s.json").read_text()
    capsys.readouterr()
    assert main(["export", "1f1b", "-p", "2", "-o", str(tmp_path / "s.txt")]) == 2
    assert "give --format" in capsys.readouterr().err
    assert main(["export", "1f1b", "-p", "2", "-o", str(tmp_path / "s.txt"), "--format", "torch-csv"]) == 0


@pytest.mark.parametrize("value", ["", " "])
def test_plot_empty_output_is_required(capsys, value):
    capsys.readouterr()
    assert main(["plot", "1f1b", "-o", value]) == 2
    err = capsys.readouterr().err
    assert "the option is required" in err and "leave the option out" not in err
