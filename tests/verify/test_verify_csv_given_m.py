"""``verify FILE.csv -m N`` reads the file at the N given, as ``import`` does: with N above the
microbatches the file names, their ops are reported missing (INVALID, exit 1). It used to refuse the
``-m`` (exit 2) while ``import`` reported the ops, and a file missing microbatch 2 of 4 was INVALID
while one missing microbatch 3 of 4 was bad input. Commands that run the step (simulate, measure)
still refuse it, naming the ``verify`` command that lists the missing ops.
"""

from __future__ import annotations

import re

import pytest

from ppverify.cli import main

# GPipe over p = 2 ranks (stage s on rank s), microbatches 0..2
M3 = "0F0,0F1,0F2,0B0,0B1,0B2\n1F0,1F1,1F2,1B0,1B1,1B2\n"
# the same with microbatch 2 left out and microbatch 3 written instead
NO2 = "0F0,0F1,0F3,0B0,0B1,0B3\n1F0,1F1,1F3,1B0,1B1,1B3\n"


def _missing(out: str) -> set[str]:
    return set(re.findall(r"op (\S+) is missing", out))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "m3.csv").write_text(M3)
    (tmp_path / "no2.csv").write_text(NO2)
    return tmp_path


def test_verify_reads_an_m_above_the_file_and_names_the_missing_ops(files, capsys):
    # at m = 4 the step needs microbatch 3's F and B on both stages: 0F3, 0B3 (rank 0), 1F3, 1B3 (rank 1)
    code = main(["verify", str(files / "m3.csv"), "-m", "4"])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("INVALID: m3.csv p=2 m=4"), out
    assert _missing(out) == {"0F3", "0B3", "1F3", "1B3"}


def test_import_and_verify_agree(files, capsys):
    main(["verify", str(files / "m3.csv"), "-m", "4"])
    verified = _missing(capsys.readouterr().out)
    assert main(["import", str(files / "m3.csv"), "-m", "4"]) == 1
    assert _missing(capsys.readouterr().out) == verified


def test_a_missing_last_microbatch_is_invalid_as_a_missing_middle_one_is(files, capsys):
    # microbatch 2 of 4 missing (no2.csv) and microbatch 3 of 4 missing (m3.csv): the same verdict,
    # each naming its microbatch's four ops
    assert main(["verify", str(files / "no2.csv"), "-m", "4"]) == 1
    assert _missing(capsys.readouterr().out) == {"0F2", "0B2", "1F2", "1B2"}
    assert main(["verify", str(files / "m3.csv"), "-m", "4"]) == 1


def test_verify_at_the_files_own_m_is_valid(files, capsys):
    assert main(["verify", str(files / "m3.csv"), "-m", "3"]) == 0


def test_verify_still_refuses_a_p_the_file_does_not_hold(files, capsys):
    # the -m read above the file does not skip the other check of a file's options
    assert main(["verify", str(files / "m3.csv"), "-m", "4", "-p", "3"]) == 2
    assert "holds a schedule of p=2" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["simulate", "measure"])
def test_a_command_that_runs_the_step_refuses_it_naming_verify(files, capsys, command):
    path = files / "m3.csv"
    assert main([command, str(path), "-m", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "holds a schedule of m=3: leave -m out (the file decides), or give -m 3" in err
    assert "no cell names microbatch 3" in err
    assert f"`ppverify verify {path} -m 4` names its missing ops" in err
