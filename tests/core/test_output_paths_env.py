"""Output paths in an unusual environment (hunt E of session 63): a deleted current folder, a
dangling symbolic link, names near the 255-byte limit, a virtual folder, and bytes of a file name
Python could not decode. Each is one line naming the option, never an internal error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ppverify.core.errors import ParameterError
from ppverify.core.files import (
    atomic_write,
    check_output_folder,
    check_output_path,
    decoded_name,
    output_target,
    prepare_output_dir,
    temporary_name,
)
from ppverify.report.plots import check_plot_path

#: the message of a relative output name once the current folder is gone (report E, defect 1)
GONE = "cannot write there: the current folder no longer exists (give an absolute path)"


@pytest.fixture
def in_deleted_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's current folder, deleted (``cd gone && rmdir ../gone``)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(FileNotFoundError):
        os.getcwd()
    return tmp_path


def test_a_relative_output_in_a_deleted_folder_is_one_line(in_deleted_folder: Path) -> None:
    with pytest.raises(ParameterError) as err:
        output_target("x.csv", "-o")
    assert str(err.value) == f"parameter -o=x.csv: {GONE}"
    with pytest.raises(ParameterError, match="parameter --save=y.json: cannot write there: the current folder"):
        check_output_path("y.json", "--save", json_file=True)
    # design --save-dir said "it takes no new files" of a folder that is not virtual at all
    with pytest.raises(ParameterError) as err:
        prepare_output_dir("sd", "--save-dir")
    assert str(err.value) == f"parameter --save-dir=sd: {GONE}"


def test_an_absolute_output_needs_no_current_folder(in_deleted_folder: Path) -> None:
    out = in_deleted_folder / "abs.csv"
    atomic_write(out, "a\n")
    assert out.read_text() == "a\n"


def test_a_dangling_link_names_the_folder_it_points_into_in_every_writer(tmp_path: Path) -> None:
    # dang.json -> nowhere/x.json: tmp_path exists, tmp_path/nowhere does not
    (tmp_path / "dang.json").symlink_to("nowhere/x.json")
    (tmp_path / "dangling.png").symlink_to("nowhere/x.png")
    words = f"the link points into {tmp_path / 'nowhere'}, which does not exist"
    for check in (check_output_path, check_output_folder):
        with pytest.raises(ParameterError) as err:
            check(str(tmp_path / "dang.json"), "--save")
        assert str(err.value).endswith(f": {words}"), str(err.value)
    with pytest.raises(ParameterError) as err:
        check_plot_path(str(tmp_path / "dangling.png"), "-o")
    assert str(err.value).endswith(f": {words}")
    with pytest.raises(ParameterError) as err:  # export's write, with no check before it
        atomic_write(str(tmp_path / "dang.json"), "{}", "-o")
    assert str(err.value).endswith(f": cannot write there: {words}")
    assert not (tmp_path / "nowhere").exists()


def test_a_missing_folder_is_still_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/files.md: "parameter --out=missing/rows.csv: folder missing does not exist"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError) as err:
        check_output_path("missing/rows.csv", "--out")
    assert str(err.value) == "parameter --out=missing/rows.csv: folder missing does not exist"
    with pytest.raises(ParameterError) as err:
        atomic_write("missing/rows.csv", "", "--out")
    assert str(err.value) == "parameter --out=missing/rows.csv: cannot write there: folder missing does not exist"


def test_a_file_of_a_virtual_folder_is_not_called_missing() -> None:
    # /proc/version exists; /proc makes no new file (the temporary name): not "No such file"
    with pytest.raises(ParameterError) as err:
        atomic_write("/proc/version", "x", "-o")
    assert str(err.value) == "parameter -o=/proc/version: cannot write there: its folder /proc takes no new files"


def test_names_up_to_255_bytes_are_written(tmp_path: Path) -> None:
    # NAME_MAX is 255 bytes: 251 d's + ".csv" = 255 bytes is a legal name; the old temporary name
    # ".{name}.{8 hex}.tmp.csv" was 255 + 1 + 1 + 8 + 4 + 4 = 273 bytes, refused by the system
    name = "d" * 251 + ".csv"
    assert len(os.fsencode(name)) == 255
    out = atomic_write(tmp_path / name, "a,b\n")
    assert out.read_text() == "a,b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary left
    # ".ppverify-" (10) + 8 hex + ".tmp" (4) + ".csv" (4) = 26 bytes, whatever the name's length
    assert len(temporary_name(tmp_path / name)) == 26
    # a "suffix" longer than a format's extension is part of the name: dropped, not copied
    assert temporary_name(Path("a." + "x" * 200)).endswith(".tmp")


def test_a_name_over_255_bytes_is_still_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="cannot write there: File name too long"):
        atomic_write(tmp_path / ("d" * 252 + ".csv"), "", "-o")


def test_optimize_save_names_its_own_option(tmp_path: Path) -> None:
    # the write after the solve failed naming -o, an option optimize does not have
    from ppverify.core.comm import FixedDelay
    from ppverify.core.costs import CostModel
    from ppverify.core.placement import linear
    from ppverify.optimize import optimize
    from ppverify.optimize.request import Request, build_problem, save_result

    pl = linear(2)
    pr, _ = build_problem(pl, 2, (0, 0), CostModel.abstract(pl, F=1, B=2), FixedDelay(0), Request())
    res = optimize(pr, time_limit=10)
    with pytest.raises(ParameterError) as err:
        save_result(res, pr, str(tmp_path / "gone" / "best.json"))
    assert err.value.name == "--save"
    assert str(err.value).endswith(f": cannot write there: folder {tmp_path / 'gone'} does not exist")


def test_the_bytes_of_an_undecoded_name_are_written_as_utf8(tmp_path: Path) -> None:
    # in the C locale Python decodes the name é (UTF-8 bytes C3 A9) as "\udcc3\udca9": a text
    # file holding the name gets the bytes C3 A9 back, valid UTF-8, not a backslash escape
    assert decoded_name("tr \udcc3\udca9") == "tr é"
    assert decoded_name("caf\udce9") == "caf\\xe9"  # E9 alone is no UTF-8: escaped, still UTF-8 text
    out = atomic_write(tmp_path / "c.yaml", "# --from-trace tr \udcc3\udca9\n")
    assert out.read_bytes() == b"# --from-trace tr \xc3\xa9\n"


def test_the_findings_map_rewrites_a_system_file_that_is_not_utf8(tmp_path: Path) -> None:
    # the map compares each system file with the text it would write; a file that is not UTF-8
    # (whatever the locale) is rewritten, never a UnicodeDecodeError
    from ppverify.findings_map.grid import QUICK_GRID, system_yaml, write_systems

    first, (bw, lat) = next(iter(write_systems(QUICK_GRID, tmp_path).items()))
    Path(first).write_bytes(b"\xff not a system\n")
    write_systems(QUICK_GRID, tmp_path)
    assert Path(first).read_text(encoding="utf-8") == system_yaml(bw, lat)
