"""What a schedule file stores about its timing reaches every command that times it, whatever
the file's name: a text table's op widths as drawn (``simulate``, ``verify``, ``import``, ``plot``
time it as ``show`` does), a ppverify JSON file's costs and communication under any name, and
``show`` charging a file's stored communication per column as ``simulate --semantics slot`` does.
"""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main

# GPipe p=2 m=2 drawn by hand at F = 2, B = 3 (every F two cells, every B three):
# dev 0: F0 0..2, F1 2..4; dev 1: F0 2..4, F1 4..6, B0 6..9, B1 9..12; dev 0: B0 9..12, B1 12..15.
# Makespan 15 = (m + p - 1)(tF + tB) = 3 * 5; the default F=1,B=2 would give 3 * 3 = 9.
PAPER = """\
tick    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14
dev 0 0F0 0F0 0F1 0F1   .   .   .   .   . 0B0 0B0 0B0 0B1 0B1 0B1
dev 1   .   . 1F0 1F0 1F1 1F1 1B0 1B0 1B0 1B1 1B1 1B1   .   .   .
"""
# the same table in PyTorch's step x rank grid (`~` continues the op above)
TORCH = """\
         Rank 0 Rank 1
Step 00: 0F0
Step 01: ~
Step 02: 0F1    1F0
Step 03: ~      ~
Step 04:        1F1
Step 05:        ~
Step 06:        1B0
Step 07:        ~
Step 08:        ~
Step 09: 0B0    1B1
Step 10: ~      ~
Step 11: ~      ~
Step 12: 0B1
Step 13: ~
Step 14: ~
"""


def _json(capsys, argv: list[str], code: int = 0) -> dict:
    assert main([*argv, "--json"]) == code
    out = capsys.readouterr().out
    return json.loads(out[out.index("{") :])


