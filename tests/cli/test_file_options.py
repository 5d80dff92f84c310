"""A schedule file carries its schedule: ``-p``, ``-m`` and family options it would ignore are
refused in one line by every command that reads one (they were silently ignored: ``show s.json -p
8`` showed the file's p = 4 schedule)."""

from __future__ import annotations

import pytest

from ppverify.cli import main


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("files")
    assert main(["show", "1f1b", "-p", "4", "-m", "4", "--save", str(d / "s.json"), "--no-table"]) == 0
    assert main(["export", "1f1b", "-p", "4", "-m", "4", "-o", str(d / "s.csv")]) == 0
    return d


@pytest.mark.parametrize("command", ["show", "simulate", "verify", "export", "gap", "optimize"])
@pytest.mark.parametrize(
    "extra, says",
    [
        (["-p", "8"], "holds a schedule of p=4: leave -p out"),
        (["-m", "6"], "holds a schedule of m=4: leave -m out"),
        (["--v", "2"], "--v shapes a family"),
        (["--waves", "2"], "--waves shapes a family"),
    ],
)
def test_an_option_a_file_ignores_is_refused(saved, capsys, command, extra, says):
    for name in ("s.json", "s.csv"):
        if (command, name, extra) == ("verify", "s.csv", ["-m", "6"]):
            # verify reads a CSV at an -m above its own count and reports the missing ops (INVALID),
            # as import does: tests/verify/test_verify_csv_given_m.py
            continue
        capsys.readouterr()
        argv = [command, str(saved / name), *extra]
        if command == "export":
            argv += ["-o", str(saved / "out.json")]
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err, err


def test_the_files_own_p_and_m_pass(saved, capsys):
    assert main(["show", str(saved / "s.json"), "-p", "4", "-m", "4", "--no-table"]) == 0
    assert main(["verify", str(saved / "s.csv"), "-p", "4"]) == 0


def test_a_text_table_still_reads_m_and_its_placement_options(tmp_path, capsys):
    grid = tmp_path / "grid.txt"
    grid.write_text(
        "        Rank 0 Rank 1\nStep 0: 0F0\nStep 1: 0F1    1F0\nStep 2:        1B0\n"
        "Step 3: 0B0    1F1\nStep 4:        1B1\nStep 5: 0B1\n"
    )
    assert main(["show", str(grid), "-m", "2", "--no-table"]) == 0
    assert main(["show", str(grid), "-p", "3"]) == 2
    assert "holds a schedule of p=2" in capsys.readouterr().err


def test_output_names_are_checked_before_the_run_and_named_as_given(tmp_path, capsys, monkeypatch):
    # measure --plot x.txt ran the whole job and then failed as "output"; compare --report named
    # itself "output" too; report -o named itself "report"
    import ppverify.measure as measure_pkg

    monkeypatch.setattr(measure_pkg, "measure_many", lambda *a, **k: pytest.fail("ran before refusing"))
    cases = [
        (["measure", "1f1b", "-p", "2", "--plot", "x.txt"], "parameter --plot=x.txt: expected a file ending in .png"),
        (["compare", "--schedules", "1f1b", "-p", "2", "-m", "2", "--report", "x.txt"], "parameter --report=x.txt"),
        (["report", "--schedules", "1f1b", "-p", "2", "-m", "2", "-o", "x.txt"], "parameter -o=x.txt"),
    ]
    for argv, says in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err, err
