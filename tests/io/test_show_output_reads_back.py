"""``ppverify show ... > t.txt`` reads back as a table (docs/getting-started.md: ``.txt`` is "a
table as ``show`` prints it"): show's own lines around the table are left out, and only those.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ppverify.core.errors import ScheduleFileError
from ppverify.core.ops import compute_ops
from ppverify.io.table_text import read_text_table, shown_placement, table_of_show
from ppverify.schedules import build


def _ppverify(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ppverify", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("style", ["paper", "torch"])
def test_show_then_verify_round_trips(tmp_path: Path, style: str):
    shown = _ppverify("show", "1f1b", "-p", "3", "-m", "3", "--style", style, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    (tmp_path / "t.txt").write_text(shown.stdout)
    out = _ppverify("verify", "t.txt", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("VALID: table p=3 m=3 file=t.txt")
    # the programs read back are 1F1B's own, op for op (idle slots aside)
    programs, _ = read_text_table(shown.stdout)
    want = build("1f1b", p=3, m=3).programs
    assert [list(compute_ops(p)) for p in programs] == [list(p) for p in want]


def test_a_wrapped_wide_table_reads_back(tmp_path: Path):
    # p=8 m=16 at F=1, B=2: (m + p - 1)(F + B) = 69 ticks, wider than 100 columns: blocks
    shown = _ppverify("show", "1f1b", "-p", "8", "-m", "16", "--width", "100", cwd=tmp_path).stdout
    assert shown.count("\ntick ") >= 2
    programs, grid = read_text_table(shown)
    assert grid.ticks == 69
    assert [list(compute_ops(p)) for p in programs] == [list(p) for p in build("1f1b", p=8, m=16).programs]


def test_only_shows_own_lines_are_left_out():
    table = "tick 0 1\ndev 0 0F0 0B0"
    head = "schedule      gpipe p=1 m=1\nplacement     linear\ncosts         unit\n\n"
    # show's header and everything from its makespan line on go; the line numbers stay
    assert table_of_show(head + table + "\n\nmakespan      2 units\nbubble ratio  0").splitlines() == [
        "",
        "",
        "",
        "",
        "tick 0 1",
        "dev 0 0F0 0B0",
    ]
    # not show's layout: kept as written (a misspelt label, a missing costs line, other text)
    for text in (
        "schedule     gpipe p=1 m=1\nplacement     linear\ncosts         unit\n\n" + table,
        "schedule      gpipe p=1 m=1\nplacement     linear\n\n" + table,
        "schedule      gpipe\nmy notes here\ncosts         unit\n\n" + table,
        table,
    ):
        assert table_of_show(text) == text


def test_errors_keep_the_files_line_numbers():
    # lines: 1 schedule, 2 placement, 3 costs, 4 blank, 5 tick, 6 dev 0, 7 dev 1 (a typo: 1X0)
    text = (
        "schedule      1f1b p=2 m=1\nplacement     linear\ncosts         unit\n\n"
        "tick 0 1 2 3\ndev 0 0F0 . . 0B0\ndev 1 . 1X0 1B0 .\n\nmakespan      4 units\n"
    )
    with pytest.raises(ScheduleFileError, match=r"t\.txt: line 7"):
        read_text_table(text, "t.txt")


def test_show_without_its_table_is_refused_in_one_line(tmp_path: Path):
    shown = _ppverify("show", "1f1b", "-p", "2", "-m", "2", "--no-table", cwd=tmp_path).stdout
    (tmp_path / "n.txt").write_text(shown)
    out = _ppverify("verify", "n.txt", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "ppverify verify: error: n.txt: line 1: ppverify show's output without its table (--no-table): no table to read"
    ]


def test_a_two_pipe_table_reads_back_on_the_placement_show_printed(tmp_path: Path):
    shown = _ppverify("show", "chimera", "-p", "4", "-m", "4", "--style", "torch", cwd=tmp_path).stdout
    (tmp_path / "c.txt").write_text(shown)
    # Chimera p=4: the down pipe holds stages 0..3 on devices 0..3, the up pipe on 3..0
    pl = shown_placement(shown)
    assert pl is not None and (pl.name, pl.maps) == ("bidirectional", ((0, 1, 2, 3), (3, 2, 1, 0)))
    out = _ppverify("verify", "c.txt", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("VALID: table p=4 m=4 file=c.txt"), out.stdout
    # a given --placement still wins: linear puts the up pipe's ops on the wrong devices
    out = _ppverify("verify", "c.txt", "--placement", "linear", cwd=tmp_path)
    assert out.returncode == 1 and "VIOLATED placement" in out.stdout


def test_a_placement_line_that_does_not_read_whole_is_not_guessed():
    head = "schedule      x p=2 m=1\n{}\ncosts         unit\n\ntick 0\ndev 0 0F0\ndev 1 1F0\n"
    # three stages named, two devices mapped: the line contradicts itself
    bad = "placement     linear, 1 pipe, 3 stages on 2 devices (device of each stage, pipe 0: 0 1)"
    assert shown_placement(head.format(bad)) is None
    # a device beyond p
    bad = "placement     linear, 1 pipe, 2 stages on 2 devices (device of each stage, pipe 0: 0 2)"
    assert shown_placement(head.format(bad)) is None


def test_import_reads_shows_output_as_a_table(tmp_path):
    # `import` reads an unrecognised file as a CSV: show's first line ("schedule      1f1b ...")
    # must tell it that this is a table, as the other commands read it
    import subprocess
    import sys

    shown = subprocess.run(
        [sys.executable, "-m", "ppverify", "show", "1f1b", "-p", "3", "-m", "3"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (tmp_path / "t.txt").write_text(shown)
    out = subprocess.run(
        [sys.executable, "-m", "ppverify", "import", "t.txt"], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    # 1F1B p = 3, m = 3: F and B of 3 microbatches on 3 stages, 18 compute ops
    assert "18 compute ops" in out.stdout


def test_a_drawn_dualpipe_is_timed_as_the_family(tmp_path):
    # DualPipe's overlapped slots give no length of their own; the kinds drawn alone (F 1, B 2,
    # I 1, W 1 cells) time the file as the family's default costs do
    import json
    import subprocess
    import sys

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "ppverify", *args], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout

    (tmp_path / "dp.txt").write_text(run("show", "dualpipe", "-p", "4", "-m", "8"))
    family = json.loads(run("simulate", "dualpipe", "-p", "4", "-m", "8", "--json"))["makespan"]
    drawn = json.loads(run("simulate", "dp.txt", "--json"))
    assert drawn["makespan"] == family
    assert "cells as drawn" in run("simulate", "dp.txt", "--no-table")
