"""Every command that writes a file refuses, before its run, a folder that exists but takes no new
file (Linux's ``/proc``): the name passes every rule of its own, and only a write shows the folder
refuses it, which without the early probe happened after the whole run."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.cli import main

pytestmark = pytest.mark.skipif(
    not Path("/proc/self").is_dir(), reason="needs Linux's /proc, a folder no file can be made in"
)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["show", "1f1b", "-p", "2", "--save", "/proc/s.json"], "--save"),
        (["simulate", "1f1b", "-p", "2", "-m", "4", "--trace", "/proc/t.json"], "--trace"),
        (["simulate", "1f1b", "-p", "2", "-m", "4", "--frame", "/proc/t.csv"], "--frame"),
        (["compare", "--findings", "--map", "--quick", "--markdown", "/proc/m.md"], "--markdown"),
        (["plot", "1f1b", "-p", "2", "-m", "4", "-o", "/proc/t.png"], "-o"),
        (["optimize", "1f1b", "-p", "2", "-m", "4", "--save", "/proc/o.json"], "--save"),
        (["compare", "-p", "2", "-m", "4", "--out", "/proc/c.csv"], "--out"),
        (["design", "-p", "2", "-m", "2", "--budgets", "1", "--plot", "/proc/f.png"], "--plot"),
        (["design", "-p", "2", "-m", "2", "--budgets", "1", "--report", "/proc/f.html"], "--report"),
    ],
)
def test_a_folder_that_takes_no_file_is_refused_before_the_run(capsys, argv, option):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"parameter {option}=/proc/" in err
    assert "cannot write in its folder /proc" in err
    assert len(err.strip().splitlines()) == 1  # one line, no traceback


def test_sweep_refuses_such_a_folder_before_its_points(capsys, tmp_path):
    cfg = tmp_path / "sw.yaml"
    cfg.write_text("schedules: [gpipe]\np: [2]\nm: [2]\ncosts: {F: 1, B: 2}\nlevels: [slot]\n")
    assert main(["sweep", str(cfg), "--out", "/proc/sw.csv"]) == 2
    assert "parameter --out=/proc/sw.csv: cannot write in its folder /proc" in capsys.readouterr().err