@pytest.fixture(params=["paper", "torch"])
def drawn(request, tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(PAPER if request.param == "paper" else TORCH)
    return str(path)


def test_a_text_table_is_timed_as_drawn_by_every_command(capsys, tmp_path, drawn):
    assert _json(capsys, ["show", drawn])["makespan"] == 15  # show read the widths already
    for semantics in ("async", "slot"):
        out = _json(capsys, ["simulate", drawn, "--semantics", semantics])
        assert out["makespan"] == 15 and out["costs"] == "F=2,B=3 (cells as drawn)"
    assert main(["simulate", drawn, "--no-table"]) == 0
    assert "costs         F=2,B=3 (cells as drawn)" in capsys.readouterr().out  # said, as show says it
    rep = _json(capsys, ["import", drawn])
    assert rep["slot"]["makespan"] == 15 and rep["costs"]["source"] == "the table's cells"
    plot = _json(capsys, ["plot", drawn, "-o", str(tmp_path / "g.svg")])
    assert plot["makespan"] == 15


def test_verify_claims_the_makespan_of_the_drawn_widths(capsys, drawn):
    # 15 as drawn: a claim of 15 holds, one of 14 does not (the default costs' 9 passed both)
    assert main(["verify", drawn, "--makespan-le", "15"]) == 0
    assert "under costs F=2,B=3 (cells as drawn)" in capsys.readouterr().out
    assert main(["verify", drawn, "--makespan-le", "14"]) == 1


def test_explicit_costs_still_win_over_the_drawing(capsys, drawn):
    # F = 1, B = 2 on the table's order: (m + p - 1)(tF + tB) = 3 * 3 (async drops the idle cells)
    out = _json(capsys, ["simulate", drawn, "--costs", "F=1,B=2"])
    assert out["makespan"] == 9 and out["costs"] == "F=1,B=2,I=1,W=1"
    assert _json(capsys, ["import", drawn, "--costs", "F=1,B=2"])["costs"]["source"] == "--costs"


@pytest.fixture
def saved(tmp_path, capsys):
    """1F1B p=2 m=2 saved with F = 1, B = 3 and a fixed delay of 1 per transfer."""
    path = tmp_path / "s.json"
    argv = ["show", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=3", "--comm-delay", "1"]
    assert main([*argv, "--save", str(path), "--no-table"]) == 0
    capsys.readouterr()
    return path


@pytest.mark.parametrize("name", ["s.txt", "s.csv", "s.table"])
def test_a_json_file_keeps_its_costs_and_comm_under_any_name(capsys, saved, name):
    # async, F=1, B=3, one unit per hop: dev 0 F0 0..1, F1 1..2; dev 1 F0 2..3, B0 3..6, F1 6..7,
    # B1 7..10; dev 0 B0 7..10, B1 11..14: makespan 14 (default costs without the delay: 3 * 3 = 9)
    other = saved.with_name(name)
    other.write_text(saved.read_text())
    for path in (saved, other):
        assert _json(capsys, ["simulate", str(path)])["makespan"] == 14
        assert main(["verify", str(path), "--makespan-le", "14"]) == 0
        assert main(["verify", str(path), "--makespan-le", "13"]) == 1
        capsys.readouterr()


@pytest.mark.parametrize("name", ["s.json", "s.txt", "sched", "s.sched"])
def test_import_reads_a_json_files_costs_and_comm_by_content(capsys, saved, name):
    # slot table, one unit per hop charged per column: every op of p = 2 has a cross-device
    # neighbour, so F' = 1 + 1, B' = 3 + 1 and (m + p - 1)(F' + B') = 3 * 6 = 18
    path = saved.with_name(name)
    path.write_text(saved.read_text())
    rep = _json(capsys, ["import", str(path)])
    assert rep["slot"]["makespan"] == 18
    assert rep["costs"]["source"] == "the file's" and rep["costs"]["comm_delay_per_column"] == 1.0


@pytest.fixture
def delay_file(tmp_path, capsys):
    """1F1B p=2 m=2 saved with F = 1, B = 2 and a stored fixed delay of 1 per transfer."""
    path = tmp_path / "d.json"
    argv = ["show", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--comm-delay", "1"]
    assert main([*argv, "--save", str(path), "--no-table"]) == 0
    capsys.readouterr()
    return path


def test_show_charges_the_files_stored_communication(capsys, delay_file):
    # slot table, 1F1B p=2 m=2, F=1, B=2, c=1 charged per column: every op has a cross-device
    # input or output, so F' = 2, B' = 3: dev 0 F0 0..2, F1 2..4; dev 1 F0 2..4, B0 4..7,
    # F1 7..9, B1 9..12; dev 0 B0 7..10, B1 12..15: makespan 15 = (m + p - 1)(tF + tB + 2c) = 3 * 5
    out = _json(capsys, ["show", str(delay_file)])
    assert out["makespan"] == 15 and out["comm_delay_per_column"] == 1.0 and out["comm_from_file"] is True
    assert _json(capsys, ["simulate", str(delay_file), "--semantics", "slot"])["makespan"] == 15
    # the default async engine times the hop as a delay instead: F0 0..1, 1F0 2..3, 1B0 3..5,
    # 1F1 5..6, 1B1 6..8, 0B0 6..8, 0B1 9..11: 11
    assert _json(capsys, ["simulate", str(delay_file)])["makespan"] == 11
    assert main(["show", str(delay_file), "--no-table"]) == 0
    text = capsys.readouterr().out
    assert "communication 1 charged per column (the file's)" in text
    assert "file's comm   fixed delay 1 per transfer, sync eager: charged per column" in text


def test_an_explicit_comm_delay_wins_in_show(capsys, delay_file):
    # --comm-delay 0: no communication, (m + p - 1)(tF + tB) = 3 * 3; --comm-delay 2: 3 * (1 + 2 + 4)
    out = _json(capsys, ["show", str(delay_file), "--comm-delay", "0"])
    assert out["makespan"] == 9 and out["comm_from_file"] is False
    assert _json(capsys, ["show", str(delay_file), "--comm-delay", "2"])["makespan"] == 21
    assert main(["show", str(delay_file), "--comm-delay", "0", "--no-table"]) == 0
    assert "sync eager: replaced by --comm-delay" in capsys.readouterr().out


def test_show_save_of_a_file_with_communication_keeps_it(capsys, delay_file, tmp_path):
    copy = tmp_path / "copy.json"
    assert main(["show", str(delay_file), "--save", str(copy), "--no-table"]) == 0
    stored = json.loads(copy.read_text())
    # the table drawn with communication charged is not the costs' table: left out, as with --comm-delay
    assert stored["comm"]["delay"] == 1 and "table" not in stored
    capsys.readouterr()
    assert _json(capsys, ["show", str(copy)])["makespan"] == 15  # the same 3 * 5 as the original
