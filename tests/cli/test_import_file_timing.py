"""``ppverify import`` times the slot table with a file's own cost model and ``--comm-delay``, as
``show`` does, says which costs it used, and prints every pipe's stage -> rank map."""

from __future__ import annotations

import json

from ppverify.cli import main

# 1F1B at p = 4, m = 4 as PyTorch's compute_only CSV: rank r runs p - 1 - r warm-up forwards, then
# alternates one forward and one backward, then drains its backwards
ONE_F_ONE_B = [
    "0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3",
    "1F0,1F1,1F2,1B0,1F3,1B1,1B2,1B3",
    "2F0,2F1,2B0,2F2,2B1,2F3,2B2,2B3",
    "3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3",
]


def import_json(capsys, *args: str) -> dict:
    code = main(["import", *args, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == (0 if out["valid"] else 1)
    return out


def test_a_json_files_own_costs_time_the_table(capsys, tmp_path):
    path = tmp_path / "c13.json"
    assert main(["show", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=3", "--save", str(path), "--no-table"]) == 0
    capsys.readouterr()
    rep = import_json(capsys, str(path))
    # 1F1B with the file's F = 1, B = 3: (m + p - 1)(tF + tB) = 3 * 4 = 12 (the default F=1,B=2 gave 3 * 3 = 9)
    assert rep["slot"]["makespan"] == 12
    assert rep["costs"]["source"] == "the file's" and rep["costs"]["label"].startswith("F=1,B=3")
    # --costs replaces the file's: (2 + 2 - 1)(1 + 1) = 6
    rep = import_json(capsys, str(path), "--costs", "F=1,B=1")
    assert rep["slot"]["makespan"] == 6 and rep["costs"]["source"] == "--costs"
    assert main(["import", str(path)]) == 0
    out = capsys.readouterr().out
    assert "costs         F=1,B=3,I=1.5,W=1.5 (the file's)" in out
    assert "slot table    makespan 12 units" in out


def test_comm_delay_is_charged_per_column_as_show_charges_it(capsys, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("\n".join(ONE_F_ONE_B) + "\n")
    # without communication: (m + p - 1)(tF + tB) = 7 * 3 = 21 at the default F = 1, B = 2
    assert import_json(capsys, str(path))["slot"]["makespan"] == 21
    # every op of a pipeline of p > 1 has one cross-device neighbour per column: (m + p - 1)(tF + tB + 2c) = 7 * 5
    rep = import_json(capsys, str(path), "--comm-delay", "1")
    assert rep["slot"]["makespan"] == 35
    assert rep["costs"]["comm_delay_per_column"] == 1.0 and rep["costs"]["source"] == "default"
    assert main(["show", str(path), "--comm-delay", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan"] == 35  # the same number in both commands
    assert main(["import", str(path), "--comm-delay", "1"]) == 0
    assert "comm 1 per cross-device op (--comm-delay)" in capsys.readouterr().out


def test_a_negative_comm_delay_is_refused_in_one_line(capsys, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("\n".join(ONE_F_ONE_B) + "\n")
    assert main(["import", str(path), "--comm-delay", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "comm-delay" in err and "Traceback" not in err


def test_every_pipe_of_a_two_pipe_file_is_printed(capsys, tmp_path):
    path = tmp_path / "chimera.json"
    assert main(["show", "chimera", "-p", "4", "-m", "4", "--save", str(path), "--no-table"]) == 0
    capsys.readouterr()
    rep = import_json(capsys, str(path))
    # Chimera (Li & Hoefler SC'21): the down pipeline runs stage s on device s, the up one on p - 1 - s
    assert rep["placement"]["maps"] == [[0, 1, 2, 3], [3, 2, 1, 0]]
    main(["import", str(path)])
    out = capsys.readouterr().out
    assert "stage -> rank pipe 0 [0, 1, 2, 3], pipe 1 [3, 2, 1, 0]" in out
