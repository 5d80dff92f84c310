"""A PyTorch CSV that starts with a UTF-8 byte-order mark: accepted, with one note.

docs/limits.md promises the mark is accepted in every format, so ppverify reads past it. PyTorch's
loader (``_PipelineScheduleRuntime._load_csv``) opens the file as plain UTF-8: ``csv.reader`` hands
``_Action.from_str`` the first cell as ``'\\ufeff0F0'``, whose ``strip()`` keeps U+FEFF (it is no
whitespace), and the regex refuses it. A VALID without a word was a verdict on a file PyTorch cannot
load, so every command that reads such a CSV notes it once on stderr, naming the file and the
``ppverify export`` that writes it without the mark (docs/pytorch.md).
"""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.io.torch_interop import torch_available

BOM = b"\xef\xbb\xbf"
# 1F1B p=2 m=2 written by hand: rank 0 F0 F1 B0 B1 (stage 0), rank 1 F0 B0 F1 B1 (stage 1)
ROWS = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"
# the same step lowered with explicit SEND/RECV (the compute_comms flavour), each SEND right after
# its producer, each RECV right before its consumer, and each stage's REDUCE_GRAD after its last backward
COMMS = (
    "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
    "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n"
)


def _note(path) -> str:
    # the note docs/pytorch.md shows, for this file: PyTorch reads the first cell with the mark
    return (
        f"ppverify: note: {path}: starts with a UTF-8 byte-order mark, which ppverify skips but PyTorch's "
        "loader (_PipelineScheduleRuntime._load_csv) keeps: it reads the first cell as '\\ufeff0F0' and refuses "
        f"the file as it stands; `ppverify export {path} --format torch-csv -o OUT.csv` writes it without the mark"
    )


@pytest.mark.parametrize(
    "command", [["verify"], ["import", "--torch"], ["simulate", "--no-table"], ["show"], ["export"]]
)
def test_a_bom_csv_is_valid_with_one_note_naming_the_file(tmp_path, capsys, command):
    path = tmp_path / "bom.csv"
    path.write_bytes(BOM + ROWS.encode())
    argv = [command[0], str(path), *command[1:]]
    if command[0] == "export":
        argv += ["--format", "torch-csv", "-o", str(tmp_path / "out.csv")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0] == _note(path), err
    assert lines[1:] == (
        [f"wrote {tmp_path / 'out.csv'} (torch-csv, bom.csv p=2 m=2 format=compute_only placement=linear)"]
        if command[0] == "export"
        else []
    ), err  # one note, nothing more
    if command[0] == "verify":
        assert out.startswith("VALID: bom.csv p=2 m=2 format=compute_only placement=linear"), out
    if command[0] == "export":  # the file it names is the same rows without the mark
        assert (tmp_path / "out.csv").read_bytes() == ROWS.encode()


def test_a_bom_compute_comms_csv_names_the_comms_export(tmp_path, capsys):
    path = tmp_path / "bomc.csv"
    path.write_bytes(BOM + COMMS.encode())
    assert main(["verify", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("VALID: bomc.csv p=2 m=2 format=compute_comms placement=linear"), out
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"ppverify: note: {path}: starts with a UTF-8 byte-order mark"), err
    assert f"`ppverify export {path} --format torch-csv-comms -o OUT.csv`" in err, err
    # the export it names writes the cells back as they are, without the mark
    assert main(["export", str(path), "--format", "torch-csv-comms", "-o", str(tmp_path / "out.csv")]) == 0
    assert (tmp_path / "out.csv").read_bytes() == COMMS.encode()


@pytest.mark.parametrize("command", [["verify"], ["import", "--torch"], ["simulate", "--no-table"], ["show"]])
def test_a_csv_without_the_mark_gets_no_note(tmp_path, capsys, command):
    path = tmp_path / "plain.csv"
    path.write_bytes(ROWS.encode())
    assert main([command[0], str(path), *command[1:]]) == 0
    assert capsys.readouterr().err == ""


def test_a_bom_json_gets_no_note(tmp_path, capsys):
    # the note is about PyTorch's CSV loader: a ppverify JSON file with the mark is read without one
    assert main(["export", "1f1b", "-p", "2", "-m", "2", "-o", str(tmp_path / "s.json")]) == 0
    capsys.readouterr()
    (tmp_path / "b.json").write_bytes(BOM + (tmp_path / "s.json").read_bytes())
    assert main(["verify", str(tmp_path / "b.json")]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(not torch_available(), reason="needs torch")
def test_pytorch_refuses_the_bom_file_and_loads_the_export(tmp_path, capsys):
    from ppverify.io.torch_interop import torch_runtime_load

    path = tmp_path / "bom.csv"
    path.write_bytes(BOM + ROWS.encode())
    with pytest.raises(RuntimeError, match="Invalid action string: \ufeff0F0"):
        torch_runtime_load(str(path), 2, 2, 2, "compute_only")
    assert main(["export", str(path), "--format", "torch-csv", "-o", str(tmp_path / "out.csv")]) == 0
    assert torch_runtime_load(str(tmp_path / "out.csv"), 2, 2, 2, "compute_only")  # loads: the note holds
