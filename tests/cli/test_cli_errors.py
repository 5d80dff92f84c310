"""Bad input across commands: one line naming what is wrong and exit code 2, never a traceback."""

from __future__ import annotations

import json

from ppverify.cli import main

# Bad command lines (unknown names, values out of range, missing files) are one table:
# tests/core/test_limits.py::test_bad_command_lines_are_refused_at_once.


def test_malformed_json_file_names_file_and_location(tmp_path, capsys):
    f = tmp_path / "bad.json"
    f.write_text(
        json.dumps(
            {
                "format": "ppverify-schedule",
                "version": 1,
                "p": 1,
                "m": 1,
                "placement": {"maps": [[0]]},
                "pipe_of_mb": [0],
                "programs": [["0F0", "0X0"]],
            }
        )
    )
    assert main(["verify", str(f)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "'0X0' is not an action" in err


def test_unknown_file_format_lists_the_known_ones(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text("p: 2\n")
    assert main(["verify", str(f)]) == 2
    assert "unknown schedule format '.yaml'; expected one of .json, .csv, .txt" in capsys.readouterr().err


def test_text_table_files_work_in_every_command(tmp_path, capsys):
    # 1F1B p=2 m=2 at unit costs, written by hand in the paper layout
    f = tmp_path / "t.txt"
    f.write_text("tick    0   1   2   3   4   5\ndev 0 0F0 0F1   . 0B0   . 0B1\ndev 1   . 1F0 1B0 1F1 1B1   .\n")
    assert main(["verify", str(f)]) == 0
    assert main(["simulate", str(f), "--json"]) == 0
    out = capsys.readouterr().out
    # simulate times the table as drawn (every op one cell: tF = tB = 1): (m+p-1)(tF+tB) = 3 * 2
    assert json.loads(out[out.index("{") :])["makespan"] == 6
    assert main(["simulate", str(f), "--costs", "F=1,B=2", "--json"]) == 0
    out = capsys.readouterr().out
    # explicit --costs win over the drawing: tF = 1, tB = 2, (m+p-1)(tF+tB) = 3 * 3
    assert json.loads(out[out.index("{") :])["makespan"] == 9
