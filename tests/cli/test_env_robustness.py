"""The environment a user runs ppverify in (hunt E of session 63): a standard error that cannot be
written, a deleted current folder, a device given as a schedule, a bad ``PPVERIFY_WALL_FACTOR``,
and the C locale without Python's UTF-8 mode. ``verify --help``: "Exit code 0 valid, 1 invalid, 2
bad input"; cli/streams.py: a diagnostics channel that cannot be written changes no result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppverify.cli import main

PPV = [sys.executable, "-m", "ppverify"]
#: 1F1B with p=2, m=2 as PyTorch's CSV, by hand: rank 0 runs one warm-up forward (p - 1 - 0 = 1),
#: then F1 and the backwards in order; rank 1 alternates F and B. A UTF-8 byte-order mark in front
#: makes ppverify print its note (accepted, dropped) on stderr before the verdict
BOM_CSV = b"\xef\xbb\xbf0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"
#: the C locale without UTF-8 mode: Python decodes file names as ASCII with surrogateescape
C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}


@pytest.fixture
def bom_csv(tmp_path: Path) -> Path:
    path = tmp_path / "bom.csv"
    path.write_bytes(BOM_CSV)
    return path


def _run(args: list[str], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=None, cwd=None):
    env = {**os.environ, **(env or {})}
    return subprocess.run([*PPV, *args], stdout=stdout, stderr=stderr, env=env, cwd=cwd, timeout=300)


# ------------------------------------------------------------------ stderr that cannot be written


def test_a_valid_verdict_with_stderr_full_is_exit_0_on_stdout(bom_csv: Path) -> None:
    with open("/dev/full", "wb") as full:
        proc = _run(["verify", str(bom_csv)], stderr=full)
    # was exit 1 ("invalid") with nothing on stdout: the BOM note's write raised
    assert proc.returncode == 0
    assert proc.stdout.decode().startswith("VALID: bom.csv p=2 m=2 format=compute_only placement=linear\n")


def test_a_stderr_whose_reader_is_gone_keeps_the_verdict(bom_csv: Path, tmp_path: Path) -> None:
    # `ppverify verify bom.csv 2>&1 >verdict.txt | true`: stdout a file, stderr a pipe closed
    verdict = tmp_path / "verdict.txt"
    with open(verdict, "wb") as out:
        proc = subprocess.Popen([*PPV, "verify", str(bom_csv)], stdout=out, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        proc.stderr.close()  # the reader goes away before a byte is written
        code = proc.wait(timeout=300)
    assert code == 0  # was 141, with verdict.txt empty
    assert verdict.read_text().startswith("VALID: bom.csv p=2 m=2")


def test_a_missing_file_with_stderr_full_is_still_bad_input(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        proc = _run(["verify", str(tmp_path / "nonexist.csv")], stderr=full)
    assert proc.returncode == 2  # was 1, which reads as INVALID


def test_stdout_and_stderr_full_is_exit_2_as_documented() -> None:
    # docs/limits.md: a standard output that cannot be written is exit code 2
    with open("/dev/full", "wb") as full, open("/dev/full", "wb") as full2:
        proc = _run(["verify", "1f1b", "-p", "2", "-m", "2"], stdout=full, stderr=full2)
    assert proc.returncode == 2


def test_show_prints_its_output_with_stderr_full() -> None:
    # chimera's concatenated units print a note on stderr first (it raised, and show printed nothing)
    with open("/dev/full", "wb") as full:
        proc = _run(["show", "chimera", "-p", "4", "-m", "4", "--units", "concat", "--no-table"], stderr=full)
    assert proc.returncode == 0
    assert proc.stdout.decode().startswith("schedule      chimera p=4 m=4")


def test_optimize_saves_its_file_with_stderr_full(tmp_path: Path) -> None:
    saved = tmp_path / "fz2.json"
    with open("/dev/full", "wb") as full:
        proc = _run(["optimize", "-p", "2", "-m", "2", "--no-chart", "--progress", "--save", str(saved)], stderr=full)
    assert proc.returncode == 0
    assert saved.is_file()


def test_in_process_a_failing_stderr_changes_no_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    class Full:
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

        def flush(self) -> None:
            raise OSError(28, "No space left on device")

        def fileno(self) -> int:
            raise OSError("no descriptor")  # the guard's dup2 to /dev/null is skipped, not fatal

    full = Full()
    monkeypatch.setattr(sys, "stderr", full)
    # 1F1B's device 0 holds p = 8 activations at once: a cap of 1 is broken, INVALID (exit 1)
    assert main(["verify", "1f1b", "-p", "8", "-m", "16", "--memory-cap", "1"]) == 1
    assert main(["verify", "/nonexistent/s.json"]) == 2  # its error line is lost, its code is not
    assert main(["verify", "1f1b", "-p", "2", "-m", "2"]) == 0
    assert sys.stderr is full  # restored


# ------------------------------------------------------------------ a deleted current folder


def test_a_deleted_current_folder_is_one_line_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    rule = "cannot write there: the current folder no longer exists (give an absolute path)"
    assert main(["export", "1f1b", "-p", "2", "-m", "2", "-o", "x.csv"]) == 2  # was exit 3
    assert capsys.readouterr().err == f"ppverify export: error: parameter -o=x.csv: {rule}\n"
    design = ["design", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--budgets", "2", "--no-progress"]
    assert main([*design, "--save-dir", "sd"]) == 2  # was "it takes no new files"
    assert capsys.readouterr().err == f"ppverify design: error: parameter --save-dir=sd: {rule}\n"


# ------------------------------------------------------------------ a device or FIFO as a schedule


def test_a_device_or_fifo_without_extension_is_named_as_docs_files_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/files.md: "/dev/null: is a character device, not a regular file; only regular files are read"
    rule = "/dev/null: is a character device, not a regular file; only regular files are read"
    for command in ("verify", "simulate", "show", "export"):
        assert main([command, "/dev/null"]) == 2
        assert capsys.readouterr().err == f"ppverify {command}: error: {rule}\n"
    fifo = tmp_path / "in"
    os.mkfifo(fifo)
    assert main(["verify", str(fifo)]) == 2  # refused before it is opened: never blocks
    assert f"{fifo}: is a FIFO (named pipe), not a regular file" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.endswith("missing: file not found\n")


# ------------------------------------------------------------------ PPVERIFY_WALL_FACTOR


def test_a_bad_wall_factor_is_refused_before_any_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PPVERIFY_WALL_FACTOR", "abc")
    rule = "parameter PPVERIFY_WALL_FACTOR=abc: the environment variable must be a number in 1..1e6 (unset: 4)"
    compare = ["compare", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "optimum", "--no-progress"]
    assert main(compare) == 2  # was a table with an error row and exit 1
    captured = capsys.readouterr()
    assert captured.err == f"ppverify compare: error: {rule}\n" and captured.out == ""
    config = tmp_path / "s3.yaml"
    config.write_text(
        "name: t2\nschedules: [1f1b]\np: [2]\nm: [2]\nsystems: [ideal]\nmodels: [gpt3-1.3b]\nlevels: [optimum]\n"
    )
    assert main(["sweep", str(config), "--no-progress"]) == 2
    assert capsys.readouterr().err == f"ppverify sweep: error: {rule}\n"
    assert not (tmp_path / "s3.results.jsonl").exists()  # no error row kept for the next run


# ------------------------------------------------------------------ the C locale without UTF-8 mode


#: a name whose UTF-8 bytes are C3 A9 E6 97 A5 E6 9C AC 32 ...: Python in the C locale decodes them
#: as "\udcc3\udca9...", and the streams write those bytes back, not the text "\\udcc3..."
NAME = "é日本2.csv"


def test_c_locale_export_prints_the_name_as_its_bytes(tmp_path: Path) -> None:
    out = tmp_path / NAME
    proc = _run(["export", "1f1b", "-p", "2", "-m", "2", "-o", str(out)], env=C_LOCALE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b"wrote " + os.fsencode(str(out)) + b" (torch-csv, 1f1b p=2 m=2)\n"


def test_c_locale_verify_prints_the_name_as_its_bytes(tmp_path: Path) -> None:
    out = tmp_path / NAME
    out.write_bytes(BOM_CSV[3:])
    proc = _run(["verify", str(out)], env=C_LOCALE)
    assert proc.returncode == 0
    assert proc.stdout.startswith(b"VALID: " + NAME.encode("utf-8") + b" p=2 m=2")
    assert b"\\udc" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_c_locale_design_report_reads_its_svg_as_utf8(tmp_path: Path) -> None:
    # matplotlib writes the chart as UTF-8, its title comment holds "·" (C2 B7): read as ASCII it
    # failed after the whole search, with exit 2 and no page
    page = tmp_path / "d.html"
    args = ["design", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--budgets", "2", "--placements", "linear"]
    proc = _run([*args, "--no-progress", "--report", str(page)], env=C_LOCALE)
    assert proc.returncode == 0, proc.stderr
    assert "<svg" in page.read_text(encoding="utf-8")


@pytest.mark.slow
def test_c_locale_calibrate_from_a_non_ascii_trace_folder(tmp_path: Path) -> None:
    # the preset's comment names the trace's folder "tr é": written in the locale's ASCII it
    # failed (UnicodeEncodeError, exit 2); it is written as UTF-8, as load_system reads it
    import shutil

    root = Path(__file__).resolve().parents[2]
    trace = tmp_path / "tr é"
    shutil.copytree(root / "tests" / "data" / "traces" / "measure-1f1b-p2-m4", trace)
    out = tmp_path / "c.yaml"
    proc = _run(["calibrate", "--from-trace", str(trace), "--fit-steps", "1", "--out", str(out)], env=C_LOCALE)
    assert proc.returncode == 0, proc.stderr
    # the comment holds the folder's own bytes, C3 A9 for é: valid UTF-8, not "\udcc3\udca9"
    assert b"--from-trace " + os.fsencode(str(trace)) + b"`" in out.read_bytes()


def test_design_save_dir_is_named_with_its_dashes() -> None:
    # the library's own name for the option (as_typed adds no dashes to a value it cannot match)
    from ppverify.cli import build_parser
    from ppverify.core.errors import ParameterError
    from ppverify.design.options import check_options

    args = build_parser().parse_args(["design", "-p", "2", "-m", "2", "--save-dir", "/dev/null"])
    with pytest.raises(ParameterError) as err:
        check_options(args)
    assert (err.value.name, str(err.value)) == (
        "--save-dir",
        "parameter --save-dir=/dev/null: exists and is not a folder",
    )
